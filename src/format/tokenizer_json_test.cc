#include "format/tokenizer_json.h"

#include <gtest/gtest.h>

#include <string>

#include "base/mapped_file.h"

namespace gemlet {
namespace tokenizer_json_test {

using nlohmann::json;

const std::string kShared = GEMLET_SHARED_DIR;

TEST(HfTokenizer, LoadsTheGemma4Tokenizer) {
  auto r = LoadHfTokenizer(kShared + "/tokenizer/gemma4");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Vocab& v = r->vocab;
  EXPECT_EQ(v.size(), 262144u);
  EXPECT_EQ(v.types.size(), v.size());
  EXPECT_EQ(v.scores.size(), v.size());
  EXPECT_EQ(v.merges.size(), 514906u);
  // The 24 added tokens are control tokens; bytes at 238..493; the rest normal.
  int control = 0, bytes = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v.types[i] == TokenType::kControl) ++control;
    if (v.types[i] == TokenType::kByte) {
      ++bytes;
      EXPECT_GE(i, 238u);
      EXPECT_LE(i, 493u);
    }
  }
  EXPECT_EQ(control, 24);
  EXPECT_EQ(bytes, 256);
  EXPECT_EQ(v.pieces[238], "<0x00>");
  EXPECT_EQ(v.pieces[493], "<0xFF>");
  EXPECT_EQ(v.pieces[106], "<turn|>");
  EXPECT_EQ(v.types[106], TokenType::kControl);
  EXPECT_EQ(v.pieces[107], "\n");
  EXPECT_EQ(v.types[107], TokenType::kNormal);
  // Merge 0 joins a run of 30 newlines with one more.
  EXPECT_EQ(v.pieces[v.merges[0].first], std::string(30, '\n'));
  EXPECT_EQ(v.pieces[v.merges[0].second], "\n");
  EXPECT_EQ(r->special, json::parse(R"({"model": "gemma4", "bos_id": 2, "eos_id": 1, "pad_id": 0,
                                        "unk_id": 3, "eog_ids": [1, 106, 50], "add_bos": false})"));
  auto jinja = ReadFileToString(kShared + "/tokenizer/gemma4/chat_template.jinja");
  ASSERT_TRUE(jinja.ok());
  EXPECT_EQ(r->chat_template, *jinja);
  // The file path itself works the same (the folder's other files are still read).
  auto f = LoadHfTokenizer(kShared + "/tokenizer/gemma4/tokenizer.json");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->vocab.pieces, v.pieces);
  EXPECT_EQ(f->vocab.merges, v.merges);
}

TEST(HfTokenizer, TinyOracleTokenizerWithGenerationConfig) {
  auto r = LoadHfTokenizer(kShared + "/oracle/tiny-e2b");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->vocab.size(), 512u);
  EXPECT_EQ(r->vocab.merges.size(), 872u);
  EXPECT_EQ(r->special["eog_ids"], json::parse("[1, 106, 50]"));
  EXPECT_EQ(r->special["bos_id"], 2);
}

// A small tokenizer.json to mutate.
json Small() {
  return json::parse(R"({
    "version": "1.0",
    "added_tokens": [{"id": 0, "content": "<bos>", "special": true},
                     {"id": 5, "content": "<extra>", "special": false}],
    "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
      {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "fuse_unk": true,
              "vocab": {"<bos>": 0, "a": 1, "b": 2, "ab": 3, "<0x41>": 4},
              "merges": [["a", "b"]]}})");
}

Result<TokenizerInfo> Parse(const json& t, const std::string& config = "") {
  return ParseHfTokenizer(t.dump(), config, "", "test.json");
}

