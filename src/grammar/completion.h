// How far a matcher state is from a complete match: the fewest tokens that take it to an
// accepting state in any vocabulary with byte fallback (a code point costs its UTF-8 bytes, a
// control-token symbol one; a vocabulary with longer pieces may need fewer). A generation that must end within a token budget uses it to steer to a
// complete text in time (runtime/grammar_constraint.h: once the budget is about to run out,
// only tokens that keep a completion within it are allowed), so that a constrained output is
// never cut off mid-structure when the budget allows finishing it.
//
// Computed from the grammar once: the shortest expansion of every rule (a fixpoint, rules may
// recurse) and of the rest of every alternative from each of its positions; a state's distance
// is then the minimum over its stacks of the sum of each frame's rest.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace gemlet::grammar {

class CompletionCost {
 public:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 4;

  explicit CompletionCost(const Grammar& grammar);

  // Fewest tokens (as above) from `state` to an accepting state (0: accepting now; kNever: none).
  int64_t Min(const MatchState& state) const;
  // The shortest expansion of rule `rule` (kNever if it has none).
  int64_t RuleMin(uint32_t rule) const { return rule_min_[rule]; }

 private:
  std::vector<int64_t> rule_min_;
  std::vector<int64_t> rest_;  // per element position: the rest of its alternative from there
  std::vector<int64_t> set_cost_;  // per character set's first element: its cheapest member
};

}  // namespace gemlet::grammar
