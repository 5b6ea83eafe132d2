#include "tools/convert/synth_tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "base/mapped_file.h"
#include "format/tokenizer_json.h"
#include "text/tokenizer.h"

namespace gemlet::convert {
namespace synth_tokenizer_test {

TEST(SyntheticTokenizer, ControlIdsBytesAndSections) {
  auto t = SyntheticTokenizerJson(512);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const auto& vocab = (*t)["model"]["vocab"];
  ASSERT_EQ(vocab.size(), 512u);
  std::vector<std::string> by_id(512);
  for (const auto& [piece, id] : vocab.items()) {
    ASSERT_TRUE(id.is_number_integer());
    ASSERT_GE(id.get<int>(), 0);
    ASSERT_LT(id.get<int>(), 512);
    EXPECT_TRUE(by_id[id.get<int>()].empty()) << "id " << id << " used twice";
    by_id[id.get<int>()] = piece;
  }
  const std::pair<int, const char*> kIds[] = {
      {0, "<pad>"},
      {1, "<eos>"},
      {2, "<bos>"},
      {3, "<unk>"},
      {4, "<mask>"},
      {46, "<|tool>"},
      {47, "<tool|>"},
      {48, "<|tool_call>"},
      {49, "<tool_call|>"},
      {50, "<|tool_response>"},
      {51, "<tool_response|>"},
      {52, "<|\"|>"},
      {98, "<|think|>"},
      {100, "<|channel>"},
      {101, "<channel|>"},
      {105, "<|turn>"},
      {106, "<turn|>"},
      {107, "\n"},
      {108, "\n\n"},
      {238, "<0x00>"},
      {248, "<0x0A>"},
      {493, "<0xFF>"},
      {6, "<unused0>"},
      {99, "<unused93>"},
  };
  for (const auto& [id, piece] : kIds) EXPECT_EQ(by_id[id], piece) << id;
  for (int b = 0; b < 256; ++b) {
    char want[8];
    std::snprintf(want, sizeof(want), "<0x%02X>", b);
    EXPECT_EQ(by_id[238 + b], want);
  }
  // The added tokens are exactly the 17 control tokens, all special.
  std::set<int> added;
  for (const auto& a : (*t)["added_tokens"]) {
    EXPECT_TRUE(a["special"].get<bool>());
    EXPECT_EQ(by_id[a["id"].get<int>()], a["content"].get<std::string>());
    added.insert(a["id"].get<int>());
  }
  EXPECT_EQ(added, (std::set<int>{0, 1, 2, 3, 4, 46, 47, 48, 49, 50, 51, 52, 98, 100, 101, 105, 106}));
  // Every merge joins two pieces into a piece.
  ASSERT_GT((*t)["model"]["merges"].size(), 30u);
  for (const auto& m : (*t)["model"]["merges"]) {
    ASSERT_EQ(m.size(), 2u);
    const std::string l = m[0], r = m[1];
    EXPECT_TRUE(vocab.contains(l) && vocab.contains(r) && vocab.contains(l + r)) << l << " + " << r;
  }
  EXPECT_TRUE(vocab.contains("\xe2\x96\x81the"));
  EXPECT_TRUE((*t)["model"]["byte_fallback"].get<bool>());
  EXPECT_EQ((*t)["model"]["type"], "BPE");
  EXPECT_EQ((*t)["normalizer"]["content"], "\xe2\x96\x81");
  // The decoder section equals the real Gemma 4 file's.
  auto real = ReadFileToString(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/tokenizer.json");
  ASSERT_TRUE(real.ok());
  const auto real_json = nlohmann::json::parse(*real);
  for (const char* section : {"normalizer", "pre_tokenizer", "post_processor", "decoder"}) {
    EXPECT_EQ((*t)[section], real_json[section]) << section;
  }
  EXPECT_EQ((*t)["model"]["unk_token"], real_json["model"]["unk_token"]);
  EXPECT_EQ((*t)["model"]["fuse_unk"], real_json["model"]["fuse_unk"]);
}

TEST(SyntheticTokenizer, PaddedToFullVocabWithMultimodalTokens) {
  auto t = SyntheticTokenizerJson(262144);
  ASSERT_TRUE(t.ok());
  const auto& vocab = (*t)["model"]["vocab"];
  EXPECT_EQ(vocab.size(), 262144u);
  auto size = TokenizerJsonVocabSize(*t);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 262144);
  EXPECT_EQ(vocab["<|image>"], 255999);
  EXPECT_EQ(vocab["<|video|>"], 258884);
  EXPECT_EQ((*t)["added_tokens"].size(), 24u);
  EXPECT_TRUE(vocab.contains("<unused99>") || vocab.contains("<unused100>"));
  EXPECT_FALSE(SyntheticTokenizerJson(511).ok());
}

TEST(SyntheticTokenizer, VocabSizeRejectsMalformedFiles) {
  using nlohmann::json;
  EXPECT_FALSE(TokenizerJsonVocabSize(json::array()).ok());
  EXPECT_FALSE(TokenizerJsonVocabSize(json{{"model", 3}}).ok());
  EXPECT_FALSE(TokenizerJsonVocabSize(json{{"model", {{"vocab", json::array()}}}}).ok());
  EXPECT_FALSE(TokenizerJsonVocabSize(json{{"model", {{"vocab", {{"a", -1}}}}}}).ok());
  EXPECT_FALSE(TokenizerJsonVocabSize(json{{"model", {{"vocab", {{"a", 1.5}}}}}}).ok());
  EXPECT_FALSE(TokenizerJsonVocabSize(json{{"model", {{"vocab", {{"a", int64_t{1} << 40}}}}}}).ok());
  EXPECT_FALSE(TokenizerJsonVocabSize(json{{"model", {{"vocab", json::object()}}}}).ok());
  EXPECT_FALSE(TokenizerJsonVocabSize(json{{"model", {{"vocab", {{"a", 0}}}}}, {"added_tokens", 5}}).ok());
  EXPECT_FALSE(
      TokenizerJsonVocabSize(json{{"model", {{"vocab", {{"a", 0}}}}}, {"added_tokens", {{{"content", "x"}}}}})
          .ok());
  auto ok = TokenizerJsonVocabSize(json{{"model", {{"vocab", {{"a", 0}, {"b", 6}}}}},
                                        {"added_tokens", {{{"id", 9}, {"content", "<x>"}}}}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 10);
}

// The project's own loader and tokenizer accept the synthetic tokenizer, and any text
// tokenizes and decodes back (byte fallback).
TEST(SyntheticTokenizer, LoadsAndRoundTripsThroughTheRuntimeTokenizer) {
  const std::string dir = ::testing::TempDir() + "/synth_tok." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto t = SyntheticTokenizerJson(512);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(WriteStringToFile(dir + "/tokenizer.json", t->dump()).ok());
  ASSERT_TRUE(WriteStringToFile(dir + "/tokenizer_config.json", SyntheticTokenizerConfigJson().dump()).ok());
  auto info = LoadHfTokenizer(dir);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->vocab.size(), 512u);
  EXPECT_TRUE(info->chat_template.empty());
  auto tok = Tokenizer::Create(info->vocab, info->special);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(tok->bos_id(), 2);
  EXPECT_EQ(tok->eos_id(), 1);
  EXPECT_TRUE(tok->IsEog(106));

  auto ids = tok->Encode("<|turn>user\nHello the world<turn|>\n");
  ASSERT_TRUE(ids.ok());
  ASSERT_GE(ids->size(), 6u);
  EXPECT_EQ(ids->front(), 105);
  EXPECT_EQ((*ids)[ids->size() - 2], 106);
  EXPECT_EQ(ids->back(), 107);
  const int32_t the = tok->PieceToId("\xe2\x96\x81the");
  const int32_t world = tok->PieceToId("\xe2\x96\x81world");
  ASSERT_GE(the, 0);
  ASSERT_GE(world, 0);
  EXPECT_NE(std::find(ids->begin(), ids->end(), the), ids->end());
  EXPECT_NE(std::find(ids->begin(), ids->end(), world), ids->end());

  for (const std::string text :
       {"Hello, world! 12345", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82",
        "tabs\tand\n\n\nnewlines   spaces", "{\"json\": [1, 2]}"}) {
    auto enc = tok->Encode(text);
    ASSERT_TRUE(enc.ok());
    for (int32_t id : *enc) EXPECT_NE(id, tok->unk_id()) << text;
    auto dec = tok->Decode(*enc);
    ASSERT_TRUE(dec.ok());
    EXPECT_EQ(*dec, text);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace synth_tokenizer_test
}  // namespace gemlet::convert
