// Runs the whole HTTP server on a loopback port with the fake model (tests only).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "tools/server/api_handlers.h"
#include "tools/server/http_server.h"
#include "tools/server/testing/fake_model.h"

namespace gemlet::server::testing {

class TestServer {
 public:
  explicit TestServer(SchedulerOptions sopt = {}, HttpOptions hopt = {},
                      HandlerOptions aopt = {}, RequestLog* log = nullptr) {
    model = std::make_unique<FakeChatModel>(backend);
    scheduler = std::make_unique<Scheduler>(backend, metrics, sopt);
    aopt.keepalive = std::chrono::milliseconds(200);
    handlers = std::make_unique<ApiHandlers>(*model, *scheduler, metrics, aopt);
    hopt.port = 0;
    hopt.host = "127.0.0.1";
    http = std::make_unique<HttpServer>(*handlers, metrics, hopt, log);
    Status st = http->Bind();
    if (!st.ok()) std::abort();
    port = http->port();
    thread = std::thread([this] { (void)http->Run(); });
  }
  ~TestServer() {
    http->Stop();
    scheduler->Shutdown();
    thread.join();
  }

  FakeBackend backend;
  Metrics metrics;
  std::unique_ptr<FakeChatModel> model;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<ApiHandlers> handlers;
  std::unique_ptr<HttpServer> http;
  int port = 0;
  std::thread thread;
};

// A raw loopback TCP connection (for garbage bytes and abrupt disconnects).
class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawConn() { Close(); }
  bool ok() const { return ok_; }
  bool Send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until `needle` appears, EOF, or `max` bytes.
  std::string ReadUntil(const std::string& needle, size_t max = 1 << 20) {
    std::string out;
    char buf[4096];
    while (out.size() < max && out.find(needle) == std::string::npos) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // Reads one HTTP response (headers, then Content-Length bytes of body); "" on EOF/timeout.
  std::string ReadResponse() {
    std::string out = ReadUntil("\r\n\r\n", 1 << 16);
    const size_t head = out.find("\r\n\r\n");
    if (head == std::string::npos) return out;
    size_t len = 0;
    for (const char* key : {"Content-Length: ", "content-length: "}) {
      const size_t p = out.find(key);
      if (p != std::string::npos && p < head) len = std::strtoul(out.c_str() + p + 16, nullptr, 10);
    }
    char buf[4096];
    while (out.size() < head + 4 + len) {
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

}  // namespace gemlet::server::testing
