// The chat renderer against the reference template: the 6 chat cases of
// shared/tokenizer/vectors.json (prompt text and ids), the reference-answer ids, and more
// cases for the branches the vectors do not reach (tools with every schema form, several tool
// calls resolved by id, pending calls, legacy tool_responses, reasoning placement, merged
// assistant turns, multimodal parts). The expected prompts of those extra cases were rendered
// from shared/tokenizer/gemma4/chat_template.jinja with Jinja2 3.1.6 set up as transformers
// does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, bos_token "<bos>").
#include "text/chat_format.h"

#include <gtest/gtest.h>

#include "text/tokenizer_test_util.h"

namespace gemlet {
namespace chat_format_test {

using nlohmann::json;
using testing_util::IdsToString;
using testing_util::RealTokenizer;
using testing_util::Vectors;

constexpr char kTemplateCases[] = R"json(
[
 {"name": "developer_role_trimmed", "messages": [{"role": "developer", "content": "  Be terse.\n"}, {"role": "user", "content": "\u00a0hi\u3000"}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>system\nBe terse.<turn|>\n<|turn>user\nhi<turn|>\n<|turn>model\n"},
 {"name": "system_parts", "messages": [{"role": "system", "content": [{"type": "text", "text": " A "}, {"type": "text", "text": "B"}]}, {"role": "user", "content": "x"}], "options": {}, "prompt": "<bos><|turn>system\nA B <turn|>\n<|turn>user\nx<turn|>\n"},
 {"name": "no_generation_prompt", "messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there"}], "options": {}, "prompt": "<bos><|turn>user\nHello<turn|>\n<|turn>model\nHi there<turn|>\n"},
 {"name": "thinking_tools_no_system", "messages": [{"role": "user", "content": "Weather?"}], "options": {"add_generation_prompt": true, "enable_thinking": true, "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer", "description": "Days ahead", "nullable": true}, "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"}, "points": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}}, "opts": {"type": "object", "properties": {"deep": {"type": "boolean", "description": "Deep mode"}}, "required": ["deep"]}, "free": {"type": "object", "description": "Free-form", "extra": {"type": "string"}}}, "required": ["city"]}}}, {"type": "function", "function": {"name": "ping", "description": "No parameters"}}, {"type": "function", "function": {"name": "with_response", "description": "Has a response", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}, "response": {"description": "The result", "type": "object"}}}]}, "prompt": "<bos><|turn>system\n<|think|>\n<|tool>declaration:get_weather{description:<|\"|>Get the weather<|\"|>,parameters:{properties:{city:{description:<|\"|>City name<|\"|>,type:<|\"|>STRING<|\"|>},days:{description:<|\"|>Days ahead<|\"|>,nullable:true,type:<|\"|>INTEGER<|\"|>},free:{description:<|\"|>Free-form<|\"|>,properties:{extra:{type:<|\"|>STRING<|\"|>}},type:<|\"|>OBJECT<|\"|>},opts:{properties:{deep:{description:<|\"|>Deep mode<|\"|>,type:<|\"|>BOOLEAN<|\"|>}},required:[<|\"|>deep<|\"|>],type:<|\"|>OBJECT<|\"|>},points:{items:{properties:{x:{type:<|\"|>NUMBER<|\"|>},y:{type:<|\"|>NUMBER<|\"|>}},required:[<|\"|>x<|\"|>],type:<|\"|>OBJECT<|\"|>},type:<|\"|>ARRAY<|\"|>},tags:{description:<|\"|>Tags<|\"|>,items:{type:<|\"|>STRING<|\"|>},type:<|\"|>ARRAY<|\"|>},unit:{enum:[<|\"|>celsius<|\"|>,<|\"|>fahrenheit<|\"|>],type:<|\"|>STRING<|\"|>}},required:[<|\"|>city<|\"|>],type:<|\"|>OBJECT<|\"|>}}<tool|><|tool>declaration:ping{description:<|\"|>No parameters<|\"|>}<tool|><|tool>declaration:with_response{description:<|\"|>Has a response<|\"|>,parameters:{properties:{q:{type:<|\"|>STRING<|\"|>}},type:<|\"|>OBJECT<|\"|>},response:{description:<|\"|>The result<|\"|>,type:<|\"|>OBJECT<|\"|>}}<tool|><turn|>\n<|turn>user\nWeather?<turn|>\n<|turn>model\n"},
 {"name": "two_tool_calls_with_ids", "messages": [{"role": "user", "content": "Paris and Rome?"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2, "ok": true, "none": null, "list": [1, "a", false], "nested": {"B": 1, "a": "x"}}}}, {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": {"city": "Rome"}}}]}, {"role": "tool", "tool_call_id": "c2", "content": "12:00"}, {"role": "tool", "tool_call_id": "c1", "content": "sunny"}, {"role": "assistant", "content": "Sunny in Paris, noon in Rome."}, {"role": "user", "content": "Thanks"}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>user\nParis and Rome?<turn|>\n<|turn>model\n<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:2,list:[1,<|\"|>a<|\"|>,false],nested:{a:<|\"|>x<|\"|>,B:1},none:null,ok:true}<tool_call|><|tool_call>call:get_time{city:<|\"|>Rome<|\"|>}<tool_call|><|tool_response>response:get_time{value:<|\"|>12:00<|\"|>}<tool_response|><|tool_response>response:get_weather{value:<|\"|>sunny<|\"|>}<tool_response|>Sunny in Paris, noon in Rome.<turn|>\n<|turn>user\nThanks<turn|>\n<|turn>model\n"},
 {"name": "tool_call_pending", "messages": [{"role": "user", "content": "List"}, {"role": "assistant", "tool_calls": [{"function": {"name": "ls", "arguments": {}}}]}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>user\nList<turn|>\n<|turn>model\n<|tool_call>call:ls{}<tool_call|><|tool_response>"},
 {"name": "tool_response_then_thinking_prompt", "messages": [{"role": "user", "content": "List"}, {"role": "assistant", "tool_calls": [{"function": {"name": "ls", "arguments": {"path": "/"}}}]}, {"role": "tool", "name": "ls", "content": [{"type": "text", "text": "a\nb"}, {"type": "image"}]}], "options": {"add_generation_prompt": true, "enable_thinking": true}, "prompt": "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nList<turn|>\n<|turn>model\n<|tool_call>call:ls{path:<|\"|>/<|\"|>}<tool_call|><|tool_response>response:ls{value:<|\"|>a\nb<|\"|>}<tool_response|><|image|><|channel>thought\n"},
 {"name": "reasoning_after_last_user", "messages": [{"role": "user", "content": "Q1"}, {"role": "assistant", "reasoning": "old thought", "content": "A1"}, {"role": "user", "content": "Q2"}, {"role": "assistant", "reasoning_content": "new thought", "content": "<|channel>thought\nx<channel|>  A2  "}], "options": {"enable_thinking": true}, "prompt": "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nQ1<turn|>\n<|turn>model\nA1<turn|>\n<|turn>user\nQ2<turn|>\n<|turn>model\n<|channel>thought\nnew thought\n<channel|>A2<turn|>\n"},
 {"name": "preserve_thinking_tool_calls", "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "reasoning": "need a tool", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1.5}}}]}, {"role": "tool", "content": "{\"r\": 1}"}, {"role": "user", "content": "again"}], "options": {"preserve_thinking": true, "add_generation_prompt": true}, "prompt": "<bos><|turn>user\nQ<turn|>\n<|turn>model\n<|channel>thought\nneed a tool\n<channel|><|tool_call>call:f{a:1.5}<tool_call|><|tool_response>response:f{value:<|\"|>{\"r\": 1}<|\"|>}<tool_response|><turn|>\n<|turn>user\nagain<turn|>\n<|turn>model\n"},
 {"name": "consecutive_assistant_merge", "messages": [{"role": "user", "content": "Go"}, {"role": "assistant", "content": "part one"}, {"role": "assistant", "content": "part two"}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>user\nGo<turn|>\n<|turn>model\npart onepart two<turn|>\n<|turn>model\n"},
 {"name": "assistant_call_then_assistant", "messages": [{"role": "user", "content": "Go"}, {"role": "assistant", "content": "Checking.", "tool_calls": [{"function": {"name": "f", "arguments": {"s": "x"}}}]}, {"role": "tool", "name": "f", "content": "done"}, {"role": "assistant", "content": "All done."}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>user\nGo<turn|>\n<|turn>model\n<|tool_call>call:f{s:<|\"|>x<|\"|>}<tool_call|><|tool_response>response:f{value:<|\"|>done<|\"|>}<tool_response|>Checking.All done.<turn|>\n<|turn>model\n"},
 {"name": "legacy_tool_responses", "messages": [{"role": "user", "content": "Go"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"s": "x"}}}], "tool_responses": [{"name": "f", "response": {"ok": true, "items": ["a", "b"]}}, {"response": "plain"}]}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>user\nGo<turn|>\n<|turn>model\n<|tool_call>call:f{s:<|\"|>x<|\"|>}<tool_call|><|tool_response>response:f{items:[<|\"|>a<|\"|>,<|\"|>b<|\"|>],ok:true}<tool_response|><|tool_response>response:unknown{value:<|\"|>plain<|\"|>}<tool_response|>"},
 {"name": "multimodal_parts", "messages": [{"role": "user", "content": [{"type": "image_url"}, {"type": "text", "text": "  What is this?  "}, {"type": "audio"}, {"type": "video"}]}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>user\n<|image|>What is this?<|audio|><|video|><turn|>\n<|turn>model\n"},
 {"name": "unknown_tool_name", "messages": [{"role": "user", "content": "Go"}, {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": null}}]}, {"role": "tool", "tool_call_id": "zzz", "content": "r"}], "options": {"add_generation_prompt": false}, "prompt": "<bos><|turn>user\nGo<turn|>\n<|turn>model\n<|tool_call>call:f{}<tool_call|><|tool_response>response:unknown{value:<|\"|>r<|\"|>}<tool_response|>"},
 {"name": "empty_messages_thinking", "messages": [], "options": {"add_generation_prompt": true, "enable_thinking": true}, "prompt": "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>model\n"},
 {"name": "tool_null_content", "messages": [{"role": "user", "content": "Go"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"n": -3, "f": 0.25}}}]}, {"role": "tool", "name": "f"}], "options": {"add_generation_prompt": true}, "prompt": "<bos><|turn>user\nGo<turn|>\n<|turn>model\n<|tool_call>call:f{f:0.25,n:-3}<tool_call|><|tool_response>response:f{value:null}<tool_response|>"},
 {"name": "array_type_list", "messages": [{"role": "user", "content": "x"}], "options": {"tools": [{"type": "function", "function": {"name": "t", "description": "d", "parameters": {"type": "object", "properties": {"v": {"type": "array", "items": {"type": ["string", "null"], "description": "item", "minItems": 1}}, "Z": {"type": "STRING", "description": "upper-case key sorts with z"}, "a": {"type": "string"}}}}}]}, "prompt": "<bos><|turn>system\n<|tool>declaration:t{description:<|\"|>d<|\"|>,parameters:{properties:{a:{type:<|\"|>STRING<|\"|>},v:{items:{description:<|\"|>item<|\"|>,minItems:1,type:[<|\"|>STRING<|\"|>,<|\"|>NULL<|\"|>]},type:<|\"|>ARRAY<|\"|>},Z:{description:<|\"|>upper-case key sorts with z<|\"|>,type:<|\"|>STRING<|\"|>}},type:<|\"|>OBJECT<|\"|>}}<tool|><turn|>\n<|turn>user\nx<turn|>\n"}
]
)json";

std::string MustRender(const json& messages, const json& options) {
  auto o = ChatOptionsFromJson(options);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  if (!o.ok()) return "";
  auto r = RenderChat(messages, *o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

TEST(ChatFormatVectors, EveryChatCasePromptAndIds) {
  const Tokenizer& tok = RealTokenizer();
  int checked = 0;
  for (const json& c : Vectors()["chat"]) {
    if (!c.contains("messages")) continue;
    const std::string name = c["name"];
    const std::string prompt = MustRender(c["messages"], c["options"]);
    EXPECT_EQ(prompt, c["prompt"].get<std::string>()) << "chat case " << name;
    auto ids = tok.Encode(prompt);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(IdsToString(*ids), IdsToString(c["ids"].get<std::vector<int32_t>>()))
        << "chat case " << name;
    // <bos> exactly once, at the start.
    EXPECT_EQ(std::count(ids->begin(), ids->end(), 2), 1) << name;
    EXPECT_EQ(ids->front(), 2) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST(ChatFormatVectors, PromptWithReferenceAnswer) {
  const Tokenizer& tok = RealTokenizer();
  const json* one_turn = nullptr;
  const json* with_answer = nullptr;
  for (const json& c : Vectors()["chat"]) {
    if (c["name"] == "one_turn") one_turn = &c;
    if (c["name"] == "one_turn_with_reference_answer") with_answer = &c;
  }
  ASSERT_TRUE(one_turn && with_answer);
  std::vector<int32_t> ids = *tok.Encode(MustRender((*one_turn)["messages"], (*one_turn)["options"]));
  const auto answer = *tok.Encode(Vectors()["reference_decode"]["text"].get<std::string>());
  ids.insert(ids.end(), answer.begin(), answer.end());
  EXPECT_EQ(IdsToString(ids), IdsToString((*with_answer)["ids"].get<std::vector<int32_t>>()));
  EXPECT_TRUE(tok.IsEog(ids.back()));
}

TEST(ChatFormatTemplate, EveryBranchCaseMatchesJinja) {
  const json cases = json::parse(kTemplateCases);
  ASSERT_GE(cases.size(), 17u);
  for (const json& c : cases) {
    EXPECT_EQ(MustRender(c["messages"], c["options"]), c["prompt"].get<std::string>())
        << "template case " << c["name"].get<std::string>();
  }
}

TEST(ChatFormat, TypedMessagesRenderLikeJson) {
  std::vector<ChatMessage> msgs(4);
  msgs[0].role = "system";
  msgs[0].content = "You are helpful.";
  msgs[1].role = "user";
  msgs[1].content = "List files";
  msgs[2].role = "assistant";
  msgs[2].tool_calls.push_back({"", "bash", {{"command", "ls"}}});
  msgs[3].role = "tool";
  msgs[3].name = "bash";
  msgs[3].content = "file1.txt\nfile2.txt";
  const json* want = nullptr;
  for (const json& c : Vectors()["chat"]) {
    if (c["name"] == "tool_call_round_trip") want = &c;
  }
  ASSERT_NE(want, nullptr);
  auto o = ChatOptionsFromJson((*want)["options"]);
  ASSERT_TRUE(o.ok());
  auto r = RenderChat(msgs, *o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (*want)["prompt"].get<std::string>());
  // JSON round trip of a typed message, including OpenAI's string-encoded arguments.
  auto back = ChatMessageFromJson(ToJson(msgs[2]));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->tool_calls.at(0).arguments, (json{{"command", "ls"}}));
  auto wire = ChatMessageFromJson(json::parse(
      R"({"role":"assistant","tool_calls":[{"id":"x","function":{"name":"f","arguments":"{\"a\":1}"}}]})"));
  ASSERT_TRUE(wire.ok()) << wire.status().ToString();
  EXPECT_EQ(wire->tool_calls.at(0).arguments, (json{{"a", 1}}));
  EXPECT_EQ(wire->tool_calls.at(0).id, "x");
}

TEST(ChatFormat, StringArgumentsAreParsedAsJsonObjects) {
  const json msgs = json::parse(R"([{"role":"user","content":"go"},
    {"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"b\":\"x\",\"a\":2}"}}]}])");
  auto r = RenderChat(msgs, ChatOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->find("<|tool_call>call:f{a:2,b:<|\"|>x<|\"|>}<tool_call|>"), std::string::npos) << *r;
}

