#include "format/gguf_vocab.h"

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "format/gguf_test_util.h"

namespace gemlet {
namespace gguf_vocab_test {

using testing::GgufBuilder;

struct Parsed {
  std::string image;
  std::unique_ptr<GgufFile> file;
};

Parsed Build(const GgufBuilder& b) {
  Parsed p;
  p.image = b.Build();
  auto r = GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(p.image.data()), p.image.size(), "v.gguf");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok()) p.file = std::move(*r);
  return p;
}

GgufBuilder Base() {
  GgufBuilder b;
  b.Str("tokenizer.ggml.model", "gemma4")
      .Strings("tokenizer.ggml.tokens", {"<pad>", "<eos>", "<bos>", "a", "b", "ab", "a b", "<turn|>", "c"})
      .F32s("tokenizer.ggml.scores", {0, 0, 0, -1, -2, -3, -4, 0, -5})
      .I32s("tokenizer.ggml.token_type", {3, 3, 3, 1, 1, 1, 4, 3, 0})
      .U32("tokenizer.ggml.bos_token_id", 2)
      .U32("tokenizer.ggml.eos_token_id", 1)
      .U32("tokenizer.ggml.padding_token_id", 0)
      .Bool("tokenizer.ggml.add_bos_token", true)
      .Str("tokenizer.chat_template", "{{ bos_token }}");
  return b;
}

TEST(GgufVocab, PiecesTypesScoresMergesSpecial) {
  GgufBuilder b = Base();
  // "a b c" splits at the second space: "a b" + "c"; "a b" splits at the first.
  b.Strings("tokenizer.ggml.merges", {"a b", "a b c"});
  Parsed p = Build(b);
  ASSERT_NE(p.file, nullptr);
  auto r = TokenizerFromGguf(*p.file);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TokenizerInfo& t = *r;
  EXPECT_EQ(t.vocab.size(), 9u);
  EXPECT_EQ(t.vocab.pieces[6], "a b");
  EXPECT_EQ(t.vocab.scores[4], -2.0f);
  EXPECT_EQ(t.vocab.types[0], TokenType::kControl);
  EXPECT_EQ(t.vocab.types[6], TokenType::kUserDefined);
  EXPECT_EQ(t.vocab.types[8], TokenType::kNormal);  // 0 = undefined reads as normal
  ASSERT_EQ(t.vocab.merges.size(), 2u);
  EXPECT_EQ(t.vocab.merges[0], (std::pair<int32_t, int32_t>{3, 4}));
  EXPECT_EQ(t.vocab.merges[1], (std::pair<int32_t, int32_t>{6, 8}));
  EXPECT_EQ(t.special["model"], "gemma4");
  EXPECT_EQ(t.special["bos_id"], 2);
  EXPECT_EQ(t.special["eos_id"], 1);
  EXPECT_EQ(t.special["pad_id"], 0);
  EXPECT_EQ(t.special["unk_id"], -1);  // absent
  EXPECT_EQ(t.special["eog_ids"], nlohmann::json::array({1, 7}));
  EXPECT_EQ(t.special["add_bos"], false);  // gemma4: the template writes <bos>
  EXPECT_EQ(t.chat_template, "{{ bos_token }}");
}

void ExpectError(const GgufBuilder& b, const std::string& needle) {
  Parsed p = Build(b);
  ASSERT_NE(p.file, nullptr);
  auto r = TokenizerFromGguf(*p.file);
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("v.gguf"), std::string::npos) << r.status().message();
}

TEST(GgufVocab, Errors) {
  ExpectError(GgufBuilder(), "tokenizer.ggml.tokens is missing");
  ExpectError(GgufBuilder().Strings("tokenizer.ggml.tokens", {"a", "b", "a"}),
              "the piece 'a' twice (ids 0 and 2)");
  ExpectError(GgufBuilder().Strings("tokenizer.ggml.tokens", {}), "is empty");
  ExpectError(GgufBuilder().Strings("tokenizer.ggml.tokens", {"a", "b"}).F32s("tokenizer.ggml.scores", {0}),
              "scores has 1 entries for 2 tokens");
  ExpectError(
      GgufBuilder().Strings("tokenizer.ggml.tokens", {"a", "b"}).I32s("tokenizer.ggml.token_type", {1, 9}),
      "token_type[1] = 9");
  ExpectError(
      GgufBuilder().Strings("tokenizer.ggml.tokens", {"a", "b"}).Strings("tokenizer.ggml.merges", {"a x"}),
      "merges[0] 'a x'");
  ExpectError(
      GgufBuilder().Strings("tokenizer.ggml.tokens", {"a", "b"}).Strings("tokenizer.ggml.merges", {"ab"}),
      "merges[0] 'ab'");
  ExpectError(
      GgufBuilder().Strings("tokenizer.ggml.tokens", {"a", "b"}).U32("tokenizer.ggml.eos_token_id", 2),
      "eos_token_id = 2 is outside the 2-token vocabulary");
  ExpectError(GgufBuilder().Strings("tokenizer.ggml.tokens", {"a"}).Str("tokenizer.ggml.bos_token_id", "2"),
              "bos_token_id is string");
}

TEST(GgufVocab, OracleVocabulary) {
  auto g = GgufFile::Open(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e4b/model-q8_0.gguf");
  ASSERT_TRUE(g.ok());
  auto r = TokenizerFromGguf(**g);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->vocab.size(), 512u);
  EXPECT_EQ(r->vocab.merges.size(), 872u);
  EXPECT_EQ(r->vocab.pieces[105], "<|turn>");
  EXPECT_EQ(r->vocab.pieces[106], "<turn|>");
  EXPECT_EQ(r->special["eog_ids"], nlohmann::json::array({1, 106, 50}));
  EXPECT_EQ(r->special["unk_id"], 3);
}

}  // namespace gguf_vocab_test
}  // namespace gemlet
