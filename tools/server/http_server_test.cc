#include "tools/server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <random>
#include <set>

#include "base/clock.h"
#include "tools/server/testing/test_server.h"

namespace gemlet::server {
namespace http_server_test {

using testing::Bytes;
using testing::RawConn;
using testing::TestServer;

const char* kChat = "/v1/chat/completions";

std::string ChatBody(const std::string& extra = "", const std::string& user = "hi") {
  return R"({"model":"fake-model","messages":[{"role":"user","content":")" + user + R"("}])" +
         extra + "}";
}

// The JSON objects of an SSE body ("data: {...}" events), and whether it ended with [DONE].
std::vector<Json> SseEvents(const std::string& body, bool* done) {
  std::vector<Json> out;
  *done = false;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string ev = body.substr(pos, end - pos);
    pos = end + 2;
    if (ev.rfind("data: ", 0) != 0) continue;  // comments
    std::string data = ev.substr(6);
    if (data == "[DONE]") {
      *done = true;
      continue;
    }
    out.push_back(Json::parse(data));
  }
  return out;
}

void ExpectJsonError(const httplib::Result& r, int status) {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  Json j = Json::parse(r->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r->body;
  ASSERT_TRUE(j.contains("error")) << r->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_TRUE(j["error"].contains("code"));
}

TEST(HttpServerTest, HealthModelsPageMetrics) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(Json::parse(h->body)["status"], "ok");
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(Json::parse(m->body)["data"][0]["id"], "fake-model");
  auto one = c.Get("/v1/models/fake-model");
  ASSERT_TRUE(one);
  EXPECT_EQ(Json::parse(one->body)["object"], "model");
  ExpectJsonError(c.Get("/v1/models/other"), 404);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("<title>gemlet chat</title>"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const char* name : {"gemlet_requests_total{route=\"/health\",code=\"200\"} 1",
                           "gemlet_prompt_tokens_total", "gemlet_completion_tokens_total",
                           "gemlet_prefill_tokens_per_second", "gemlet_decode_tokens_per_second",
                           "gemlet_queue_depth", "gemlet_active_sessions",
                           "gemlet_prefix_cache_hits_total"}) {
    EXPECT_NE(metrics->body.find(name), std::string::npos) << name;
  }
}

TEST(HttpServerTest, NonStreamingChat) {
  TestServer s;
  s.backend.SetScript(testing::ReplyScript(Bytes("Hello there")));
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post(kChat, ChatBody(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello there");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 20);
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
}

TEST(HttpServerTest, StreamingChatChunks) {
  TestServer s;
  s.backend.SetScript(testing::ReplyScript(Bytes("Hi you")));
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post(kChat, ChatBody(R"(,"stream":true,"stream_options":{"include_usage":true})"),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  bool done;
  auto ev = SseEvents(r->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(ev.size(), 4u);
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 0; i + 2 < ev.size(); ++i) {
    EXPECT_EQ(ev[i]["object"], "chat.completion.chunk");
    EXPECT_TRUE(ev[i]["usage"].is_null());
    EXPECT_TRUE(ev[i]["choices"][0]["finish_reason"].is_null());
    if (ev[i]["choices"][0]["delta"].contains("content")) {
      text += ev[i]["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(text, "Hi you");
  EXPECT_EQ(ev[ev.size() - 2]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(ev.back()["choices"].empty());
  EXPECT_EQ(ev.back()["usage"]["completion_tokens"], 7);
}

TEST(HttpServerTest, ThinkingAndToolCalls) {
  TestServer s;
  std::vector<int32_t> reply = {testing::kThinkStart};
  for (int32_t t : Bytes("thought\nhmm")) reply.push_back(t);
  reply.push_back(testing::kThinkEnd);
  reply.push_back(testing::kToolStart);
  for (int32_t t : Bytes("call:get_weather{\"city\":\"Paris\"}")) reply.push_back(t);
  reply.push_back(testing::kToolEnd);
  s.backend.SetScript(testing::ReplyScript(reply));
  httplib::Client c("127.0.0.1", s.port);
  const std::string tools =
      R"(,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
  auto r = c.Post(kChat, ChatBody(tools), "application/json");
  ASSERT_TRUE(r);
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "hmm");
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            R"({"city":"Paris"})");

  auto st = c.Post(kChat, ChatBody(tools + R"(,"stream":true)"), "application/json");
  ASSERT_TRUE(st);
  bool done;
  auto ev = SseEvents(st->body, &done);
  std::string reasoning;
  int calls = 0;
  for (const auto& e : ev) {
    const Json& d = e["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("tool_calls")) {
      EXPECT_EQ(d["tool_calls"][0]["index"], calls);
      EXPECT_EQ(d["tool_calls"][0]["function"]["name"], "get_weather");
      ++calls;
    }
  }
  EXPECT_EQ(reasoning, "hmm");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ev.back()["choices"][0]["finish_reason"], "tool_calls");
}

TEST(HttpServerTest, StopStringsAndCompletions) {
  TestServer s;
  s.backend.SetScript(testing::ReplyScript(Bytes("one two three four")));
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post(kChat, ChatBody(R"(,"stop":[" three"])"), "application/json");
  ASSERT_TRUE(r);
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "one two");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");

  s.backend.SetScript([](const std::vector<int32_t>& t) -> int32_t { return t.size() % 2 ? 'a' : 'b'; });
  auto cr = c.Post("/v1/completions", R"({"prompt":"xyz","max_tokens":5,"echo":true})",
                   "application/json");
  ASSERT_TRUE(cr);
  Json cj = Json::parse(cr->body);
  EXPECT_EQ(cj["object"], "text_completion");
  EXPECT_EQ(cj["choices"][0]["text"], "xyzababa");
  EXPECT_EQ(cj["choices"][0]["finish_reason"], "length");
  // A prompt of token ids is echoed as its text.
  auto ct = c.Post("/v1/completions", R"({"prompt":[120,121,122],"max_tokens":5,"echo":true})",
                   "application/json");
  ASSERT_TRUE(ct);
  EXPECT_EQ(Json::parse(ct->body)["choices"][0]["text"], "xyzababa") << ct->body;
  auto cs = c.Post("/v1/completions",
                   R"({"prompt":[120,121,122],"max_tokens":5,"echo":true,"stream":true})",
                   "application/json");
  ASSERT_TRUE(cs);
  bool done = false;
  std::string streamed;
  for (const Json& e : SseEvents(cs->body, &done)) streamed += e["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(done);
  EXPECT_EQ(streamed, "xyzababa") << cs->body;
}

TEST(HttpServerTest, LogitBiasBansTokens) {
  TestServer s;
  s.backend.SetScript(testing::ReplyScript(Bytes("abc")));
  httplib::Client c("127.0.0.1", s.port);
  // 'b' (98) is banned: the scripted reply cannot contain it.
  auto r = c.Post(kChat, ChatBody(R"(,"max_tokens":3,"logit_bias":{"98":-100},"temperature":0)"),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string text = Json::parse(r->body)["choices"][0]["message"]["content"];
  EXPECT_EQ(text.substr(0, 1), "a");
  EXPECT_EQ(text.find('b'), std::string::npos) << text;
  ExpectJsonError(c.Post(kChat, ChatBody(R"(,"logit_bias":{"100000":1})"), "application/json"), 400);
}

TEST(HttpServerTest, ApiKeyGuardsV1Only) {
  HttpOptions h;
  h.api_key = "sekret";
  TestServer s({}, h);
  httplib::Client c("127.0.0.1", s.port);
  ExpectJsonError(c.Get("/v1/models"), 401);
  ExpectJsonError(c.Get("/v1/models", {{"Authorization", "Bearer wrong"}}), 401);
  ExpectJsonError(c.Post(kChat, ChatBody(), "application/json"), 401);
  ExpectJsonError(c.Post("/chat/completions", ChatBody(), "application/json"), 401);
  ExpectJsonError(c.Post("/completions", R"({"prompt":"x"})", "application/json"), 401);
  auto ok = c.Get("/v1/models", {{"Authorization", "Bearer sekret"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(HttpServerTest, RoutingErrors) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  ExpectJsonError(c.Get("/v1/nothing"), 404);
  ExpectJsonError(c.Get(kChat), 405);
  ExpectJsonError(c.Put("/v1/models", "", "application/json"), 405);
  ExpectJsonError(c.Post(kChat, "{", "application/json"), 400);
  auto pre = c.Options(kChat);
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
}

// A known path with the wrong method is a 405 that says which methods it takes, also for a
// POST without a body (it was a vague 400).
TEST(HttpServerTest, WrongMethodGets405WithAllow) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  auto h = c.Post("/health", "", "application/json");
  ExpectJsonError(h, 405);
  EXPECT_EQ(h->get_header_value("Allow"), "GET, HEAD, OPTIONS");
  RawConn raw(s.port);  // as `curl -X POST`: no Content-Length at all
  ASSERT_TRUE(raw.Send("POST /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string r = raw.ReadResponse();
  EXPECT_EQ(r.rfind("HTTP/1.1 405", 0), 0u) << r;
  EXPECT_NE(r.find("Allow: GET, HEAD, OPTIONS"), std::string::npos) << r;
  auto g = c.Get(kChat);
  ExpectJsonError(g, 405);
  EXPECT_EQ(g->get_header_value("Allow"), "POST, OPTIONS");
  ExpectJsonError(c.Delete("/v1/models"), 405);
}

// No cross-origin access unless --cors names an origin: a web page the user visits must not
// be able to drive the local model.
TEST(HttpServerTest, CorsOnlyWhenAllowed) {
  {
    TestServer s;
    httplib::Client c("127.0.0.1", s.port);
    auto pre = c.Options(kChat, {{"Origin", "http://evil.example"}});
    ASSERT_TRUE(pre);
    EXPECT_FALSE(pre->has_header("Access-Control-Allow-Origin"));
    auto h = c.Get("/health", {{"Origin", "http://evil.example"}});
    ASSERT_TRUE(h);
    EXPECT_FALSE(h->has_header("Access-Control-Allow-Origin"));
  }
  HttpOptions o;
  o.cors_origin = "http://localhost:3000";
  TestServer s({}, o);
  httplib::Client c("127.0.0.1", s.port);
  auto pre = c.Options(kChat, {{"Origin", "http://localhost:3000"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"),
            std::string::npos);
}

// --replica NAME: every response, errors included, says which replica answered (for a load
// balancer's affinity checks); without it there is no such header.
TEST(HttpServerTest, ReplicaHeaderOnEveryResponse) {
  {
    TestServer s;
    httplib::Client c("127.0.0.1", s.port);
    auto h = c.Get("/health");
    ASSERT_TRUE(h);
    EXPECT_FALSE(h->has_header("X-Gemlet-Replica"));
  }
  HttpOptions o;
  o.replica = "r2";
  TestServer s({}, o);
  httplib::Client c("127.0.0.1", s.port);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->get_header_value("X-Gemlet-Replica"), "r2");
  auto missing = c.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("X-Gemlet-Replica"), "r2");
  auto chat = c.Post(kChat, R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})",
                     "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 200);
  EXPECT_EQ(chat->get_header_value("X-Gemlet-Replica"), "r2");
}

// The chat page asks for no favicon that 404s.
TEST(HttpServerTest, NoFavicon404) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("rel=\"icon\""), std::string::npos);
  auto icon = c.Get("/favicon.ico");
  ASSERT_TRUE(icon);
  EXPECT_LT(icon->status, 300);
}

TEST(HttpServerTest, HostileBodies) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  const std::string bodies[] = {
      "{\"messages\": [",                                        // malformed
      R"({"messages": {"role": "user"}})",                       // wrong type
      R"({"messages": [{"role": "user", "content": 12}]})",      // wrong type
      R"({"messages": [{"role": "root", "content": "x"}]})",     // unknown role
      "{\"messages\": [{\"role\": \"user\", \"content\": \"\xc3\x28\"}]}",  // invalid UTF-8
      "{\"messages\": [{\"role\": \"user\", \"content\": \"\\udc00\"}]}",   // lone surrogate
      std::string(5000, '{'),
      R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -5})",
      R"({"messages": [{"role": "user", "content": "x"}], "temperature": null, "top_k": 1e300})",
      "\0\0\0",
  };
  for (const auto& b : bodies) ExpectJsonError(c.Post(kChat, b, "application/json"), 400);
  ExpectJsonError(c.Post("/v1/completions", R"({"prompt": [99999999]})", "application/json"),
                  400);
  auto ok = c.Post(kChat, ChatBody(R"(,"max_tokens":2)"), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServerTest, HugeBodiesGet413) {
  HttpOptions h;
  h.max_body_bytes = 1 << 20;
  TestServer s({}, h);
  httplib::Client c("127.0.0.1", s.port);
  c.set_write_timeout(60, 0);
  c.set_read_timeout(60, 0);
  std::string big(100u << 20, 'a');  // 100 MB with Content-Length
  ExpectJsonError(c.Post(kChat, big, "application/json"), 413);
  big.clear();
  big.shrink_to_fit();
  // 4 MB in chunked transfer encoding (no Content-Length).
  size_t sent = 0;
  auto r = c.Post(
      kChat,
      [&](size_t, httplib::DataSink& sink) {
        std::string chunk(64 << 10, 'b');
        if (sent >= (4u << 20)) {
          sink.done();
          return true;
        }
        sent += chunk.size();
        return sink.write(chunk.data(), chunk.size());
      },
      "application/json");
  ExpectJsonError(r, 413);
  httplib::Client c2("127.0.0.1", s.port);
  auto ok = c2.Get("/health");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServerTest, ThousandGarbageRequestsAllGet4xxJson) {
  TestServer s;
  std::mt19937 rng(20260401);
  auto random_bytes = [&](size_t n) {
    std::string out(n, '\0');
    for (auto& ch : out) ch = static_cast<char>(rng() & 0xff);
    return out;
  };
  const std::string valid = ChatBody(R"(,"max_tokens":3,"stream":true)");
  const char* paths[] = {"/v1/chat/completions", "/v1/completions"};
  httplib::Client c("127.0.0.1", s.port);
  int raw = 0;
  for (int i = 0; i < 1000; ++i) {
    const int kind = static_cast<int>(rng() % 4);
    if (kind == 3) {
      // Not even HTTP: random bytes, then a blank line.
      RawConn conn(s.port);
      ASSERT_TRUE(conn.ok());
      conn.Send(random_bytes(1 + rng() % 300) + "\r\n\r\n");
      std::string resp = conn.ReadResponse();
      if (resp.empty()) continue;  // the server may close a connection it cannot parse
      ++raw;
      ASSERT_EQ(resp.rfind("HTTP/1.1 4", 0), 0u) << resp;
      const size_t body = resp.find("\r\n\r\n");
      ASSERT_NE(body, std::string::npos);
      std::string b = resp.substr(body + 4);
      Json j = Json::parse(b, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << resp;
      EXPECT_TRUE(j["error"]["message"].is_string()) << resp;
      continue;
    }
    std::string b;
    if (kind == 0) {
      b = random_bytes(rng() % 2000);
    } else if (kind == 1) {  // a valid body with bytes flipped
      b = valid;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
        b[rng() % b.size()] = static_cast<char>(rng() & 0xff);
      }
    } else {  // a valid body cut short
      b = valid.substr(0, rng() % (valid.size() - 1));
    }
    auto r = c.Post(paths[rng() % 2], b, "application/json");
    ASSERT_TRUE(r) << "request " << i << " got no response";
    if (r->status == 200) {
      // A flip may leave the JSON valid (inside a string): that is a fine request.
      EXPECT_EQ(kind, 1);
      continue;
    }
    ASSERT_GE(r->status, 400) << b;
    ASSERT_LT(r->status, 500) << b;
    Json j = Json::parse(r->body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
  }
  EXPECT_GT(raw, 100);
  // Still serving.
  s.backend.SetScript(testing::ReplyScript(Bytes("alive")));
  auto r = c.Post(kChat, ChatBody(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["choices"][0]["message"]["content"], "alive");
}

// --context-overflow: a chat prompt longer than the context gets OpenAI's
// context_length_exceeded error by default; with shift the oldest turns after the system
// message and the first turn go (the header counts them) and the model sees the rest.
TEST(HttpServerTest, ContextOverflowErrorOrShift) {
  auto body = [](const std::string& extra) {
    const std::string x(40, 'x'), y(40, 'y'), z(40, 'z');
    return R"({"model":"fake-model","max_tokens":20,"messages":[{"role":"system","content":"S"},)"
           R"({"role":"user","content":"first )" + x + R"("},{"role":"assistant","content":"a1 )" + x + R"("},)"
           R"({"role":"user","content":"second )" + y + R"("},{"role":"assistant","content":"a2 )" + y + R"("},)"
           R"({"role":"user","content":"third )" + z + R"("},{"role":"assistant","content":"a3 )" + z + R"("},)"
           R"({"role":"user","content":"last"}])" + extra + "}";
  };
  // The prompt the model was asked to answer (the tokens before the reply's first one).
  auto seen = std::make_shared<std::string>();
  auto script = [seen](const std::vector<int32_t>& tokens) -> int32_t {
    static const std::vector<int32_t> kMark = Bytes("[assistant]");
    if (tokens.size() >= kMark.size() && std::equal(kMark.rbegin(), kMark.rend(), tokens.rbegin())) {
      *seen = std::string(tokens.begin(), tokens.end());
    }
    return testing::kEos;
  };
  SchedulerOptions so;
  so.max_context = 200;  // the whole prompt is 10 + 108 + 109 + 108 + 22 = 357 tokens
  {
    TestServer s(so);
    s.backend.SetScript(script);
    httplib::Client c("127.0.0.1", s.port);
    auto r = c.Post(kChat, body(""), "application/json");
    ExpectJsonError(r, 400);
    Json e = Json::parse(r->body)["error"];
    EXPECT_EQ(e["code"], "context_length_exceeded");
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_TRUE(seen->empty()) << "the model ran for a refused request";
  }
  HandlerOptions ho;
  ho.context_overflow = HandlerOptions::ContextOverflow::kShift;
  TestServer s(so, {}, ho);
  s.backend.SetScript(script);
  httplib::Client c("127.0.0.1", s.port);
  for (const std::string stream : {"false", "true"}) {
    seen->clear();
    auto r = c.Post(kChat, body(R"(,"stream":)" + stream), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    // 200 − 20 (max_tokens) = 180 positions for the prompt: the second and third turns go
    // (357 − 109 − 108 = 140 tokens), the system message and the first turn stay.
    EXPECT_EQ(r->get_header_value("X-Gemlet-Dropped-Messages"), "4");
    EXPECT_EQ(*seen, "[system]S\n[user]first " + std::string(40, 'x') + "\n[assistant]a1 " + std::string(40, 'x') +
                         "\n[user]last\n[assistant]");
  }
  // Only the first turn is there to drop: it goes too. The 168 tokens left and a quarter of
  // the context for the reply do not fit, but the prompt does: it runs (its reply may end
  // at the context's end, with finish_reason length). A last message longer than the
  // context: nothing to drop, the error.
  seen->clear();
  auto big = c.Post(kChat,
                    R"({"model":"fake-model","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},)"
                    R"({"role":"user","content":")" + std::string(150, 'q') + R"("}]})",
                    "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 200) << big->body;
  EXPECT_EQ(big->get_header_value("X-Gemlet-Dropped-Messages"), "2");
  EXPECT_EQ(*seen, "[user]" + std::string(150, 'q') + "\n[assistant]");
  auto huge = c.Post(kChat, ChatBody("", std::string(250, 'q')), "application/json");
  ExpectJsonError(huge, 400);
  EXPECT_EQ(Json::parse(huge->body)["error"]["code"], "context_length_exceeded");
}

TEST(HttpServerTest, PromptAndContextLimitsGet400) {
  SchedulerOptions so;
  so.max_context = 200;  // tokens per request, prompt + reply
  HandlerOptions ho;
  ho.max_prompt_tokens = 100;  // --max-prompt
  TestServer s(so, {}, ho);
  s.backend.SetScript(testing::ReplyScript(Bytes("ok")));
  httplib::Client c("127.0.0.1", s.port);
  // "[user]" + 120 bytes + "\n[assistant]": over --max-prompt.
  auto r = c.Post(kChat, ChatBody("", std::string(120, 'x')), "application/json");
  ExpectJsonError(r, 400);
  EXPECT_EQ(Json::parse(r->body)["error"]["code"], "context_length_exceeded");
  auto rc = c.Post("/v1/completions", R"({"prompt":")" + std::string(150, 'y') + R"("})",
                   "application/json");
  ExpectJsonError(rc, 400);
  EXPECT_EQ(Json::parse(rc->body)["error"]["code"], "context_length_exceeded");
  // Within the prompt limit, the reply is cut at the context: the cache holds 200 tokens, the
  // prompt's 50 and every reply token but the last (which is sampled, never fed back).
  s.backend.SetScript(nullptr);
  auto ok = c.Post("/v1/completions",
                   R"({"prompt":")" + std::string(50, 'z') + R"(","max_tokens":1000,"ignore_eos":true})",
                   "application/json");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  Json j = Json::parse(ok->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 50);
  EXPECT_EQ(j["usage"]["completion_tokens"], 151);
  // The server still answers ordinary requests.
  s.backend.SetScript(testing::ReplyScript(Bytes("fine")));
  auto after = c.Post(kChat, ChatBody(), "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(Json::parse(after->body)["choices"][0]["message"]["content"], "fine");
}

// Polls `cond` for up to 30 s (generous for loaded CI machines and sanitizer builds).
bool WaitFor(const std::function<bool()>& cond) {
  for (int i = 0; i < 3000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

TEST(HttpServerTest, DisconnectCancelsAndFreesTheSlot) {
  SchedulerOptions so;
  so.slots = 1;
  TestServer s(so);
  const std::string body = ChatBody(R"(,"stream":true)");
  {
    RawConn conn(s.port);
    ASSERT_TRUE(conn.ok());
    conn.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    std::string got = conn.ReadUntil("\"content\"");  // a first chunk arrived
    ASSERT_NE(got.find("200 OK"), std::string::npos) << got;
  }  // the client goes away mid-stream; generation would go on for ~4000 tokens
  EXPECT_TRUE(WaitFor([&] { return s.metrics.cancelled() == 1; }));
  // The single slot is free again: a new request completes.
  s.backend.SetScript(testing::ReplyScript(Bytes("next")));
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post(kChat, ChatBody(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["choices"][0]["message"]["content"], "next");

  // The same for a non-streaming request (detected through the keep-alive writes).
  s.backend.SetScript(nullptr);
  s.backend.pass_delay = std::chrono::microseconds(2000);  // ~8 s for the whole context
  {
    const std::string b2 = ChatBody();
    RawConn conn(s.port);
    conn.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
              std::to_string(b2.size()) + "\r\n\r\n" + b2);
    EXPECT_TRUE(WaitFor([&] { return s.metrics.decode_tokens() > 50; }));
  }
  EXPECT_TRUE(WaitFor([&] { return s.metrics.cancelled() == 2; }));
}

TEST(HttpServerTest, FullQueueAnswers503WithRetryAfter) {
  SchedulerOptions so;
  so.slots = 1;
  so.queue_capacity = 1;
  so.retry_after_s = 2;
  TestServer s(so);
  // ~8 s for the whole context: b cannot run to its end before its closed connection is
  // noticed, even on a loaded machine (a write after the peer closed fails only once the
  // first one has been answered with a reset).
  s.backend.pass_delay = std::chrono::microseconds(2000);
  const std::string body = ChatBody(R"(,"stream":true)");
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  RawConn a(s.port), b(s.port);
  a.Send(req);
  a.ReadUntil("\"content\"");
  // Running in the only slot: the first chunk (the role) is written when a request is queued,
  // before it takes a slot, so it does not say that the queue is empty again (a depth of 1
  // from a's own wait let c in ahead of b on a loaded machine).
  EXPECT_TRUE(WaitFor([&] {
    const std::string m = s.metrics.RenderPrometheus();
    return m.find("gemlet_active_sessions 1\n") != std::string::npos &&
           m.find("gemlet_queue_depth 0\n") != std::string::npos;
  }));
  b.Send(req);  // waits in the queue
  EXPECT_TRUE(WaitFor([&] {
    return s.metrics.RenderPrometheus().find("gemlet_queue_depth 1\n") != std::string::npos;
  }));
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post(kChat, body, "application/json");
  ExpectJsonError(r, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "2");
  a.Close();
  b.Close();
  EXPECT_TRUE(WaitFor([&] { return s.metrics.cancelled() == 2; }));
}

}  // namespace http_server_test
}  // namespace gemlet::server

namespace gemlet::server {
namespace http_server_test {

// "Content-Length: 99999999999" is answered with 413 at once, not after the library has
// waited to skip a body that never comes.
TEST(HttpServerTest, OversizedContentLengthGets413AtOnce) {
  TestServer s;
  RawConn conn(s.port);
  ASSERT_TRUE(conn.ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(conn.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                        "Content-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{"));
  const std::string reply = conn.ReadResponse();
  const double s_taken = SecondsSince(t0);
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply;
  EXPECT_LT(s_taken, 1.0);
}

// A client that sends half its headers, or half its body, and stalls is disconnected after
// the read timeout.
TEST(HttpServerTest, StalledClientsAreDisconnected) {
  HttpOptions h;
  h.read_timeout_s = 1;
  TestServer s({}, h);
  RawConn head(s.port), body(s.port);
  ASSERT_TRUE(head.ok() && body.ok());
  ASSERT_TRUE(head.Send("GET /health HTTP/1.1\r\nHost: x\r\n"));
  ASSERT_TRUE(body.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"pr"));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string a = head.ReadUntil("\r\n\r\n");  // a 400 or EOF
  EXPECT_TRUE(a.empty() || a.rfind("HTTP/1.1 4", 0) == 0) << a;
  const std::string b = body.ReadUntil("\r\n\r\n");
  EXPECT_TRUE(b.empty() || b.rfind("HTTP/1.1 4", 0) == 0) << b;
  const double s_taken = SecondsSince(t0);
  EXPECT_LT(s_taken, 4.0);  // the RawConn gives up after 10 s
  EXPECT_GE(HttpOptions{}.read_timeout_s, 2);
  EXPECT_LE(HttpOptions{}.read_timeout_s, 10);
}

// 40 connections that send part of their headers and stall must not keep /health or a
// generation waiting (with the default thread count and timeouts).
TEST(HttpServerTest, StalledClientsDoNotStarveOthers) {
  TestServer s;
  s.backend.SetScript(testing::ReplyScript(Bytes("fine")));
  std::vector<std::unique_ptr<RawConn>> stalled;
  for (int i = 0; i < 40; ++i) {
    stalled.push_back(std::make_unique<RawConn>(s.port));
    ASSERT_TRUE(stalled.back()->ok());
    ASSERT_TRUE(stalled.back()->Send("GET /health HTTP/1.1\r\nHost: x\r\n"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all accepted
  httplib::Client c("127.0.0.1", s.port);
  c.set_connection_timeout(1, 0);
  c.set_read_timeout(1, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto health = c.Get("/health");
  ASSERT_TRUE(health) << "no answer within 1 s";
  EXPECT_EQ(health->status, 200);
  auto chat = c.Post(kChat, ChatBody(), "application/json");
  ASSERT_TRUE(chat) << "no answer within 1 s";
  EXPECT_EQ(Json::parse(chat->body)["choices"][0]["message"]["content"], "fine");
  EXPECT_LT(SecondsSince(t0), 1.0);
}

// The shutdown of `gemlet serve` (SIGTERM): no new connections, and a stream still running
// when the grace ends gets a final chunk with a finish_reason, an error event and [DONE]
// (not just a closed connection after an ordinary chunk).
TEST(HttpServerTest, ShutdownEndsRunningStreamsProperly) {
  TestServer s;
  s.backend.pass_delay = std::chrono::microseconds(2000);
  s.backend.SetScript([](const std::vector<int32_t>&) -> int32_t { return 'a'; });
  RawConn conn(s.port);
  ASSERT_TRUE(conn.ok());
  const std::string body = ChatBody(R"(,"stream":true,"max_tokens":100000)");
  ASSERT_TRUE(conn.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                        "Content-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body));
  std::string got = conn.ReadUntil("\"content\":\"a\"");
  ASSERT_NE(got.find("\"content\":\"a\""), std::string::npos) << got;
  s.http->Stop();
  s.scheduler->Drain(std::chrono::milliseconds(200));
  got += conn.ReadUntil("data: [DONE]");
  EXPECT_NE(got.find("\"finish_reason\":\"cancelled\""), std::string::npos) << got.substr(got.size() - std::min<size_t>(got.size(), 600));
  EXPECT_NE(got.find("shutting down"), std::string::npos);
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos);
  RawConn late(s.port);
  EXPECT_FALSE(late.ok() && late.Send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n") &&
               !late.ReadResponse().empty())
      << "a new connection was served after Stop()";
}

// Two servers on one port: cpp-httplib's default SO_REUSEPORT let the second bind too (and
// take half the connections); it must fail with "address in use".
TEST(HttpServerTest, SecondServerOnTheSamePortFails) {
  TestServer s;
  // Served once first: TestServer's Stop() is lost if it comes before Run() listens.
  httplib::Client c("127.0.0.1", s.port);
  ASSERT_TRUE(c.Get("/health"));
  HttpOptions h;
  h.host = "127.0.0.1";
  h.port = s.port;
  HttpServer second(*s.handlers, s.metrics, h);
  Status st = second.Bind();
  ASSERT_FALSE(st.ok()) << "a second server bound port " << s.port;
  EXPECT_NE(st.message().find("address in use"), std::string::npos) << st.message();
}

}  // namespace http_server_test
}  // namespace gemlet::server

namespace gemlet::server {
namespace http_server_test {

// n choices: forks of one prompt, whole and streamed with their indexes; the same seed gives
// the same choices.
TEST(HttpServerTest, ChoicesN) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post(kChat, ChatBody(R"(,"n":3,"max_tokens":6,"seed":4)"), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  std::set<std::string> texts;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    texts.insert(j["choices"][i]["message"]["content"].get<std::string>());
  }
  EXPECT_GT(texts.size(), 1u);  // different seeds per choice
  EXPECT_EQ(j["usage"]["completion_tokens"], 18);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 20);  // the prompt once
  auto again = c.Post(kChat, ChatBody(R"(,"n":3,"max_tokens":6,"seed":4,"stream":true)"), "application/json");
  ASSERT_TRUE(again);
  bool done = false;
  std::vector<std::string> streamed(3);
  std::vector<int> finished(3, 0);
  for (const Json& ev : SseEvents(again->body, &done)) {
    const Json& ch = ev["choices"][0];
    const int i = ch["index"];
    if (ch["delta"].contains("content")) streamed[i] += ch["delta"]["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) finished[i]++;
  }
  EXPECT_TRUE(done);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(streamed[i], j["choices"][i]["message"]["content"]) << i;
    EXPECT_EQ(finished[i], 1) << i;
  }
  // Tokenize / detokenize (llama-server's shapes): the fake's tokens are bytes.
  auto t = c.Post("/tokenize", R"({"content":"ab","with_pieces":true})", "application/json");
  ASSERT_TRUE(t);
  Json tj = Json::parse(t->body);
  ASSERT_EQ(tj["tokens"].size(), 2u);
  EXPECT_EQ(tj["tokens"][0]["id"], 'a');
  EXPECT_EQ(tj["tokens"][1]["piece"], "b");
  auto d = c.Post("/detokenize", R"({"tokens":[104,105]})", "application/json");
  ASSERT_TRUE(d);
  EXPECT_EQ(Json::parse(d->body)["content"], "hi");
  auto bad = c.Post("/detokenize", R"({"tokens":[-1]})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
}

}  // namespace http_server_test
}  // namespace gemlet::server
