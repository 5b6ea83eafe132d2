#include "tools/server/request_log.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/server/json_util.h"
#include "tools/server/testing/test_server.h"

namespace gemlet::server {
namespace request_log_test {

RequestLogEntry Entry() {
  RequestLogEntry e;
  e.unix_ms = 1764643801123;  // 2025-12-02T02:50:01.123Z
  e.method = "POST";
  e.path = "/v1/chat/completions";
  e.status = 200;
  e.prompt_tokens = 12;
  e.completion_tokens = 16;
  e.duration_ms = 812.34;
  e.client = "127.0.0.1:41234";
  e.user_agent = "OpenAI/JS 6.49.0";
  return e;
}

TEST(RequestLogTest, TextLine) {
  EXPECT_EQ(FormatRequestLine(Entry(), LogFormat::kText),
            "2025-12-02T02:50:01.123Z POST /v1/chat/completions 200 prompt=12 generated=16 812.3ms "
            "127.0.0.1:41234 \"OpenAI/JS 6.49.0\"");
  RequestLogEntry e = Entry();
  e.prompt_tokens = e.completion_tokens = -1;  // nothing generated: no token fields
  e.user_agent = "";
  e.path = "/health\n2025 forged line";  // control characters cannot start a new line
  EXPECT_EQ(FormatRequestLine(e, LogFormat::kText),
            "2025-12-02T02:50:01.123Z POST /health\\x0a2025 forged line 200 812.3ms 127.0.0.1:41234");
}

TEST(RequestLogTest, JsonLine) {
  Json j = Json::parse(FormatRequestLine(Entry(), LogFormat::kJson));
  EXPECT_EQ(j["time"], "2025-12-02T02:50:01.123Z");
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["prompt_tokens"], 12);
  EXPECT_EQ(j["completion_tokens"], 16);
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 812.3);
  EXPECT_EQ(j["client"], "127.0.0.1:41234");
  RequestLogEntry e = Entry();
  e.prompt_tokens = -1;
  EXPECT_TRUE(Json::parse(FormatRequestLine(e, LogFormat::kJson))["prompt_tokens"].is_null());
  Json s = Json::parse(FormatStepLine(StepLogEntry{3, 256, 4, 12.5}, LogFormat::kJson));
  EXPECT_EQ(s["step"]["decode_rows"], 3);
  EXPECT_EQ(s["step"]["prefill_rows"], 256);
  EXPECT_EQ(FormatStepLine(StepLogEntry{3, 256, 4, 12.5}, LogFormat::kText),
            "step sequences=4 decode=3 prefill=256 12.5ms");
  LogFormat f;
  EXPECT_TRUE(ParseLogFormat("json", &f));
  EXPECT_EQ(f, LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("xml", &f));
}

// Through the server: one line per request, with the tokens of a generation and after the
// last byte of its reply; steps logged when verbose.
TEST(RequestLogTest, ServerWritesOneLinePerRequest) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  RequestLog log(out, LogFormat::kJson, /*verbose=*/true);
  SchedulerOptions so;
  so.on_step = [&log](const StepLogEntry& e) { log.Step(e); };
  {
    testing::TestServer s(so, {}, {}, &log);
    s.backend.SetScript(testing::ReplyScript(testing::Bytes("hey")));
    httplib::Client c("127.0.0.1", s.port);
    ASSERT_TRUE(c.Get("/health"));
    auto r = c.Post("/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":"hi"}],"stream":true})", "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  std::rewind(out);
  std::vector<Json> requests, steps;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), out)) {
    Json j = Json::parse(buf);
    (j.contains("step") ? steps : requests).push_back(j);
  }
  std::fclose(out);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0]["path"], "/health");
  EXPECT_TRUE(requests[0]["prompt_tokens"].is_null());
  EXPECT_EQ(requests[1]["path"], "/v1/chat/completions");
  EXPECT_EQ(requests[1]["status"], 200);
  EXPECT_EQ(requests[1]["prompt_tokens"], 20);      // "[user]hi\n[assistant]"
  EXPECT_EQ(requests[1]["completion_tokens"], 4);   // "hey" + the stop token
  EXPECT_GT(requests[1]["duration_ms"].get<double>(), 0);
  EXPECT_EQ(requests[1]["client"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
  // One prefill step, then a decode step per further token.
  ASSERT_GE(steps.size(), 4u);
  EXPECT_EQ(steps[0]["step"]["prefill_rows"], 20);
  EXPECT_EQ(steps[1]["step"]["decode_rows"], 1);
}

// A request whose headers never finish (the read timeout ends it before routing) is logged
// with the current time and no duration: not 1970, a duration of decades, or ":-1".
TEST(RequestLogTest, ARequestCutOffBeforeRoutingHasTheCurrentTime) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  RequestLog log(out, LogFormat::kJson, /*verbose=*/false);
  {
    HttpOptions h;
    h.read_timeout_s = 1;
    h.threads = 4;
    testing::TestServer s({}, h, {}, &log);
    httplib::Client c("127.0.0.1", s.port);
    ASSERT_TRUE(c.Get("/health"));  // a routed request first, on the same pool
    testing::RawConn stalled(s.port);
    ASSERT_TRUE(stalled.ok());
    ASSERT_TRUE(stalled.Send("GET /health HTTP/1.1\r\nHost: x\r\n"));
    (void)stalled.ReadUntil("\r\n\r\n");  // the 400 after the read timeout
  }
  std::rewind(out);
  std::vector<Json> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), out)) lines.push_back(Json::parse(buf));
  std::fclose(out);
  ASSERT_EQ(lines.size(), 2u);
  for (const Json& j : lines) {
    ASSERT_TRUE(j.contains("time")) << j.dump();
  }
  EXPECT_EQ(lines[1]["status"], 400);
  EXPECT_LT(lines[1]["duration_ms"].get<double>(), 60000) << lines[1].dump();
  EXPECT_NE(lines[1]["client"].get<std::string>(), ":-1");
  const std::string t = lines[1]["time"].get<std::string>();
  EXPECT_EQ(t.rfind("1970", 0), std::string::npos) << t;
}

}  // namespace request_log_test
}  // namespace gemlet::server