TEST(HfTokenizer, SmallFileTypesMergesAndAppendedTokens) {
  auto r = Parse(Small(), R"({"bos_token": {"content": "<bos>"}, "add_bos_token": true,
                              "chat_template": [{"name": "default", "template": "T"}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Vocab& v = r->vocab;
  ASSERT_EQ(v.size(), 6u);  // "<extra>" appended at id 5
  EXPECT_EQ(v.types[0], TokenType::kControl);
  EXPECT_EQ(v.types[4], TokenType::kByte);
  EXPECT_EQ(v.types[5], TokenType::kUserDefined);
  EXPECT_EQ(v.types[1], TokenType::kNormal);
  EXPECT_EQ(v.merges, (std::vector<std::pair<int32_t, int32_t>>{{1, 2}}));
  EXPECT_EQ(r->special["bos_id"], 0);
  EXPECT_EQ(r->special["add_bos"], true);
  EXPECT_FALSE(r->special.contains("eos_id"));
  EXPECT_EQ(r->chat_template, "T");
  // The older "left right" merge form.
  json t = Small();
  t["model"]["merges"] = json::parse(R"(["a b"])");
  auto r2 = Parse(t);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(r2->vocab.merges, v.merges);
}

TEST(HfTokenizer, RejectsOtherPipelinesAndBrokenFiles) {
  auto code = [](const json& t) { return Parse(t).status().code(); };
  json t = Small();
  t["normalizer"] = json::parse(R"({"type": "NFKC"})");
  EXPECT_EQ(code(t), ErrorCode::kUnsupported);
  EXPECT_NE(Parse(t).status().message().find("normalizer"), std::string::npos);
  t = Small();
  t["model"]["byte_fallback"] = false;
  EXPECT_EQ(code(t), ErrorCode::kUnsupported);
  t = Small();
  t["model"]["type"] = "Unigram";
  EXPECT_EQ(code(t), ErrorCode::kUnsupported);
  t = Small();
  t["decoder"]["decoders"][2]["type"] = "Strip";
  EXPECT_EQ(code(t), ErrorCode::kUnsupported);
  t = Small();
  t["pre_tokenizer"] = json::parse(R"({"type": "Metaspace"})");
  EXPECT_EQ(code(t), ErrorCode::kUnsupported);
  t = Small();
  t["added_tokens"][0]["lstrip"] = true;
  EXPECT_EQ(code(t), ErrorCode::kUnsupported);

  t = Small();
  t["model"]["merges"] = json::parse(R"([["a", "zz"]])");
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t["model"]["merges"] = json::parse(R"([["b", "a"]])");  // "ba" is not a piece
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t["model"]["merges"] = json::parse(R"([["a"]])");
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t["model"]["merges"] = json::parse(R"([5])");
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t = Small();
  t["model"]["vocab"]["c"] = 9;  // ids 6..8 missing
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t = Small();
  t["model"]["vocab"]["c"] = 2;  // id 2 twice
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t = Small();
  t["model"]["vocab"]["c"] = "x";
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t = Small();
  t["added_tokens"][1]["id"] = 1;  // "<extra>" at id 1, which is "a"
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  t = Small();
  t["added_tokens"][0]["special"] = "yes";  // wrong types never throw
  EXPECT_TRUE(Parse(t).ok());
  t["decoder"]["type"] = 7;
  EXPECT_EQ(code(t), ErrorCode::kUnsupported);
  t = Small();
  t["model"].erase("vocab");
  EXPECT_EQ(code(t), ErrorCode::kCorrupt);
  for (const char* junk :
       {"", "{", "[1,2]", "{\"model\": 3}", "null", "{\"model\":{\"vocab\":[]}}"}) {
    EXPECT_EQ(ParseHfTokenizer(junk, "", "", "junk").status().code(), ErrorCode::kCorrupt) << junk;
  }
  EXPECT_EQ(ParseHfTokenizer(Small().dump(), "{", "", "x").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(LoadHfTokenizer("/nonexistent/dir/tokenizer.json").status().code(),
            ErrorCode::kNotFound);
}

}  // namespace tokenizer_json_test
}  // namespace gemlet
