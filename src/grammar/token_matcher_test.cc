#include "grammar/token_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_test_util.h"

namespace gemlet::grammar {
namespace token_matcher_test {

std::shared_ptr<const Grammar> Compile(const char* text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::make_shared<const Grammar>(std::move(g).value());
}

// A synthetic vocabulary shaped like a real one: specials first, an end token, the 256 byte
// tokens, then pieces made of grammar-ish fragments (some ending inside a UTF-8 sequence).
struct SyntheticVocab {
  std::vector<std::string> pieces;
  std::vector<TokenKind> kinds;
  std::shared_ptr<const Vocabulary> vocab;
  int32_t end_id = 1;
  int32_t special_id = 0;
};

SyntheticVocab MakeVocab(uint32_t seed, int n_random) {
  SyntheticVocab s;
  auto add = [&](std::string p, TokenKind k) {
    s.pieces.push_back(std::move(p));
    s.kinds.push_back(k);
  };
  add("<special>", TokenKind::kSpecial);
  add("", TokenKind::kEnd);
  for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)), TokenKind::kText);
  const std::vector<std::string> frags = {
      "{", "}", "[", "]", ",", ":", "\"", "\\", " ", "\n", "\t", "0", "1", "7", "-", "+", "*", "/", "(",
      ")", "<", "=", ";", ".", "e", "E", "u", "n", "t", "a", "b", "x", "z", "i", "true", "false", "null",
      "print", "while", "ab", "é", "日", "本", "\xE6\x97", "\xA5", "\xC3", "\U0001F600", "\x01", "\\n",
      "\\u00", "ff", "12", "3.5", "\": ", "\", \"", "},", "],", "{\"", "[\"", "\":\"", "  ", "x = ",
      "); ", "α", "β", "ω", "héllo ", "\xF0\x9F", "\x98\x80"};
  std::mt19937 rng(seed);
  for (int i = 0; i < n_random; ++i) {
    std::string p;
    const int parts = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < parts; ++k) p += frags[rng() % frags.size()];
    add(p, TokenKind::kText);
  }
  add("<special2>", TokenKind::kSpecial);
  add("\"", TokenKind::kText);  // a duplicate piece
  auto v = Vocabulary::Create(s.pieces, s.kinds);
  EXPECT_TRUE(v.ok()) << v.status().message();
  s.vocab = *v;
  return s;
}

std::vector<uint32_t> Mask(const TokenMatcher& tm, bool cached) {
  std::vector<uint32_t> m(tm.vocab().mask_words(), 0xdeadbeef);
  if (cached) {
    tm.FillMask(m);
  } else {
    tm.FillMaskUncached(m);
  }
  return m;
}

bool Bit(const std::vector<uint32_t>& m, int32_t id) { return (m[id >> 5] >> (id & 31)) & 1; }

// The mask against trying every token on a copy; and IsAllowed against both.
void ExpectMaskIsBruteForce(const TokenMatcher& tm, const std::string& where) {
  const auto cached = Mask(tm, true);
  const auto full = Mask(tm, false);
  ASSERT_EQ(cached, full) << where;
  for (int32_t id = 0; id < static_cast<int32_t>(tm.vocab().size()); ++id) {
    // Trying the token's bytes on the matcher itself (no cache, no trie).
    const TokenKind kind = tm.vocab().kind(id);
    const bool accepted = kind == TokenKind::kText  ? tm.matcher().CanAcceptBytes(tm.vocab().piece(id))
                          : kind == TokenKind::kEnd ? tm.matcher().IsAccepting()
                                                    : false;
    ASSERT_EQ(Bit(cached, id), accepted) << where << " token " << id << " '" << tm.vocab().piece(id) << "'";
    ASSERT_EQ(tm.IsAllowed(id), accepted) << where << " token " << id;
    if (id % 16 == 0) {
      TokenMatcher copy = tm.Copy();
      ASSERT_EQ(copy.AcceptToken(id), accepted) << where << " token " << id;
    }
  }
  // Bits past the vocabulary stay clear.
  for (size_t id = tm.vocab().size(); id < cached.size() * 32; ++id) ASSERT_FALSE(Bit(cached, static_cast<int32_t>(id)));
}

