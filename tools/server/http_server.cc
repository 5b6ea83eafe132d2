#include "tools/server/http_server.h"

#include <httplib.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "tools/server/anthropic_api.h"
#include "tools/server/audio_api.h"
#include "tools/server/model_router.h"
#include "tools/server/ollama_api.h"
#include "tools/server/web_page.h"

namespace gemlet::server {
namespace {

struct Route {
  const char* path;
  bool post;  // POST (else GET/HEAD)
};
// Routes that exist, for 405 (known path, wrong method) versus 404 and for metric labels.
constexpr Route kRoutes[] = {
    {"/", false}, {"/health", false}, {"/metrics", false}, {"/index.html", false},
    {"/favicon.ico", false}, {"/v1/models", false}, {"/v1/chat/completions", true},
    {"/v1/completions", true}, {"/chat/completions", true}, {"/completions", true},
    {"/tokenize", true}, {"/detokenize", true},
    // Ollama
    {"/api/chat", true}, {"/api/generate", true}, {"/api/tags", false}, {"/api/show", true},
    {"/api/version", false}, {"/api/ps", false},
    // Anthropic
    {"/v1/messages", true},
    // OpenAI's audio (Whisper's API)
    {"/v1/audio/transcriptions", true}, {"/v1/audio/translations", true},
};

const char* RouteLabel(const std::string& path) {
  for (const Route& r : kRoutes) {
    if (path == r.path) return r.path;
  }
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

// The methods a known route answers (the Allow header of a 405); nullptr for unknown paths.
const char* AllowedMethods(const std::string& path) {
  for (const Route& r : kRoutes) {
    if (path == r.path) return r.post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
  }
  if (path.rfind("/v1/models/", 0) == 0) return "GET, HEAD, OPTIONS";
  return nullptr;
}

// The request log's per-request state. Every request is handled on one connection thread
// from its headers to its last byte, so it lives there.
struct LogState {
  std::chrono::steady_clock::time_point start;
  int64_t unix_ms = 0;
  std::shared_ptr<ReplyTokens> tokens;
};
thread_local LogState t_log;

bool MethodAllowed(const std::string& allowed, const std::string& method) {
  return allowed.find(method) != std::string::npos;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void SendReply(HttpReply reply, httplib::Response& res) {
  t_log.tokens = reply.tokens;
  res.status = reply.status;
  for (const auto& [k, v] : reply.headers) res.set_header(k.c_str(), v);
  if (!reply.stream) {
    res.set_content(reply.body, reply.content_type.c_str());
    return;
  }
  auto stream = std::move(reply.stream);
  auto abandon = std::move(reply.abandon);
  res.set_chunked_content_provider(
      reply.content_type.c_str(),
      [stream](size_t /*offset*/, httplib::DataSink& sink) {
        bool ok = true;
        stream([&](std::string_view s) {
          if (!ok) return false;
          if (s.empty()) return true;
          ok = sink.write(s.data(), s.size());
          return ok;
        });
        if (ok) sink.done();
        return ok;
      },
      // Runs when the response is destroyed, whether or not streaming started: cancelling a
      // finished job is harmless, and a job whose client vanished early must not run on.
      [abandon](bool /*success*/) {
        if (abandon) abandon();
      });
}

void SendError(const ApiError& e, httplib::Response& res) { SendReply(ErrorReply(e), res); }

// A model served through references the caller owns (the single-model constructor).
class BorrowedModel : public LoadedModel {
 public:
  explicit BorrowedModel(ApiHandlers& h) : h_(h) {}
  ApiHandlers& handlers() override { return h_; }
  void Drain(std::chrono::milliseconds) override {}

 private:
  ApiHandlers& h_;
};

// The "model" field of a JSON body ("" if there is none, or the body is not JSON: the
// handler then reports that).
std::string ModelField(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("model") && j["model"].is_string()) return j["model"].get<std::string>();
  return "";
}

// Keeps `model` loaded while the reply streams.
HttpReply HoldWhileStreaming(HttpReply r, std::shared_ptr<LoadedModel> model) {
  if (!r.stream) return r;
  auto stream = std::move(r.stream);
  auto abandon = std::move(r.abandon);
  r.stream = [stream, model](const StreamWriter& w) { stream(w); };
  r.abandon = [abandon, model] {
    if (abandon) abandon();
  };
  return r;
}

}  // namespace

struct HttpServer::Impl {
  httplib::Server svr;
  std::unique_ptr<ModelRouter> own_router;  // the single-model constructor's
};

HttpServer::HttpServer(ApiHandlers& handlers, Metrics& metrics, const HttpOptions& options,
                       RequestLog* log)
    : HttpServer(nullptr, &handlers, metrics, options, log) {}

HttpServer::HttpServer(ModelRouter& router, Metrics& metrics, const HttpOptions& options, RequestLog* log)
    : HttpServer(&router, nullptr, metrics, options, log) {}

HttpServer::HttpServer(ModelRouter* router_ptr, ApiHandlers* single, Metrics& metrics, const HttpOptions& options,
                       RequestLog* log)
    : impl_(std::make_unique<Impl>()), options_(options) {
  if (router_ptr == nullptr) {
    impl_->own_router = std::make_unique<SingleModelRouter>(std::make_shared<BorrowedModel>(*single));
    router_ptr = impl_->own_router.get();
  }
  ModelRouter& router = *router_ptr;
  httplib::Server& svr = impl_->svr;
  const int threads = std::max(4, options_.threads);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // The library refuses bodies over the largest limit; each route checks its own.
  svr.set_payload_max_length(std::max(options_.max_body_bytes, options_.max_upload_bytes));
  svr.set_read_timeout(options_.read_timeout_s, 0);
  svr.set_write_timeout(options_.write_timeout_s, 0);
  svr.set_keep_alive_max_count(1000);
  svr.set_keep_alive_timeout(2);  // an idle connection holds a thread this long
  svr.set_tcp_nodelay(true);
  // cpp-httplib's default sets SO_REUSEPORT, which lets a second server listen on the same
  // port and take half the connections. SO_REUSEADDR alone only allows rebinding a port whose
  // old connections are in TIME_WAIT; a port another socket listens on stays "in use".
  svr.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  httplib::Headers default_headers;
  if (!options_.cors_origin.empty()) {
    default_headers = {{"Access-Control-Allow-Origin", options_.cors_origin},
                       {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                       {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"}};
    if (options_.cors_origin != "*") default_headers.emplace("Vary", "Origin");
  }
  if (!options_.replica.empty()) default_headers.emplace("X-Gemlet-Replica", options_.replica);
  if (!default_headers.empty()) svr.set_default_headers(default_headers);

  const std::string key = options_.api_key;
  const size_t max_body = options_.max_body_bytes;
  const size_t max_upload = std::max(options_.max_body_bytes, options_.max_upload_bytes);
  // The body limit of a path: uploads (audio files) have their own.
  auto limit_of = [max_body, max_upload](const std::string& path) {
    return path.rfind("/v1/audio/", 0) == 0 ? max_upload : max_body;
  };
  svr.set_pre_routing_handler([key, limit_of](const httplib::Request& req,
                                              httplib::Response& res) {
    t_log.start = SteadyClock::now();
    t_log.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    t_log.tokens.reset();
    if (req.method == "OPTIONS") {  // CORS preflight (no CORS headers unless --cors)
      res.status = 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    // A known path with the wrong method: 405 before any body is read (a POST to /health
    // without a Content-Length would otherwise be a vague 400).
    if (const char* allowed = AllowedMethods(req.path); allowed && !MethodAllowed(allowed, req.method)) {
      res.set_header("Allow", allowed);
      res.set_header("Connection", "close");
      SendError(MethodNotAllowed("Method " + req.method + " is not allowed on " + req.path +
                                 " (allowed: " + allowed + ")"),
                res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // A Content-Length far over the limit (more than the library would drain, so that a
    // client writing its whole body first can still read the 413) is refused before any of
    // the body is read: the library would first skip all the announced bytes, waiting for
    // ones that never come.
    const size_t max_body = limit_of(req.path);
    const size_t drain_limit = std::max<size_t>(size_t{256} << 20, 16 * max_body + (64u << 20));
    if (req.has_header("Content-Length") &&
        std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > drain_limit) {
      res.set_header("Connection", "close");
      SendError(PayloadTooLarge("the request body is larger than the limit of " +
                                std::to_string(max_body) + " bytes"),
                res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // Everything but the page, /health and /metrics needs the key (the /v1 routes and their
    // unversioned aliases).
    const bool open = req.path == "/" || req.path == "/index.html" || req.path == "/health" ||
                      req.path == "/metrics";
    if (!key.empty() && !open) {
      std::string auth = req.get_header_value("Authorization");
      std::string given;
      if (auth.size() > 7 && strncasecmp(auth.c_str(), "Bearer ", 7) == 0) {
        given = auth.substr(7);
      } else if (req.has_header("x-api-key")) {
        given = req.get_header_value("x-api-key");
      }
      if (!ConstantTimeEquals(given, key)) {
        SendError(Unauthorized(given.empty() ? "You didn't provide an API key. Pass it as "
                                               "'Authorization: Bearer KEY'."
                                             : "Incorrect API key provided."),
                  res);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(ChatPageHtml(), "text/html; charset=utf-8");
  });
  svr.Get("/index.html", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(ChatPageHtml(), "text/html; charset=utf-8");
  });
  svr.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) {
    res.status = 204;  // no icon (the page says so too), but no 404 in the browser console
  });
  // GET routes answer from the default model (the pinned one, else the most recently used).
  auto get = [&router](std::function<HttpReply(ApiHandlers&, const httplib::Request&)> fn) {
    return [fn, &router](const httplib::Request& req, httplib::Response& res) {
      auto model = router.Acquire("");
      if (!model.ok()) return SendError(model.error(), res);
      SendReply(fn((*model)->handlers(), req), res);
    };
  };
  svr.Get("/health", get([](ApiHandlers& h, const httplib::Request&) { return h.Health(); }));
  svr.Get("/metrics", get([](ApiHandlers& h, const httplib::Request&) { return h.MetricsText(); }));
  svr.Get("/v1/models", get([](ApiHandlers& h, const httplib::Request&) { return h.Models(); }));
  svr.Get(R"(/v1/models/(.+))",
          get([](ApiHandlers& h, const httplib::Request& req) { return h.Model(req.matches[1].str()); }));

  // POST routes read their body themselves so that the size limit also holds for chunked
  // uploads (Content-Length beyond the limit is refused by the library with 413 first).
  // The model a request names serves it (ModelRouter), and stays loaded while it streams.
  auto post = [max_body, &router](std::function<HttpReply(ApiHandlers&, std::string_view)> fn) {
    return [fn, max_body, &router](const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) {
      std::string body;
      size_t seen = 0;
      bool too_big = false;
      const bool read_ok = reader([&](const char* data, size_t n) {
        seen += n;
        if (seen > max_body) {
          too_big = true;
          // Drain a bounded amount so the reply can still be read; give up beyond that.
          return seen <= 16 * max_body + (64u << 20);
        }
        body.append(data, n);
        return true;
      });
      if (too_big || res.status == 413) {
        res.set_header("Connection", "close");
        SendError(PayloadTooLarge("the request body is larger than the limit of " +
                                  std::to_string(max_body) + " bytes"),
                  res);
        return;
      }
      if (!read_ok) {
        res.set_header("Connection", "close");
        SendError(BadRequest("could not read the request body"), res);
        return;
      }
      (void)req;
      auto model = router.Acquire(router.routes_by_name() ? ModelField(body) : std::string());
      if (!model.ok()) return SendError(model.error(), res);
      SendReply(HoldWhileStreaming(fn((*model)->handlers(), body), *model), res);
    };
  };
  // OpenAI's audio routes take multipart uploads (audio_api.h), parsed by the library, of at
  // most max_upload bytes of part data and 64 parts.
  auto audio = [&router, max_upload](bool translate) {
    return [&router, max_upload, translate](const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& reader) {
      MultipartForm form;
      size_t seen = 0;
      bool too_big = false, too_many = false;
      bool read_ok = true;
      if (req.is_multipart_form_data()) {
        read_ok = reader(
            [&](const httplib::MultipartFormData& part) {
              if (form.parts.size() >= 64) return !(too_many = true);
              form.parts.push_back({part.name, part.filename, part.content_type, ""});
              return true;
            },
            [&](const char* data, size_t n) {
              seen += n;
              if (seen > max_upload) {
                too_big = true;
                return false;
              }
              form.parts.back().data.append(data, n);
              return true;
            });
      } else {
        read_ok = reader([&](const char*, size_t n) { return (seen += n) <= max_upload || !(too_big = true); });
      }
      if (too_big || res.status == 413) {
        res.set_header("Connection", "close");
        return SendError(PayloadTooLarge("the request body is larger than the limit of " +
                                         std::to_string(max_upload) + " bytes"),
                         res);
      }
      if (!req.is_multipart_form_data()) {
        return SendError(BadRequest("the body must be multipart/form-data, with the audio as its 'file' field"), res);
      }
      if (!read_ok || too_many) {
        res.set_header("Connection", "close");
        return SendError(BadRequest("could not read the multipart/form-data body (malformed, or over 64 parts)"), res);
      }
      const FormPart* name = form.Find("model");
      auto model = router.Acquire(router.routes_by_name() && name != nullptr ? name->data : std::string());
      if (!model.ok()) return SendError(model.error(), res);
      SendReply(HoldWhileStreaming(AudioTranscriptions((*model)->handlers(), form, translate), *model), res);
    };
  };
  auto chat = post([](ApiHandlers& h, std::string_view b) { return h.ChatCompletions(b); });
  auto completions = post([](ApiHandlers& h, std::string_view b) { return h.Completions(b); });
  svr.Post("/v1/chat/completions", chat);
  svr.Post("/chat/completions", chat);
  svr.Post("/v1/completions", completions);
  svr.Post("/completions", completions);
  svr.Post("/tokenize", post([](ApiHandlers& h, std::string_view b) { return h.Tokenize(b); }));
  svr.Post("/detokenize", post([](ApiHandlers& h, std::string_view b) { return h.Detokenize(b); }));
  // Ollama's API (ollama_api.h).
  svr.Post("/api/chat", post([](ApiHandlers& h, std::string_view b) { return OllamaChat(h, b); }));
  svr.Post("/api/generate", post([](ApiHandlers& h, std::string_view b) { return OllamaGenerate(h, b); }));
  svr.Post("/api/show", post([](ApiHandlers& h, std::string_view b) { return OllamaShow(h, b); }));
  svr.Get("/api/tags", get([](ApiHandlers& h, const httplib::Request&) { return OllamaTags(h); }));
  svr.Get("/api/ps", get([](ApiHandlers& h, const httplib::Request&) { return OllamaPs(h); }));
  svr.Get("/api/version", [](const httplib::Request&, httplib::Response& res) {
    SendReply(OllamaVersion(), res);
  });
  // Anthropic's Messages API (anthropic_api.h).
  svr.Post("/v1/messages", post([](ApiHandlers& h, std::string_view b) { return AnthropicMessages(h, b); }));
  // OpenAI's audio API (audio_api.h).
  svr.Post("/v1/audio/transcriptions", audio(/*translate=*/false));
  svr.Post("/v1/audio/translations", audio(/*translate=*/true));

  svr.set_expect_100_continue_handler([limit_of](const httplib::Request& req,
                                                 httplib::Response& res) {
    const std::string len = req.get_header_value("Content-Length");
    if (!len.empty() && std::strtoull(len.c_str(), nullptr, 10) > limit_of(req.path)) {
      res.status = 413;
      return 413;
    }
    return 100;
  });

  // Every error status without a body gets an OpenAI-shaped JSON body.
  svr.set_error_handler(httplib::Server::HandlerWithResponse(
      [limit_of](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e;
    const std::string label = RouteLabel(req.path);
    switch (res.status) {
      case 404:
        e = label != "other" ? MethodNotAllowed("Method " + req.method + " is not allowed on " +
                                                req.path)
                             : NotFound("Invalid URL (" + req.method + " " + req.path + ")");
        if (label != "other") res.status = 405;
        break;
      case 413:
        e = PayloadTooLarge("the request body is larger than the limit of " +
                            std::to_string(limit_of(req.path)) + " bytes");
        res.set_header("Connection", "close");
        break;
      case 414:
        e = ApiError{414, "the request URI is too long", "invalid_request_error", "", ""};
        break;
      default:
        e = ApiError{res.status, "the HTTP request could not be handled (status " +
                                     std::to_string(res.status) + ")",
                     res.status >= 500 ? "server_error" : "invalid_request_error", "", ""};
    }
    e.status = res.status;
    res.set_content(e.ToJson(), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& ex) {
          what = ex.what();
        } catch (...) {
        }
        SendError(InternalError("internal error: " + what), res);
      });
  svr.set_logger([&metrics, log](const httplib::Request& req, const httplib::Response& res) {
    metrics.CountRequest(RouteLabel(req.path), res.status);
    if (log == nullptr) return;
    RequestLogEntry e;
    // A request refused before routing (headers cut off by the read timeout, a malformed
    // request line) never set t_log: it is logged now, with no duration, rather than with
    // 1970 or an earlier request's time.
    const bool routed = t_log.unix_ms != 0;
    e.unix_ms = routed ? t_log.unix_ms
                       : std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    e.method = req.method;
    e.path = req.path;
    e.status = res.status;
    if (t_log.tokens) {
      e.prompt_tokens = t_log.tokens->prompt;
      e.completion_tokens = t_log.tokens->completion;
    }
    e.duration_ms = routed ? MsSince(t_log.start) : 0;
    e.client = req.remote_addr.empty() ? "-" : req.remote_addr + ":" + std::to_string(req.remote_port);
    e.user_agent = req.get_header_value("User-Agent");
    log->Request(e);
    t_log.tokens.reset();
    t_log.unix_ms = 0;
  });
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Bind() {
  httplib::Server& svr = impl_->svr;
  if (options_.port == 0) {
    port_ = svr.bind_to_any_port(options_.host);
  } else {
    port_ = svr.bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    const int err = errno;
    const std::string why = err == EADDRINUSE ? "address in use: another server listens there"
                                              : "address in use, or --host is not a local address";
    return IoError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                   " (" + why + ")");
  }
  return Status::Ok();
}

Status HttpServer::Run() {
  if (!impl_->svr.listen_after_bind()) {
    return IoError("the server on " + options_.host + ":" + std::to_string(port_) +
                   " stopped with an error");
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  if (impl_) impl_->svr.stop();
}

}  // namespace gemlet::server
