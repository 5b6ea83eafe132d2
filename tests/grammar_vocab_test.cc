// The grammar layer over the real Gemma 4 vocabulary (262144 ids): the token mask of a JSON
// grammar equals the full trie walk and trying tokens one by one, and a tokenized JSON document is accepted token by token.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/grammar_test_util.h"
#include "grammar/matcher.h"
#include "grammar/token_matcher.h"
#include "runtime/grammar_constraint.h"
#include "text/tokenizer_test_util.h"

namespace gemlet {
namespace grammar_vocab_test {

using grammar::TokenMatcher;

std::shared_ptr<const grammar::Vocabulary> RealGrammarVocab() {
  static const auto* v = [] {
    auto r = runtime::GrammarVocabulary(testing_util::RealTokenizer());
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new std::shared_ptr<const grammar::Vocabulary>(*r);
  }();
  return *v;
}

// One JSON grammar for every matcher here: a mask cache serves one grammar object.
std::shared_ptr<const grammar::Grammar> Json() {
  static const auto* g = [] {
    auto r = grammar::ParseGbnf(grammar::testing::kJsonGbnf);
    EXPECT_TRUE(r.ok());
    return new std::shared_ptr<const grammar::Grammar>(
        std::make_shared<const grammar::Grammar>(std::move(r).value()));
  }();
  return *g;
}

TEST(GrammarRealVocab, MaskEqualsTryingEachToken) {
  const auto vocab = RealGrammarVocab();
  ASSERT_EQ(vocab->size(), 262144u);
  TokenMatcher tm(vocab, grammar::Matcher(Json()));
  const Tokenizer& tok = testing_util::RealTokenizer();
  // The start, inside a string (most tokens allowed), after a number, half-way through 日.
  const std::vector<std::string> prefixes = {"", "{\"name\": \"Zo", "[1, 2.5", "[\"\xE6\x97"};
  for (const std::string& prefix : prefixes) {
    grammar::Matcher m(Json());
    ASSERT_TRUE(m.AcceptBytes(prefix));
    TokenMatcher t(vocab, m, tm.cache());
    std::vector<uint32_t> mask(vocab->mask_words()), full(vocab->mask_words());
    t.FillMask(mask);
    t.FillMaskUncached(full);  // the whole trie walked from the state
    ASSERT_EQ(mask, full) << prefix;
    size_t allowed = 0;
    for (uint32_t w : mask) allowed += __builtin_popcount(w);
    // Each token's bytes tried on the matcher: one id in 31 (all of them take seconds).
    for (int32_t id = 0; id < static_cast<int32_t>(vocab->size()); id += 31) {
      const bool bit = (mask[id >> 5] >> (id & 31)) & 1;
      const bool tried = vocab->kind(id) == grammar::TokenKind::kText && t.matcher().CanAcceptBytes(vocab->piece(id));
      ASSERT_EQ(bit, tried) << "after '" << prefix << "': token " << id << " " << tok.Piece(id);
      ASSERT_EQ(bit, t.IsAllowed(id)) << "after '" << prefix << "': token " << id;
    }
    EXPECT_GT(allowed, 0u) << prefix;
    if (prefix == "{\"name\": \"Zo") {
      EXPECT_GT(allowed, 200000u);  // nearly all text tokens
    }
    EXPECT_FALSE((mask[tok.eos_id() >> 5] >> (tok.eos_id() & 31)) & 1);
  }
}

TEST(GrammarRealVocab, TokenizedDocumentIsAccepted) {
  const auto vocab = RealGrammarVocab();
  const Tokenizer& tok = testing_util::RealTokenizer();
  const std::string doc = "{\"name\": \"Zoë 日本\", \"tags\": [\"a\", \"b\\n\"], \"n\": -1.5e3, \"ok\": true}";
  auto ids = tok.Encode(doc);
  ASSERT_TRUE(ids.ok());
  TokenMatcher tm(vocab, grammar::Matcher(Json()));
  std::vector<uint32_t> mask(vocab->mask_words());
  for (int32_t id : *ids) {
    tm.FillMask(mask);
    ASSERT_TRUE((mask[id >> 5] >> (id & 31)) & 1) << tok.Piece(id);
    ASSERT_TRUE(tm.AcceptToken(id)) << tok.Piece(id);
  }
  EXPECT_TRUE(tm.IsAllowed(tok.eos_id()));
  // A control token is never allowed, an unbalanced document cannot end.
  EXPECT_FALSE(tm.IsAllowed(tok.PieceToId("<|turn>")));
  ASSERT_TRUE(tm.Rollback(1).ok());
  EXPECT_FALSE(tm.IsAllowed(tok.eos_id()));
}

}  // namespace grammar_vocab_test
}  // namespace gemlet