TEST(ChatFormat, ToolObjectContentUsesTheMappingForm) {
  const json msgs = json::parse(R"([{"role":"user","content":"go"},
    {"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{}}}]},
    {"role":"tool","name":"f","content":{"temp":21,"sky":"clear"}}])");
  auto r = RenderChat(msgs, ChatOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->find("<|tool_response>response:f{sky:<|\"|>clear<|\"|>,temp:21}<tool_response|>"),
            std::string::npos)
      << *r;
}

TEST(ChatFormat, RejectsWhatTheTemplateCannotRender) {
  auto bad = [](const char* messages, const ChatOptions& o = {}) {
    auto r = RenderChat(json::parse(messages), o);
    EXPECT_FALSE(r.ok()) << messages;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << messages;
    }
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(bad(R"([{"content":"no role"}])").find("messages[0]"), std::string::npos);
  bad(R"({"role":"user"})");
  bad(R"([{"role":"assistant","tool_calls":[{"function":{"arguments":{}}}]}])");
  bad(R"([{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}])");
  bad(R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1]"}}]}])");
  bad(R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":3}}]}])");
  bad(R"([{"role":"user","content":{"a":1}}])");
  bad(R"([{"role":"assistant","content":"x","reasoning":5}])");
  ChatOptions o;
  o.tools = json::parse(R"([{"type":"function"}])");
  EXPECT_NE(bad(R"([{"role":"user","content":"x"}])", o).find("tools[0]"), std::string::npos);
  o.tools = json::parse(R"([{"function":{"name":"f","parameters":{"properties":[1]}}}])");
  bad(R"([{"role":"user","content":"x"}])", o);
  EXPECT_FALSE(ChatOptionsFromJson(json{{"enable_thinking", "yes"}}).ok());
  EXPECT_FALSE(ChatOptionsFromJson(json{{"tools", "none"}}).ok());
  EXPECT_FALSE(ChatMessageFromJson(json{{"content", "x"}}).ok());
}

