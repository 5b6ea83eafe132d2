#include "grammar/completion.h"

#include <algorithm>
#include <span>
#include <utility>

#include "grammar/token_symbols.h"

namespace gemlet::grammar {
namespace {

bool IsEnd(ElementKind k) { return k == ElementKind::kEnd || k == ElementKind::kAlt; }

int64_t Add(int64_t a, int64_t b) { return std::min(CompletionCost::kNever, a + b); }

// The tokens one code point costs at worst: its UTF-8 bytes (a vocabulary with byte fallback
// spells any text a byte per token), and one for a control-token symbol (one token).
int64_t CodePointCost(uint32_t cp) {
  if (cp >= kTokenSymbolBase) return 1;
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// The cheapest member of the character set that starts at el[i] and ends before el[end].
int64_t SetCost(const std::vector<Element>& el, size_t i, size_t end) {
  if (el[i].kind == ElementKind::kCharAny) return 1;
  // Its ranges (a lone code point is a range of one).
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (size_t j = i; j < end; ++j) {
    if (el[j].kind == ElementKind::kCharRangeUpper) {
      ranges.back().second = el[j].value;
    } else {
      ranges.push_back({el[j].value, el[j].value});
    }
  }
  if (el[i].kind != ElementKind::kCharNot) {
    int64_t best = CompletionCost::kNever;
    for (const auto& [lo, hi] : ranges) best = std::min(best, CodePointCost(lo));
    return best;
  }
  // Negated: the smallest code point it does not list (never a symbol: a negated set does
  // not match control tokens).
  std::sort(ranges.begin(), ranges.end());
  uint32_t x = 0;
  for (const auto& [lo, hi] : ranges) {
    if (lo > x) break;
    x = std::max(x, hi + 1);
  }
  return x < kTokenSymbolBase ? CodePointCost(x) : CompletionCost::kNever;
}

}  // namespace

CompletionCost::CompletionCost(const Grammar& g)
    : rule_min_(g.num_rules(), kNever), rest_(g.elements.size(), kNever), set_cost_(g.elements.size(), 0) {
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
          const size_t next = k + 1 < starts.size() ? starts[k + 1] : end;
          if (e.kind != ElementKind::kRuleRef) set_cost_[starts[k]] = SetCost(el, starts[k], next);
          acc = Add(acc, e.kind == ElementKind::kRuleRef ? rule_min_[e.value] : set_cost_[starts[k]]);
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
    const std::span<const uint32_t> st = state.stack(i);
    for (uint32_t pos : st) sum = Add(sum, rest_[pos]);
    // Half-way through a code point, the top set has it begun: what is left of it is its
    // missing continuation bytes, not the set's cheapest member.
    if (state.partial_missing > 0 && !st.empty() && sum < kNever) {
      sum = sum - set_cost_[st.back()] + state.partial_missing;
    }
    best = std::min(best, sum);
  }
  return best;
}

}  // namespace gemlet::grammar
