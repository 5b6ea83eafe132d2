// A pushdown matcher for a compiled grammar (gbnf.h), after llama.cpp's llama-grammar.cpp: the
// state is a set of stacks of element positions, each stack's top a character set still to be
// matched (an empty stack: the start rule has ended). Accepting a code point advances every
// stack whose top matches it and expands the rule references that follow (advance_stack), with
// duplicate stacks removed. It is fed bytes: a code point split across two calls (a token that
// ends inside a multi-byte UTF-8 sequence) is carried as a partial code point, and the stacks
// are pruned to those that some completion of it could still match.
//
// Limits: one step expands at most 2^15 rule alternatives, 2048 rule references deep, and a
// state keeps at most 1024 stacks. Only grammars whose expansions branch exponentially (rules nested many deep that
// each can match the empty string) or that are wildly ambiguous reach them; what is beyond
// is dropped, so such a grammar may reject text it describes (never accept text it does not).
//
// Matcher keeps a history of its past states, one per successful AcceptBytes call (one token),
// so Rollback(n) undoes the last n calls (speculative decoding, retries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/gbnf.h"

namespace gemlet::grammar {

// A matcher state: the set of stacks and a partial code point. A plain value (two vectors).
struct MatchState {
  // The stacks back to back, bottom first: stack i is stacks[offsets[i] .. offsets[i + 1]).
  // Each entry is an index into Grammar::elements; the top (last) is a character set.
  std::vector<uint32_t> stacks;
  std::vector<uint32_t> offsets{0};
  // The code point being read from a multi-byte UTF-8 sequence: the bits so far, the number
  // of continuation bytes still missing (0: none pending) and the sequence's length.
  uint32_t partial_value = 0;
  uint8_t partial_missing = 0;
  uint8_t partial_length = 0;

  size_t num_stacks() const { return offsets.size() - 1; }
  std::span<const uint32_t> stack(size_t i) const {
    return {stacks.data() + offsets[i], stacks.data() + offsets[i + 1]};
  }
  bool empty() const { return num_stacks() == 0; }
  bool operator==(const MatchState&) const = default;
};

class Matcher {
 public:
  // The start state of `grammar`'s start rule. The grammar is shared by copies.
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // Feeds `bytes` (UTF-8, possibly ending inside a code point). All or nothing: if some
  // prefix of them cannot be matched, returns false and the state is unchanged; otherwise
  // advances, records the previous state in the history, and returns true. An empty string
  // is accepted (and recorded) unless the matcher is dead.
  bool AcceptBytes(std::string_view bytes);
  // Whether AcceptBytes(bytes) would succeed, without changing anything.
  bool CanAcceptBytes(std::string_view bytes) const;

  // The start rule can end here (and no code point is half read).
  bool IsAccepting() const;
  // No more bytes can be accepted: the start rule has ended on every path, so only the end of
  // the input remains (then IsAccepting() is true: AcceptBytes never moves into a state that
  // accepts nothing at all).
  bool IsDeadEnd() const;

  // A copy (the grammar is shared; the state and history are copied).
  Matcher Copy() const { return *this; }

  // Undoes the last n successful AcceptBytes calls. Fails (kOutOfRange, nothing changed) if
  // fewer than n are remembered.
  Status Rollback(size_t n);
  size_t history_size() const { return history_.size(); }
  // How many past states are kept (default 64); the oldest are dropped beyond it.
  void set_max_history(size_t n);

  const MatchState& state() const { return state_; }
  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& shared_grammar() const { return grammar_; }

  // The step functions, for TokenMatcher's walks. `out` is overwritten (its capacity reused);
  // false when `out` is dead (no stack survived).
  static bool StepByte(const Grammar& g, const MatchState& in, uint8_t byte, MatchState& out);
  static bool StepBytes(const Grammar& g, const MatchState& in, std::string_view bytes,
                        MatchState& out);
  // The state of a single stack positioned at `stack` (bottom first), its top expanded into
  // character sets (advance_stack); `stack` may be empty (the start rule ended).
  static MatchState Expand(const Grammar& g, std::span<const uint32_t> stack);

 private:
  std::shared_ptr<const Grammar> grammar_;
  MatchState state_;
  std::deque<MatchState> history_;
  size_t max_history_ = 64;
};

}  // namespace gemlet::grammar
