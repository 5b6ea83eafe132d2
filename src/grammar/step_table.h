// Matcher states interned and their byte steps remembered, for the token walks of a mask
// (token_matcher.cc). A walk of the vocabulary trie steps a state by one byte per node, ~10^6
// nodes for a 262,144-token vocabulary, but it meets few distinct states: inside a string body
// every ASCII byte leads back to the same state, a digit run to one or two. So each distinct
// (state, byte) step is computed once (Matcher::StepByte) and then looked up — a DFA built
// lazily over the states the walk meets.
//
// A table holds at most `max_states` states; past that, Step reports kUnlisted and writes the
// state out for the caller to carry on with StepByte (the answers stay exact, only slower).
// One table serves one grammar; not thread-safe (one per walk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace gemlet::grammar {

class StepTable {
 public:
  static constexpr int32_t kDead = -1;      // no stack survived the byte
  static constexpr int32_t kUnlisted = -2;  // alive, but the table is full: see Step

  explicit StepTable(const Grammar& g, size_t max_states = 4096);

  // The id of `s`, added if new; kUnlisted if it is new and the table is full.
  int32_t Intern(const MatchState& s);
  // The state after `byte` from state `from` (an id): its id, kDead, or kUnlisted with the
  // state written to *out.
  int32_t Step(int32_t from, uint8_t byte, MatchState* out);

  const MatchState& state(int32_t id) const { return *states_[id]; }
  // Whether state `id` holds an empty stack (the start rule, or the walked frames, ended).
  bool has_empty_stack(int32_t id) const { return flags_[id] & kEmptyStack; }
  size_t num_stacks(int32_t id) const { return states_[id]->num_stacks(); }
  size_t size() const { return states_.size(); }

 private:
  struct Hash {
    size_t operator()(const MatchState& s) const;
  };
  static constexpr uint8_t kEmptyStack = 1;
  static constexpr int32_t kEmpty = -3;  // a free slot of the step map

  size_t Slot(uint64_t key) const;
  void GrowSteps();

  const Grammar& g_;
  size_t max_states_;
  std::unordered_map<MatchState, int32_t, Hash> ids_;
  std::vector<const MatchState*> states_;  // into ids_ (node-based: stable)
  std::vector<uint8_t> flags_;
  // The remembered steps, an open-addressing map from (from << 8 | byte) to the result
  // (an id or kDead); capacity a power of two, at most half full.
  std::vector<uint64_t> step_keys_;
  std::vector<int32_t> step_vals_;
  size_t num_steps_ = 0;
  MatchState scratch_;
};

}  // namespace gemlet::grammar