TEST(Vocabulary, TrieInPreorder) {
  const std::vector<std::string> pieces = {"ab", "a", "b", "", "abc", "ab", "ba"};
  const std::vector<TokenKind> kinds = {TokenKind::kText, TokenKind::kText, TokenKind::kText, TokenKind::kEnd,
                                        TokenKind::kText, TokenKind::kText, TokenKind::kText};
  auto v = Vocabulary::Create(pieces, kinds);
  ASSERT_TRUE(v.ok());
  const auto& n = (*v)->nodes();
  // root, a, ab, abc, b, ba
  ASSERT_EQ(n.size(), 6u);
  EXPECT_EQ(n[0].subtree_end, 6u);
  EXPECT_EQ(n[1].byte, 'a');
  EXPECT_EQ(n[1].subtree_end, 4u);
  EXPECT_EQ(n[2].depth, 2);
  EXPECT_EQ(n[3].subtree_end, 4u);
  EXPECT_EQ(n[4].byte, 'b');
  EXPECT_EQ(n[4].subtree_end, 6u);
  EXPECT_EQ((*v)->node_of(0), 2u);
  EXPECT_EQ((*v)->node_of(5), 2u);
  EXPECT_EQ(n[2].token_end - n[2].token_begin, 2u);  // "ab" twice
  EXPECT_EQ((*v)->end_ids(), std::vector<int32_t>{3});
  EXPECT_EQ((*v)->max_depth(), 3u);
  EXPECT_EQ(Vocabulary::Create(pieces, std::vector<TokenKind>(3)).status().message(),
            "grammar vocabulary: 7 pieces but 3 kinds");
  EXPECT_EQ(Vocabulary::Create(pieces, std::vector<TokenKind>(7, TokenKind::kText)).status().message(),
            "grammar vocabulary: text token 3 is empty");
}

TEST(TokenMatcher, MaskEqualsBruteForceOnRandomWalks) {
  const SyntheticVocab sv = MakeVocab(7, 250);
  const char* grammars[] = {testing::kJsonGbnf, testing::kArithmeticGbnf, testing::kLanguageGbnf,
                            "root ::= \"héllo \" [α-ω]+ \" \" [\\U0001F600-\\U0001F64F] \"日本\"?\n",
                            "root ::= [^abc]+ \"!\" [^\\x00-\\x7F] [^a-zA-Z0-9]\n",
                            "root ::= \"a\"{2,4} (\"b\" | \"ab\"){3} .{1,3}\n"};
  std::mt19937 rng(3);
  for (const char* text : grammars) {
    auto g = Compile(text);
    auto cache = NewTokenMaskCache();
    for (int walk = 0; walk < 2; ++walk) {
      TokenMatcher tm(sv.vocab, Matcher(g), cache);
      for (int step = 0; step < 14; ++step) {
        const std::string where = std::string(text).substr(0, 20) + " walk " + std::to_string(walk) + " step " +
                                  std::to_string(step);
        ExpectMaskIsBruteForce(tm, where);
        if (::testing::Test::HasFatalFailure()) return;
        const auto m = Mask(tm, true);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < static_cast<int32_t>(sv.vocab->size()); ++id) {
          if (Bit(m, id) && sv.kinds[id] == TokenKind::kText) allowed.push_back(id);
        }
        if (allowed.empty()) break;
        ASSERT_TRUE(tm.AcceptToken(allowed[rng() % allowed.size()]));
      }
    }
  }
}

TEST(TokenMatcher, SpecialAndEndTokens) {
  const SyntheticVocab sv = MakeVocab(1, 50);
  TokenMatcher tm(sv.vocab, Matcher(Compile("root ::= \"<special>\" | \"ab\"\n")));
  EXPECT_FALSE(tm.IsAllowed(sv.special_id));  // a control token, though its text would match
  EXPECT_FALSE(tm.IsAllowed(sv.end_id));
  EXPECT_FALSE(tm.IsAllowed(-1));
  EXPECT_FALSE(tm.IsAllowed(static_cast<int32_t>(sv.vocab->size())));
  EXPECT_FALSE(tm.AcceptToken(sv.end_id));
  ASSERT_TRUE(tm.AcceptToken('a' + 2));  // the byte token "a"
  EXPECT_FALSE(tm.IsAllowed(sv.end_id));
  ASSERT_TRUE(tm.AcceptToken('b' + 2));
  EXPECT_TRUE(tm.IsAllowed(sv.end_id));
  auto m = Mask(tm, true);
  EXPECT_TRUE(Bit(m, sv.end_id));
  for (int32_t id = 0; id < static_cast<int32_t>(sv.vocab->size()); ++id) {
    if (id != sv.end_id) {
      EXPECT_FALSE(Bit(m, id)) << id;
    }
  }
  EXPECT_TRUE(tm.AcceptToken(sv.end_id));
}

TEST(TokenMatcher, RollbackRestoresMasks) {
  const SyntheticVocab sv = MakeVocab(5, 300);
  auto g = Compile(testing::kJsonGbnf);
  TokenMatcher tm(sv.vocab, Matcher(g));
  std::mt19937 rng(11);
  std::vector<std::vector<uint32_t>> masks{Mask(tm, true)};
  std::vector<MatchState> states{tm.matcher().state()};
  for (int step = 0; step < 20; ++step) {
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < static_cast<int32_t>(sv.vocab->size()); ++id) {
      if (Bit(masks.back(), id) && sv.kinds[id] == TokenKind::kText) allowed.push_back(id);
    }
    ASSERT_FALSE(allowed.empty());
    ASSERT_TRUE(tm.AcceptToken(allowed[rng() % allowed.size()]));
    masks.push_back(Mask(tm, true));
    states.push_back(tm.matcher().state());
  }
  for (size_t n : {1u, 3u, 7u, 20u}) {
    TokenMatcher r = tm.Copy();
    ASSERT_TRUE(r.Rollback(n).ok());
    EXPECT_EQ(r.matcher().state(), states[states.size() - 1 - n]);
    EXPECT_EQ(Mask(r, true), masks[masks.size() - 1 - n]) << n;
    EXPECT_EQ(Mask(r, false), masks[masks.size() - 1 - n]) << n;
  }
  EXPECT_FALSE(tm.Rollback(21).ok());
}

