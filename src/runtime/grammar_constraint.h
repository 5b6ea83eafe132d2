// A grammar (grammar/) as a TokenConstraint over a tokenizer's vocabulary, with the two
// schedules a chat needs besides "the whole output":
//  * a free block first: a reasoning channel the output may open with (block_open as its
//    first token) is left unconstrained until block_close; the grammar starts after it (or at
//    once when the output does not open one). Nothing is forced: with no block the grammar
//    starts at the first token.
//  * lazy: the output is free until one of `triggers` is sampled (a tool call's opening
//    token); the grammar constrains what follows it until it has matched completely, then the
//    output is free again until the next trigger.
// With a budget (SetBudget), the output is steered to end whole: once the tokens left come
// within a few of the fewest the grammar needs to complete (grammar/completion.h), only
// one-character tokens that keep a completion within the budget (and then an end token) are
// allowed; inside the free block, only its closing token.
// Control tokens are symbols in the grammar's text: token id t is the code point U+100000 + t
// (GrammarSymbol(t) spells it for GBNF), so a grammar names <|tool_call> by id, and no run of
// ordinary tokens can spell it (the byte tokens and pieces that could write a code point of
// that plane are never allowed).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/completion.h"
#include "grammar/token_matcher.h"
#include "runtime/token_constraint.h"
#include "text/tokenizer.h"

namespace gemlet::runtime {

// The code point of control token `id` in a grammar, as a GBNF escape ("\U00100030").
std::string GrammarSymbol(int32_t id);

// The grammar view of `tokenizer`'s vocabulary: text pieces with "▁" as spaces, byte tokens
// as their byte, end-of-generation tokens as ends (allowed when the grammar may stop), the
// special tokens (control and user-defined) as their symbols, everything else (unknown and
// unused tokens, pieces and bytes of the symbol plane) never allowed. Build once per
// tokenizer and share.
Result<std::shared_ptr<const grammar::Vocabulary>> GrammarVocabulary(const Tokenizer& tokenizer);

struct GrammarSchedule {
  int32_t block_open = -1;  // a free block the output may start with (-1: none)
  int32_t block_close = -1;
  std::vector<int32_t> triggers;  // non-empty: lazy (see above)
};

// The schedule of a Gemma 4 chat answer: with thinking on, the thought channel
// (<|channel> … <channel|>) may open it, free.
GrammarSchedule ChatAnswerSchedule(bool thinking);

class GrammarConstraint : public TokenConstraint {
 public:
  // Compiles `gbnf` from its rule `start`. Errors name the line and column.
  static Result<std::unique_ptr<GrammarConstraint>> Create(
      std::string_view gbnf, std::shared_ptr<const grammar::Vocabulary> vocab,
      const GrammarSchedule& schedule = {}, std::string_view start = "root");

  bool Allows(int32_t token) override;
  void Mask(std::span<uint32_t> mask) override;
  Status Accept(int32_t token) override;
  Status Rollback(int64_t n) override;
  bool Complete() const override;
  std::unique_ptr<TokenConstraint> Clone() const override;
  void SetBudget(int64_t tokens) override;

  // Whether the grammar is in force now (false in a free block or waiting for a trigger).
  bool constraining() const { return phase_ == Phase::kStart || phase_ == Phase::kGrammar; }

 private:
  enum class Phase : uint8_t {
    kStart,    // the first token: block_open or the grammar's first
    kBlock,    // inside the free block
    kGrammar,  // the grammar in force
    kWaiting,  // lazy: free until a trigger
  };
  // What Accept changed, for Rollback.
  struct Undo {
    Phase phase;           // before the token
    bool matcher_step;     // the matcher accepted the token
    std::optional<grammar::TokenMatcher> restarted;  // the matcher before a restart
  };

  GrammarConstraint(grammar::TokenMatcher start, const GrammarSchedule& schedule);
  bool IsTrigger(int32_t token) const;
  // The closing set when the budget is about to run out (nullptr: no closing now).
  const std::vector<int32_t>* Closing();
  bool IsEnd(int32_t token) const;
  bool FreeAllows(int32_t token) const;

  grammar::TokenMatcher start_;  // the grammar's start state (lazy restarts copy it)
  grammar::TokenMatcher matcher_;
  GrammarSchedule schedule_;
  Phase phase_;
  std::deque<Undo> undo_;
  // Budget steering (see above): the completion costs of the grammar, its one-character
  // tokens, and this step's closing set.
  std::shared_ptr<const grammar::CompletionCost> cost_;
  std::shared_ptr<const std::vector<int32_t>> short_tokens_;
  int64_t budget_ = -1;  // -1: none
  bool closing_ready_ = false;
  bool closing_on_ = false;
  std::vector<int32_t> closing_;
};

}  // namespace gemlet::runtime
