#include "tools/server/openai_format.h"

#include <gtest/gtest.h>

#include "tools/server/json_util.h"

namespace gemlet::server {
namespace openai_format_test {

TEST(OpenAiFormatTest, ChunksAndSse) {
  ResponseMeta meta{"chatcmpl-1", 100, "m"};
  Json c = ChatChunkJson(meta, {{"content", "Hi"}}, std::nullopt, true);
  EXPECT_EQ(c["object"], "chat.completion.chunk");
  EXPECT_EQ(c["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
  Json f = ChatChunkJson(meta, Json::object(), std::string("stop"), false);
  EXPECT_EQ(f["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(f.contains("usage"));
  Json u = ChatUsageChunkJson(meta, Usage{10, 5, 3});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 15);
  EXPECT_EQ(u["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  EXPECT_EQ(SseData(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(SseDone(), "data: [DONE]\n\n");

  ChatResult r;
  r.tool_calls.push_back(ToolCall{"call_1", "f", "{}"});
  r.finish_reason = "tool_calls";
  Json full = ChatCompletionJson(meta, r);
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_TRUE(full["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(full["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "tool_calls");
  // Invalid UTF-8 in generated text never throws.
  ChatResult bad;
  bad.content = "\xff\xfe";
  EXPECT_NO_THROW(Dump(ChatCompletionJson(meta, bad)));
}

}  // namespace openai_format_test
}  // namespace gemlet::server
