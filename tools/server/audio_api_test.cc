#include "tools/server/audio_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "tools/server/testing/test_server.h"

namespace gemlet::server {
namespace audio_api_test {

using testing::TestServer;

const char* kTranscriptions = "/v1/audio/transcriptions";

// A multipart body with these fields; `file` (when given) as a part named file.
struct Form {
  std::vector<std::pair<std::string, std::string>> fields;
  std::optional<std::string> file;
  std::string body() const {
    std::string b;
    for (const auto& [k, v] : fields) b += "--XyZ\r\nContent-Disposition: form-data; name=\"" + k + "\"\r\n\r\n" + v + "\r\n";
    if (file) {
      b += "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
           "Content-Type: audio/wav\r\n\r\n" + *file + "\r\n";
    }
    return b + "--XyZ--\r\n";
  }
};
constexpr const char* kType = "multipart/form-data; boundary=XyZ";

// The 400's error param and message.
std::pair<std::string, std::string> Error400(const httplib::Result& r) {
  if (!r) return {"<no response>", ""};
  EXPECT_EQ(r->status, 400) << r->body;
  Json j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("error")) return {"<not an error>", r->body};
  const Json& e = j["error"];
  return {e["param"].is_string() ? e["param"].get<std::string>() : "", e["message"].get<std::string>()};
}

TEST(AudioApi, FormErrorsNameTheField) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  struct Case {
    Form form;
    std::string param, says;
  } cases[] = {
      {{{{"model", "m"}}, std::nullopt}, "file", "'file' is required"},
      {{{{"model", "m"}}, std::string()}, "file", "'file' is empty"},
      {{{{"response_format", "xml"}}, "RIFF"}, "response_format", "xml"},
      {{{{"temperature", "hot"}}, "RIFF"}, "temperature", "between 0 and 2"},
      {{{{"temperature", "3"}}, "RIFF"}, "temperature", "between 0 and 2"},
      {{{{"max_tokens", "0"}}, "RIFF"}, "max_tokens", "between 1 and 8192"},
      {{{{"timestamp_granularities[]", "word"}}, "RIFF"}, "timestamp_granularities", "'segment' only"},
      {{{{"stream", "true"}}, "RIFF"}, "stream", "not supported"},
      // Everything right, but the fake model has no audio tower.
      {{{{"model", "m"}, {"response_format", "srt"}}, "RIFF"}, "file", "no audio tower"},
  };
  for (const Case& k : cases) {
    auto [param, message] = Error400(c.Post(kTranscriptions, k.form.body(), kType));
    EXPECT_EQ(param, k.param) << message;
    EXPECT_NE(message.find(k.says), std::string::npos) << message;
  }
  // Not a multipart body at all; a multipart body that is cut off; too many parts.
  EXPECT_NE(Error400(c.Post(kTranscriptions, R"({"file": "x"})", "application/json")).second.find("multipart/form-data"),
            std::string::npos);
  EXPECT_FALSE(Error400(c.Post("/v1/audio/translations", "--XyZ\r\nContent-Disposition: form-data; name=\"file\"",
                               kType)).second.empty());
  Form many;
  for (int i = 0; i < 65; ++i) many.fields.emplace_back("f" + std::to_string(i), "x");
  EXPECT_NE(Error400(c.Post(kTranscriptions, many.body(), kType)).second.find("64 parts"), std::string::npos);
  many.fields.pop_back();  // 64 parts are fine (and the file is missing)
  EXPECT_EQ(Error400(c.Post(kTranscriptions, many.body(), kType)).first, "file");
  // GET is not a method of the route.
  auto get = c.Get(kTranscriptions);
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  // Chat's input_audio on a model without an audio tower... the fake model reads text only;
  // its parts still parse, and bad base64 is a 400 naming the part.
  auto bad = c.Post("/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"@@","format":"wav"}}]}]})",
                    "application/json");
  EXPECT_EQ(Error400(bad).first, "messages[0].content[0].input_audio");
}

TEST(AudioApi, UploadsHaveTheirOwnLimit) {
  HttpOptions h;
  h.max_body_bytes = 64 << 10;
  h.max_upload_bytes = 1 << 20;
  TestServer s({}, h);
  httplib::Client c("127.0.0.1", s.port);
  Form f{{{"model", "m"}}, std::string(256 << 10, 'a')};  // over the body limit, under the upload limit
  // Read whole: the fake model's missing audio tower is the answer, not a 413.
  EXPECT_NE(Error400(c.Post(kTranscriptions, f.body(), kType)).second.find("no audio tower"), std::string::npos);
  auto chat = c.Post("/v1/chat/completions", f.body(), "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 413);
  f.file = std::string(2 << 20, 'a');
  httplib::Client c2("127.0.0.1", s.port);
  auto big = c2.Post(kTranscriptions, f.body(), kType);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(big->body.find("1048576"), std::string::npos) << big->body;
}

}  // namespace audio_api_test
}  // namespace gemlet::server