// Independent recognizers (recursive descent) for the random-walk test.
class Recognizer {
 public:
  explicit Recognizer(std::string_view s) : s_(s) {}
  bool Arithmetic() { return Expr() && i_ == s_.size(); }
  bool Json() {
    Ws();
    if (!Value()) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Digit() const { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; }
  bool Expr() {
    if (!Term()) return false;
    while (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) {
      ++i_;
      if (!Term()) return false;
    }
    return true;
  }
  bool Term() {
    if (!Factor()) return false;
    while (i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/')) {
      ++i_;
      if (!Factor()) return false;
    }
    return true;
  }
  bool Factor() {
    if (Eat('(')) return Expr() && Eat(')');
    if (Eat('-')) return Factor();
    if (!Digit()) return false;
    while (Digit()) ++i_;
    return true;
  }
  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  bool Lit(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool Value() {
    if (Eat('{')) {
      Ws();
      if (Eat('}')) return true;
      do {
        Ws();
        if (!String()) return false;
        Ws();
        if (!Eat(':')) return false;
        Ws();
        if (!Value()) return false;
        Ws();
      } while (Eat(','));
      return Eat('}');
    }
    if (Eat('[')) {
      Ws();
      if (Eat(']')) return true;
      do {
        Ws();
        if (!Value()) return false;
        Ws();
      } while (Eat(','));
      return Eat(']');
    }
    if (i_ < s_.size() && s_[i_] == '"') return String();
    if (Lit("true") || Lit("false") || Lit("null")) return true;
    return Number();
  }
  bool String() {
    if (!Eat('"')) return false;
    while (i_ < s_.size()) {
      const unsigned char c = s_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) return false;
        const char e = s_[i_++];
        if (e == 'u') {
          for (int k = 0; k < 4; ++k, ++i_) {
            if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
          }
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return false;
        }
        continue;
      }
      ++i_;
    }
    return false;
  }
  bool Number() {
    Eat('-');
    if (Eat('0')) {
    } else if (Digit() && s_[i_] != '0') {
      while (Digit()) ++i_;
    } else {
      return false;
    }
    if (Eat('.')) {
      if (!Digit()) return false;
      while (Digit()) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (!Eat('+')) Eat('-');
      if (!Digit()) return false;
      while (Digit()) ++i_;
    }
    return true;
  }
  std::string_view s_;
  size_t i_ = 0;
};

TEST(TokenMatcher, RandomWalksProduceValidText) {
  const SyntheticVocab sv = MakeVocab(9, 400);
  struct G {
    const char* gbnf;
    bool (*check)(std::string_view);
  } gs[] = {{testing::kArithmeticGbnf, [](std::string_view s) { return Recognizer(s).Arithmetic(); }},
            {testing::kJsonGbnf, [](std::string_view s) { return Recognizer(s).Json(); }}};
  std::mt19937 rng(5);
  for (const G& gr : gs) {
    auto g = Compile(gr.gbnf);
    auto cache = NewTokenMaskCache();
    int finished = 0;
    for (int walk = 0; walk < 40; ++walk) {
      TokenMatcher tm(sv.vocab, Matcher(g), cache);
      std::string text;
      for (int step = 0; step < 60; ++step) {
        const auto m = Mask(tm, true);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < static_cast<int32_t>(sv.vocab->size()); ++id) {
          if (Bit(m, id)) allowed.push_back(id);
        }
        ASSERT_FALSE(allowed.empty()) << text;
        // The end token when allowed, one time in four (else walks rarely stop).
        int32_t pick = allowed[rng() % allowed.size()];
        if (Bit(m, sv.end_id) && rng() % 4 == 0) pick = sv.end_id;
        ASSERT_TRUE(tm.AcceptToken(pick));
        if (pick == sv.end_id) {
          ++finished;
          EXPECT_TRUE(gr.check(text)) << "the grammar let through: " << text;
          break;
        }
        text += sv.pieces[pick];
      }
      // Whatever was produced is a prefix the recognizer cannot reject as garbage: it is a
      // viable prefix of the grammar (checked by the matcher on the raw text).
      Matcher fresh(g);
      EXPECT_TRUE(fresh.AcceptBytes(text)) << text;
    }
    EXPECT_GE(finished, 10) << gr.gbnf;
  }
}

}  // namespace token_matcher_test
}  // namespace gemlet::grammar
