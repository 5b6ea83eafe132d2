// The HTTP front end (cpp-httplib, hidden behind this interface): routes, API key, body and
// connection limits, JSON errors for everything that goes wrong (405 with Allow for a known
// path and a wrong method), CORS when allowed, and the chat page.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tools/server/api_handlers.h"
#include "tools/server/request_log.h"

namespace gemlet::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port (see HttpServer::port())
  std::string api_key;  // non-empty: every /v1 route needs "Authorization: Bearer KEY"
  // The origin whose web pages may call the API from a browser (CORS), e.g.
  // "http://localhost:3000", or "*" for any; empty (the default): no cross-origin access, so
  // a page the user visits cannot drive the local model.
  std::string cors_origin;
  // Non-empty: every response carries "X-Gemlet-Replica: NAME" (which replica behind a load
  // balancer answered; gemlet serve --replica).
  std::string replica;
  size_t max_body_bytes = 8u << 20;
  // Bodies of the upload routes (/v1/audio/*: a multipart audio file), OpenAI's 25 MB.
  size_t max_upload_bytes = 25u << 20;
  // Connection threads: each open connection holds one (streaming, or idle in keep-alive),
  // so there are enough that clients stalled for up to read_timeout_s do not starve /health
  // or a generation.
  int threads = 128;
  // Seconds without a byte while reading request headers or a body, after which the
  // connection is closed; a stalled client holds its thread no longer than that.
  int read_timeout_s = 5;
  int write_timeout_s = 30;
};

class ModelRouter;

class HttpServer {
 public:
  // One model. `log` (may be null) gets one line per request.
  HttpServer(ApiHandlers& handlers, Metrics& metrics, const HttpOptions& options,
             RequestLog* log = nullptr);
  // Several: each POST goes to the model its "model" field names (model_router.h).
  HttpServer(ModelRouter& router, Metrics& metrics, const HttpOptions& options, RequestLog* log = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; afterwards port() is the real port.
  Status Bind();
  int port() const { return port_; }
  // Serves until Stop() (from any thread). Returns when every connection has ended.
  Status Run();
  void Stop();

 private:
  HttpServer(ModelRouter* router, ApiHandlers* single, Metrics& metrics, const HttpOptions& options,
             RequestLog* log);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  HttpOptions options_;
  int port_ = 0;
};

}  // namespace gemlet::server