// The shared prefix is exactly the system turn, whatever brings it (a system message,
// thinking, tools), and 0 without one.
TEST(ChatFormat, SharedPrefixIsTheSystemTurn) {
  const json msgs = json::parse(
      R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])");
  ChatOptions o;
  o.add_generation_prompt = true;
  auto r = RenderChatPrompt(msgs, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n");
  EXPECT_EQ(r->text.substr(0, r->shared_prefix_chars), "<bos><|turn>system\nBe brief.<turn|>\n");
  EXPECT_EQ(r->reply_prefix, "");
  EXPECT_EQ(r->text, *RenderChat(msgs, o));

  // A system message that itself contains "<turn|>\n" does not end the prefix early.
  const json tricky = json::parse(
      R"([{"role":"system","content":"a<turn|>\nb"},{"role":"user","content":"Hi"}])");
  r = RenderChatPrompt(tricky, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text.substr(0, r->shared_prefix_chars), "<bos><|turn>system\na<turn|>\nb<turn|>\n");

  o.enable_thinking = true;
  r = RenderChatPrompt(json::parse(R"([{"role":"user","content":"Hi"}])"), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text.substr(0, r->shared_prefix_chars), "<bos><|turn>system\n<|think|>\n<turn|>\n");

  o.enable_thinking = false;
  r = RenderChatPrompt(json::parse(R"([{"role":"user","content":"Hi"}])"), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shared_prefix_chars, 0u);
}

