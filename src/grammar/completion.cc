#include "grammar/completion.h"

#include <algorithm>

namespace gemlet::grammar {
namespace {

bool IsEnd(ElementKind k) { return k == ElementKind::kEnd || k == ElementKind::kAlt; }

int64_t Add(int64_t a, int64_t b) { return std::min(CompletionCost::kNever, a + b); }

}  // namespace

CompletionCost::CompletionCost(const Grammar& g)
    : rule_min_(g.num_rules(), kNever), rest_(g.elements.size(), kNever) {
  const std::vector<Element>& el = g.elements;
  // rest_ of every position from the end of each alternative backwards, given rule_min_;
  // repeated until rule_min_ no longer changes (each round can only lower it).
  auto sweep = [&] {
    bool changed = false;
    for (size_t r = 0; r < g.num_rules(); ++r) {
      int64_t best = kNever;
      size_t pos = g.rule_start[r];
      while (true) {
        // One alternative: [pos, end).
        size_t end = pos;
        while (!IsEnd(el[end].kind)) ++end;
        // Collect the element starts of the alternative.
        std::vector<size_t> starts;
        for (size_t i = pos; i < end;) {
          starts.push_back(i);
          if (el[i].kind == ElementKind::kRuleRef) {
            ++i;
          } else {  // a character set: its ranges and alternatives follow
            ++i;
            while (i < end && (el[i].kind == ElementKind::kCharAlt ||
                               el[i].kind == ElementKind::kCharRangeUpper)) {
              ++i;
            }
          }
        }
        int64_t acc = 0;
        rest_[end] = 0;
        for (size_t k = starts.size(); k-- > 0;) {
          const Element& e = el[starts[k]];
          acc = Add(acc, e.kind == ElementKind::kRuleRef ? rule_min_[e.value] : 1);
          rest_[starts[k]] = acc;
        }
        best = std::min(best, acc);
        if (el[end].kind != ElementKind::kAlt) break;
        pos = end + 1;
      }
      if (best < rule_min_[r]) {
        rule_min_[r] = best;
        changed = true;
      }
    }
    return changed;
  };
  for (size_t round = 0; round <= g.num_rules() + 1 && sweep(); ++round) {
  }
}

int64_t CompletionCost::Min(const MatchState& state) const {
  int64_t best = kNever;
  for (size_t i = 0; i < state.num_stacks(); ++i) {
    int64_t sum = 0;
    for (uint32_t pos : state.stack(i)) sum = Add(sum, rest_[pos]);
    best = std::min(best, sum);
  }
  return best;
}

}  // namespace gemlet::grammar
