// The tokenizer against ../shared/tokenizer: every vectors.json encode and decode case, the
// reference answer, the 20 llama.cpp cases, streaming decode, and the edge cases the issue
// names (invalid UTF-8, control characters). Each group test reports every failing case.
#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/tokenizer_test_util.h"
#include "text/utf8.h"

namespace gemlet {
namespace tokenizer_test {

using nlohmann::json;
using testing_util::IdsToString;
using testing_util::LlamaCppCases;
using testing_util::RealTokenizer;
using testing_util::Vectors;

std::vector<int32_t> ToIds(const json& j) { return j.get<std::vector<int32_t>>(); }

std::vector<int32_t> MustEncode(const Tokenizer& t, std::string_view text) {
  auto r = t.Encode(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<int32_t>{};
}

std::string MustDecode(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip = false) {
  auto r = t.Decode(ids, skip);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::string();
}

// Token by token, checking that no push ends inside a UTF-8 character.
std::string StreamDecode(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
  StreamDecoder dec(t, skip);
  std::string all;
  for (int32_t id : ids) {
    std::string piece;
    EXPECT_TRUE(dec.Push(id, &piece).ok());
    EXPECT_TRUE(utf8::IsValid(piece)) << "push of " << id << " emitted half a character";
    all += piece;
  }
  std::string rest;
  dec.Flush(&rest);
  EXPECT_TRUE(utf8::IsValid(rest));
  return all + rest;
}

TEST(TokenizerVectors, EveryEncodeCase) {
  const Tokenizer& tok = RealTokenizer();
  int checked = 0;
  for (const json& c : Vectors()["cases"]) {
    const std::string name = c["name"];
    const auto want = ToIds(c["ids"]);
    const auto got = MustEncode(tok, c["text"].get<std::string>());
    EXPECT_EQ(IdsToString(got), IdsToString(want)) << "encode case " << name;
    ++checked;
  }
  EXPECT_EQ(checked, 64);
}

TEST(TokenizerVectors, EveryEncodeCaseDecodes) {
  const Tokenizer& tok = RealTokenizer();
  for (const json& c : Vectors()["cases"]) {
    const std::string name = c["name"];
    const std::string want = c["decoded_roundtrip"].get<bool>() ? c["text"].get<std::string>()
                                                                : c["decoded"].get<std::string>();
    EXPECT_EQ(MustDecode(tok, ToIds(c["ids"])), want) << "decode of encode case " << name;
    if (c.contains("tokens")) {
      const auto ids = ToIds(c["ids"]);
      for (size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(tok.Piece(ids[i]), c["tokens"][i].get<std::string>())
            << "piece " << i << " of case " << name;
      }
    }
  }
}

TEST(TokenizerVectors, EveryDecodeCase) {
  const Tokenizer& tok = RealTokenizer();
  int checked = 0;
  for (const json& c : Vectors()["decode_cases"]) {
    const bool skip = c["skip_special_tokens"].get<bool>();
    EXPECT_EQ(MustDecode(tok, ToIds(c["ids"]), skip), c["text"].get<std::string>())
        << "decode case " << c["name"].get<std::string>();
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

TEST(TokenizerVectors, ReferenceDecode) {
  const Tokenizer& tok = RealTokenizer();
  const json& r = Vectors()["reference_decode"];
  const auto ids = ToIds(r["ids"]);
  EXPECT_EQ(MustDecode(tok, ids), r["text"].get<std::string>());
  EXPECT_EQ(MustDecode(tok, ids, true), r["text_skip_special"].get<std::string>());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(tok.Piece(ids[i]), r["pieces"][i].get<std::string>());
    EXPECT_EQ(MustDecode(tok, {ids[i]}), r["per_id_text"][i].get<std::string>());
  }
  // The answer re-encodes to the same ids (without the final <turn|>).
  const std::string answer = r["text_skip_special"];
  EXPECT_EQ(MustEncode(tok, answer), std::vector<int32_t>(ids.begin(), ids.end() - 1));
}

TEST(TokenizerVectors, LlamaCppExternalCases) {
  const Tokenizer& tok = RealTokenizer();
  const json& x = LlamaCppCases();
  int checked = 0;
  auto check = [&](const std::string& label, const std::string& text, const json& ids) {
    EXPECT_EQ(IdsToString(MustEncode(tok, text)), IdsToString(ToIds(ids))) << label;
    EXPECT_EQ(MustDecode(tok, ToIds(ids)), text) << label;
    ++checked;
  };
  int i = 0;
  for (const json& c : x["token_cases"])
    check("token case " + std::to_string(i++), c["text"], c["ids"]);
  for (const char* group : {"prompt_cases_e_series", "prompt_cases_12b_template"}) {
    for (const json& c : x[group])
      check(std::string(group) + " " + c["name"].get<std::string>(), c["prompt"], c["ids"]);
  }
  check("llama_cpp_issue_23252", x["llama_cpp_issue_23252"]["text"],
        x["llama_cpp_issue_23252"]["ids"]);
  EXPECT_EQ(checked, 20);
}

TEST(TokenizerVectors, StreamingDecodeMatchesOneShotOnEveryCase) {
  const Tokenizer& tok = RealTokenizer();
  std::vector<std::pair<std::string, std::vector<int32_t>>> all;
  for (const json& c : Vectors()["cases"]) all.emplace_back(c["name"], ToIds(c["ids"]));
  for (const json& c : Vectors()["decode_cases"]) all.emplace_back(c["name"], ToIds(c["ids"]));
  for (const json& c : Vectors()["chat"]) all.emplace_back(c["name"], ToIds(c["ids"]));
  all.emplace_back("reference_decode", ToIds(Vectors()["reference_decode"]["ids"]));
  // Byte runs that are invalid only as a whole, and runs cut by a special token.
  all.emplace_back("c3_a9_80", std::vector<int32_t>{433, 407, 366});
  all.emplace_back("bom_bytes", std::vector<int32_t>{477, 425, 429});
  all.emplace_back("run_split_by_special", std::vector<int32_t>{433, 2, 407, 9259, 433});
  for (const auto& [name, ids] : all) {
    for (bool skip : {false, true}) {
      EXPECT_EQ(StreamDecode(tok, ids, skip), MustDecode(tok, ids, skip))
          << "case " << name << (skip ? " (skip_special)" : "");
    }
  }
}

TEST(Tokenizer, ByteRunsFollowHfByteFallback) {
  const Tokenizer& tok = RealTokenizer();
  const int32_t c3 = 238 + 0xC3, a9 = 238 + 0xA9, x80 = 238 + 0x80;
  EXPECT_EQ(tok.ByteValue(c3), 0xC3);
  EXPECT_EQ(tok.Piece(c3), "<0xC3>");
  EXPECT_EQ(MustDecode(tok, {c3, a9}), "\xC3\xA9");
  // Invalid as a whole: one U+FFFD per byte token, even though a prefix is valid.
  EXPECT_EQ(MustDecode(tok, {c3, a9, x80}), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // A BOM made of byte tokens is kept.
  EXPECT_EQ(MustDecode(tok, {238 + 0xEF, 238 + 0xBB, 238 + 0xBF}), "\xEF\xBB\xBF");
  // With skip_special, a special token between byte tokens does not split their run.
  EXPECT_EQ(MustDecode(tok, {c3, 2, a9}, true), "\xC3\xA9");
  EXPECT_EQ(MustDecode(tok, {c3, 2, a9}, false), "\xEF\xBF\xBD<bos>\xEF\xBF\xBD");
}

TEST(Tokenizer, InvalidUtf8BecomesByteTokens) {
  const Tokenizer& tok = RealTokenizer();
  auto byte = [](int b) { return 238 + b; };
  EXPECT_EQ(MustEncode(tok, "\xFF"), (std::vector<int32_t>{byte(0xFF)}));
  EXPECT_EQ(MustEncode(tok, "a\xC3"), (std::vector<int32_t>{236746, byte(0xC3)}));
  // A truncated "▁" and a lone continuation byte.
  EXPECT_EQ(MustEncode(tok, "\xE2\x96"), (std::vector<int32_t>{byte(0xE2), byte(0x96)}));
  EXPECT_EQ(MustEncode(tok,
                       "\x80"
                       "a"),
            (std::vector<int32_t>{byte(0x80), 236746}));
  // Overlong and surrogate encodings are not characters.
  EXPECT_EQ(MustEncode(tok, "\xC0\xAF"), (std::vector<int32_t>{byte(0xC0), byte(0xAF)}));
  EXPECT_EQ(MustEncode(tok, "\xED\xA0\x80"),
            (std::vector<int32_t>{byte(0xED), byte(0xA0), byte(0x80)}));
  // Decoding gives U+FFFD per invalid byte; valid neighbours survive.
  EXPECT_EQ(MustDecode(tok, MustEncode(tok, "x\xFFy")), "x\xEF\xBF\xBDy");
}

TEST(Tokenizer, ControlCharactersRoundTrip) {
  const Tokenizer& tok = RealTokenizer();
  std::string all;
  for (int c = 0; c < 0x20; ++c) all.push_back(static_cast<char>(c));
  all += "\x7f";
  all += std::string(
      "text\0with\x1b"
      "nul",
      13);
  const auto ids = MustEncode(tok, all);
  EXPECT_EQ(MustDecode(tok, ids), all);
  // NUL is the byte token <0x00>; tab and newline have pieces of their own.
  EXPECT_EQ(MustEncode(tok, std::string("\0", 1)), (std::vector<int32_t>{238}));
  EXPECT_EQ(MustEncode(tok, "\n"), (std::vector<int32_t>{107}));
}

TEST(Tokenizer, SpecialTokensMatchAnywhereLongestFirst) {
  const Tokenizer& tok = RealTokenizer();
  EXPECT_EQ(MustEncode(tok, "x<eos>y"), (std::vector<int32_t>{236781, 1, 236762}));
  // "<|image|>" (258880) is preferred to its prefix "<|image>" (255999) at the same place.
  EXPECT_EQ(MustEncode(tok, "<|image|>"), (std::vector<int32_t>{258880}));
  EXPECT_EQ(MustEncode(tok, "<|image>"), (std::vector<int32_t>{255999}));
  EXPECT_TRUE(tok.IsSpecial(106));
  EXPECT_TRUE(tok.IsSpecial(52));
  EXPECT_FALSE(tok.IsSpecial(107));
  EXPECT_EQ(tok.PieceToId("<turn|>"), 106);
  EXPECT_EQ(tok.PieceToId("no such piece"), -1);
}

TEST(Tokenizer, SpecialIdsAndStopTokens) {
  const Tokenizer& tok = RealTokenizer();
  EXPECT_EQ(tok.size(), 262144);
  EXPECT_EQ(tok.bos_id(), 2);
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.unk_id(), 3);
  EXPECT_FALSE(tok.add_bos());
  EXPECT_EQ(tok.eog_ids(), (std::vector<int32_t>{1, 106, 50}));
  EXPECT_TRUE(tok.IsEog(50));
  EXPECT_FALSE(tok.IsEog(107));
}

TEST(Tokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const Tokenizer& tok = RealTokenizer();
  auto r = tok.Decode(std::vector<int32_t>{9259, 262144});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("262144"), std::string::npos);
  EXPECT_FALSE(tok.Decode(std::vector<int32_t>{-1}).ok());
  StreamDecoder dec(tok);
  std::string out;
  EXPECT_FALSE(dec.Push(1 << 30, &out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(tok.Piece(-5), "");
}

// Peek shows the text a byte run would end in now, and leaves the run going: a later byte
// can still turn the run invalid (one U+FFFD per byte token, as Decode gives).
TEST(Tokenizer, StreamPeekKeepsTheByteRun) {
  const Tokenizer& tok = RealTokenizer();
  const int32_t c3 = tok.PieceToId("<0xC3>"), a9 = tok.PieceToId("<0xA9>"), ff = tok.PieceToId("<0xFF>");
  ASSERT_GE(c3, 0);
  ASSERT_GE(a9, 0);
  ASSERT_GE(ff, 0);
  StreamDecoder dec(tok);
  std::string out, peek;
  ASSERT_TRUE(dec.Push(c3, &out).ok());
  dec.Peek(&peek);
  EXPECT_EQ(peek, "\uFFFD");  // half a character: as Flush would end it
  ASSERT_TRUE(dec.Push(a9, &out).ok());
  EXPECT_EQ(out, "");  // the run is held
  peek.clear();
  dec.Peek(&peek);
  EXPECT_EQ(peek, "\u00E9");
  EXPECT_TRUE(dec.pending());
  ASSERT_TRUE(dec.Push(ff, &out).ok());
  peek.clear();
  dec.Peek(&peek);
  EXPECT_EQ(peek, "\uFFFD\uFFFD\uFFFD");
  dec.Flush(&out);
  EXPECT_EQ(out, peek);
  EXPECT_EQ(out, MustDecode(tok, {c3, a9, ff}));
  peek.clear();
  dec.Peek(&peek);
  EXPECT_EQ(peek, "");
}

// The fast paths (linear BPE, segment splitting) must not change a single id.
TEST(Tokenizer, EncodeStrategiesAgree) {
  Tokenizer& tok = const_cast<Tokenizer&>(RealTokenizer());
  std::vector<std::string> texts;
  for (const json& c : Vectors()["cases"]) texts.push_back(c["text"]);
  std::string big;
  for (const auto& t : texts) big += t + " \n";
  texts.push_back(big);
  std::vector<std::vector<int32_t>> base;
  for (const auto& t : texts) base.push_back(MustEncode(tok, t));
  for (const Tokenizer::EncodeTuning tuning :
       {Tokenizer::EncodeTuning{1, true}, Tokenizer::EncodeTuning{1000000, true},
        Tokenizer::EncodeTuning{24, false}, Tokenizer::EncodeTuning{1, false}}) {
    tok.SetEncodeTuning(tuning);
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(MustEncode(tok, texts[i]), base[i])
          << "text " << i << " linear_limit " << tuning.linear_limit << " split "
          << tuning.split_parts;
    }
  }
  tok.SetEncodeTuning({});
}

// A tiny hand-made vocabulary: rank order, leftmost tie-break, missing byte pieces.
TEST(Tokenizer, MergesApplyByRankThenLeftmost) {
  Vocab v;
  v.pieces = {"<unk>",
              "a",
              "b",
              "ab",
              "ba",
              "aba",
              "<s>",
              "\xE2\x96\x81",
              "\xE2\x96\x81"
              "a"};
  v.types.assign(v.pieces.size(), TokenType::kNormal);
  v.types[0] = v.types[6] = TokenType::kControl;
  v.merges = {{2, 1}, {1, 2}, {3, 1}, {7, 1}};  // ba < ab < aba < ▁a
  auto t = Tokenizer::Create(v, {{"unk_id", 0}, {"eos_id", 6}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // "aba": (b,a) has the lower rank, so a + ba; no (a, ba) merge.
  EXPECT_EQ(MustEncode(*t, "aba"), (std::vector<int32_t>{1, 4}));
  // "abab": (b,a) at 1 first -> a, ba, b.
  EXPECT_EQ(MustEncode(*t, "abab"), (std::vector<int32_t>{1, 4, 2}));
  EXPECT_EQ(MustEncode(*t, "ab"), (std::vector<int32_t>{3}));
  EXPECT_EQ(MustEncode(*t, " a<s>"), (std::vector<int32_t>{8, 6}));
  // No byte pieces in this vocabulary: unknown characters become <unk>.
  EXPECT_EQ(MustEncode(*t, "c"), (std::vector<int32_t>{0}));
  EXPECT_EQ(t->eog_ids(), (std::vector<int32_t>{6}));
}

TEST(Tokenizer, CreateRejectsInconsistentVocabularies) {
  Vocab v;
  v.pieces = {"a", "b"};
  v.types = {TokenType::kNormal, TokenType::kNormal};
  v.merges = {{0, 1}};  // "ab" is not a piece: the merge never applies
  auto t = Tokenizer::Create(v, json::object());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(MustEncode(*t, "abab"), (std::vector<int32_t>{0, 1, 0, 1}));

  v.merges = {{0, 7}};
  auto r = Tokenizer::Create(v, json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status().message().find("merge 0"), std::string::npos);
  v.merges.clear();
  v.pieces[1] = "\xC3";  // not UTF-8
  EXPECT_EQ(Tokenizer::Create(v, json::object()).status().code(), ErrorCode::kCorrupt);
  v.pieces[1] = "b";
  EXPECT_EQ(Tokenizer::Create(v, {{"bos_id", 2}}).status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(Tokenizer::Create(v, {{"eog_ids", {0, -1}}}).status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(Tokenizer::Create(v, {{"model", "llama"}}).status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(Tokenizer::Create(v, json::array()).status().code(), ErrorCode::kCorrupt);
  v.types.pop_back();
  EXPECT_EQ(Tokenizer::Create(v, json::object()).status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(Tokenizer::Create(Vocab{}, json::object()).status().code(), ErrorCode::kCorrupt);
}

}  // namespace tokenizer_test
}  // namespace gemlet