// tool_choice "required" and a named function: the reply's forced opening ends the prompt
// and is reported apart; RenderChat returns the same text.
TEST(ChatFormat, ForcedToolCallOpensTheReply) {
  std::vector<ChatMessage> msgs = {{.role = "user", .content = "Weather?"}};
  ChatOptions o;
  o.add_generation_prompt = true;
  o.tools = json::parse(R"([{"type":"function","function":{"name":"get_weather"}}])");
  o.forced_tool_call = ForcedToolCall::kAnyFunction;
  auto any = RenderChatPrompt(msgs, o);
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  EXPECT_EQ(any->reply_prefix, "<|tool_call>call:");
  EXPECT_TRUE(any->text.ends_with("<|turn>model\n<|tool_call>call:")) << any->text;
  const std::string shared = any->text.substr(0, any->shared_prefix_chars);
  EXPECT_TRUE(shared.starts_with("<bos><|turn>system\n<|tool>declaration:get_weather{")) << shared;
  EXPECT_TRUE(shared.ends_with("<tool|><turn|>\n")) << shared;
  auto text = RenderChat(msgs, o);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, any->text);

  o.forced_tool_call = ForcedToolCall::kFunction;
  o.forced_function = "get_weather";
  auto named = RenderChatPrompt(msgs, o);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->reply_prefix, "<|tool_call>call:get_weather{");
  EXPECT_EQ(named->text, any->text.substr(0, any->text.size() - any->reply_prefix.size()) +
                             "<|tool_call>call:get_weather{");

  o.forced_function.clear();
  EXPECT_FALSE(RenderChatPrompt(msgs, o).ok());
}

}  // namespace chat_format_test
}  // namespace gemlet
