#include "tools/server/image_fetch.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

namespace gemlet::server {
namespace image_fetch_test {

// A loopback HTTP server with an image, a redirect to it, a large file and a 404.
class Origin {
 public:
  Origin() {
    server_.Get("/img.png", [](const httplib::Request&, httplib::Response& r) {
      r.set_content(std::string("\x89PNG-bytes", 10), "image/png");
    });
    server_.Get("/moved", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("/img.png"); });
    server_.Get("/big", [](const httplib::Request&, httplib::Response& r) {
      r.set_content(std::string(4096, 'x'), "image/png");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 10000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Origin() {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ImageFetch, FetchesWithinTheLimits) {
  if (!ImageFetchAvailable()) GTEST_SKIP() << "built without libcurl: image URLs are refused";
  Origin origin;
  auto got = FetchImage(origin.Url("/img.png"), "messages[0].content[0]");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(std::string(got->begin(), got->end()), std::string("\x89PNG-bytes", 10));
  got = FetchImage(origin.Url("/moved"), "p");  // a redirect is followed
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 10u);

  ImageFetchOptions small;
  small.max_bytes = 1000;
  for (const auto& [url, want] : std::vector<std::pair<std::string, std::string>>{
           {origin.Url("/big"), "larger than 1000 bytes"},
           {origin.Url("/missing"), "HTTP 404"},
           {"ftp://127.0.0.1/x.png", "only http(s)"},
           {"http://127.0.0.1:1/x.png", "cannot fetch"}}) {
    auto e = FetchImage(url, "messages[1].content[2]", small);
    ASSERT_FALSE(e.ok()) << url;
    EXPECT_NE(e.status().message().find("messages[1].content[2]"), std::string::npos) << e.status().message();
    EXPECT_NE(e.status().message().find(want), std::string::npos) << e.status().message();
  }
}

}  // namespace image_fetch_test
}  // namespace gemlet::server
