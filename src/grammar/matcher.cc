// The pushdown matcher; the stack operations mirror llama.cpp's llama-grammar.cpp
// (llama_grammar_advance_stack, llama_grammar_match_char, llama_grammar_accept,
// llama_grammar_match_partial_char), over a flat state instead of vectors of pointers.
#include "grammar/matcher.h"

#include <algorithm>
#include <utility>

namespace gemlet::grammar {
namespace {

bool IsEndOfSequence(const Element& e) { return e.kind == ElementKind::kEnd || e.kind == ElementKind::kAlt; }

// The token-symbol plane (token_symbols.h): a negated set, `.` or a range that starts below
// the plane never matches it (only a literal, a class member, or a range within the plane
// does), so a control token is allowed only where the grammar names it.
constexpr uint32_t kSymbolFirst = 0x100000;
// The upper end of range [a, b] for matching: below the plane unless it starts there.
uint32_t RangeTop(uint32_t a, uint32_t b) { return a < kSymbolFirst ? std::min(b, kSymbolFirst - 1) : b; }
bool IsOpenSet(ElementKind k) { return k == ElementKind::kCharNot || k == ElementKind::kCharAny; }

// Whether code point `cp` is in the character set at `pos`; `next` gets the position after it.
bool MatchChar(const Element* el, uint32_t pos, uint32_t cp, uint32_t& next) {
  const bool open_set = IsOpenSet(el[pos].kind);
  const bool positive = el[pos].kind == ElementKind::kChar || el[pos].kind == ElementKind::kCharAny;
  bool found = false;
  do {
    if (el[pos].kind == ElementKind::kCharAny) {
      found = true;
      pos += 1;
    } else if (el[pos + 1].kind == ElementKind::kCharRangeUpper) {
      found = found || (el[pos].value <= cp && cp <= RangeTop(el[pos].value, el[pos + 1].value));
      pos += 2;
    } else {
      found = found || el[pos].value == cp;
      pos += 1;
    }
  } while (el[pos].kind == ElementKind::kCharAlt);
  next = pos;
  if (open_set && cp >= kSymbolFirst) return false;
  return found == positive;
}

// Whether some code point in [lo, hi] is in the character set at `pos`.
bool MatchRange(const Element* el, uint32_t pos, uint32_t lo, uint32_t hi) {
  const ElementKind kind = el[pos].kind;
  if (IsOpenSet(kind)) {  // the symbol plane is not theirs
    if (lo >= kSymbolFirst) return false;
    hi = std::min(hi, kSymbolFirst - 1);
  }
  if (kind == ElementKind::kCharAny) return true;
  // The set's ranges.
  uint32_t ranges[2 * 64];
  size_t n = 0;
  bool overflow = false;
  do {
    uint32_t a = el[pos].value, b = a;
    if (el[pos + 1].kind == ElementKind::kCharRangeUpper) {
      b = RangeTop(a, el[pos + 1].value);
      pos += 2;
    } else {
      pos += 1;
    }
    if (kind == ElementKind::kChar) {
      if (a <= hi && b >= lo) return true;
    } else if (n < 64) {
      ranges[2 * n] = a;
      ranges[2 * n + 1] = b;
      ++n;
    } else {
      overflow = true;
    }
  } while (el[pos].kind == ElementKind::kCharAlt);
  if (kind == ElementKind::kChar) return false;
  if (overflow) return true;  // a huge negated set: keep the stack (the full code point decides)
  // Negated: is [lo, hi] entirely covered by the ranges? Sweep them in order of start.
  std::pair<uint32_t, uint32_t> r[64];
  for (size_t i = 0; i < n; ++i) r[i] = {ranges[2 * i], ranges[2 * i + 1]};
  std::sort(r, r + n);
  uint64_t covered_to = lo;  // first code point not yet known to be covered
  for (size_t i = 0; i < n && covered_to <= hi; ++i) {
    if (r[i].first > covered_to) return true;  // a gap
    covered_to = std::max<uint64_t>(covered_to, uint64_t{r[i].second} + 1);
  }
  return covered_to <= hi;
}

// The most stacks a state keeps (see kExpandBudget below).
constexpr size_t kMaxStacks = 1024;

// Appends `stack` to `out` unless it is there already.
void AddStack(MatchState& out, const std::vector<uint32_t>& stack) {
  const size_t n = stack.size();
  if (out.offsets.size() > kMaxStacks) return;
  for (size_t i = 0; i + 1 < out.offsets.size(); ++i) {
    const uint32_t b = out.offsets[i], e = out.offsets[i + 1];
    if (e - b == n && (n == 0 || (out.stacks[e - 1] == stack[n - 1] &&
                                  std::equal(stack.begin(), stack.end(), out.stacks.begin() + b)))) {
      return;
    }
  }
  out.stacks.insert(out.stacks.end(), stack.begin(), stack.end());
  out.offsets.push_back(static_cast<uint32_t>(out.stacks.size()));
}

void ExpandInto(const Grammar& g, std::vector<uint32_t>& st, MatchState& out);

// The work one step may do: a grammar whose expansions branch exponentially (nested rules that
// all match the empty string) would otherwise stall the caller. Beyond it, the alternatives not
// yet expanded are dropped (Matcher's header says so).
constexpr int64_t kExpandBudget = int64_t{1} << 15;
thread_local int64_t t_budget = kExpandBudget;
// The deepest recursion of one expansion (a chain of rules or elements that match the empty
// string), so that the C++ stack holds.
constexpr int kMaxExpandDepth = 2048;
thread_local int t_depth = 0;

// Pushes each alternative of rule `rule` (with `next`, the position to return to, below it
// unless it ends the sequence) onto st and expands it. st is restored.
void ExpandRule(const Grammar& g, uint32_t rule, bool has_next, uint32_t next, std::vector<uint32_t>& st,
                MatchState& out) {
  const Element* el = g.elements.data();
  const size_t base = st.size();
  uint32_t sub = g.rule_start[rule];
  while (true) {
    st.resize(base);
    if (has_next) st.push_back(next);
    if (!IsEndOfSequence(el[sub])) st.push_back(sub);
    ExpandInto(g, st, out);
    while (!IsEndOfSequence(el[sub])) ++sub;
    if (el[sub].kind != ElementKind::kAlt) break;
    ++sub;
  }
  st.resize(base);
}

// llama_grammar_advance_stack: expands the top of st until it is a character set.
void ExpandInto(const Grammar& g, std::vector<uint32_t>& st, MatchState& out) {
  if (--t_budget < 0 || t_depth >= kMaxExpandDepth) return;
  if (st.empty()) {
    AddStack(out, st);
    return;
  }
  const Element* el = g.elements.data();
  const uint32_t pos = st.back();
  if (el[pos].kind == ElementKind::kRuleRef) {
    st.pop_back();
    ++t_depth;
    ExpandRule(g, el[pos].value, !IsEndOfSequence(el[pos + 1]), pos + 1, st, out);
    --t_depth;
    st.push_back(pos);
    return;
  }
  AddStack(out, st);
}

void ClearState(MatchState& s) {
  s.stacks.clear();
  s.offsets.assign(1, 0);
  s.partial_value = 0;
  s.partial_missing = 0;
  s.partial_length = 0;
}

// Advances every stack of `in` by code point cp into `out` (cleared first, partial cleared).
void StepCodePoint(const Grammar& g, const MatchState& in, uint32_t cp, MatchState& out) {
  thread_local std::vector<uint32_t> st;
  ClearState(out);
  t_budget = kExpandBudget;
  const Element* el = g.elements.data();
  for (size_t i = 0; i < in.num_stacks(); ++i) {
    const auto s = in.stack(i);
    if (s.empty()) continue;
    uint32_t next;
    if (!MatchChar(el, s.back(), cp, next)) continue;
    st.assign(s.begin(), s.end() - 1);
    if (!IsEndOfSequence(el[next])) st.push_back(next);
    ExpandInto(g, st, out);
  }
}

// Keeps the stacks of `in` whose top could match a code point in [lo, hi].
void PruneRange(const Grammar& g, const MatchState& in, uint32_t lo, uint32_t hi, MatchState& out) {
  out.stacks.clear();
  out.offsets.assign(1, 0);
  const Element* el = g.elements.data();
  for (size_t i = 0; i < in.num_stacks(); ++i) {
    const auto s = in.stack(i);
    if (s.empty() || !MatchRange(el, s.back(), lo, hi)) continue;
    out.stacks.insert(out.stacks.end(), s.begin(), s.end());
    out.offsets.push_back(static_cast<uint32_t>(out.stacks.size()));
  }
}

// The code points a partial sequence can still become.
bool PartialRange(uint32_t value, int missing, int length, uint32_t& lo, uint32_t& hi) {
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  lo = value << (6 * missing);
  hi = lo | ((uint32_t{1} << (6 * missing)) - 1);
  lo = std::max(lo, kMin[length]);
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  return lo <= hi;
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  std::vector<uint32_t> st;
  ClearState(state_);
  t_budget = kExpandBudget;
  ExpandRule(*grammar_, grammar_->root, false, 0, st, state_);
}

MatchState Matcher::Expand(const Grammar& g, std::span<const uint32_t> stack) {
  MatchState out;
  std::vector<uint32_t> st(stack.begin(), stack.end());
  t_budget = kExpandBudget;
  ExpandInto(g, st, out);
  return out;
}

bool Matcher::StepByte(const Grammar& g, const MatchState& in, uint8_t byte, MatchState& out) {
  if (in.partial_missing == 0) {
    if (byte < 0x80) {
      StepCodePoint(g, in, byte, out);
      return !out.empty();
    }
    int length;
    uint32_t value;
    if (byte >= 0xC2 && byte <= 0xDF) {
      length = 2;
      value = byte & 0x1F;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      length = 3;
      value = byte & 0x0F;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      length = 4;
      value = byte & 0x07;
    } else {
      ClearState(out);  // a continuation byte, or never valid in UTF-8
      return false;
    }
    uint32_t lo, hi;
    if (!PartialRange(value, length - 1, length, lo, hi)) {
      ClearState(out);
      return false;
    }
    PruneRange(g, in, lo, hi, out);
    out.partial_value = value;
    out.partial_missing = static_cast<uint8_t>(length - 1);
    out.partial_length = static_cast<uint8_t>(length);
    return !out.empty();
  }
  if ((byte & 0xC0) != 0x80) {
    ClearState(out);
    return false;
  }
  const uint32_t value = (in.partial_value << 6) | (byte & 0x3F);
  const int missing = in.partial_missing - 1;
  uint32_t lo, hi;
  if (!PartialRange(value, missing, in.partial_length, lo, hi)) {
    ClearState(out);
    return false;
  }
  if (missing == 0) {
    StepCodePoint(g, in, value, out);
    return !out.empty();
  }
  PruneRange(g, in, lo, hi, out);
  out.partial_value = value;
  out.partial_missing = static_cast<uint8_t>(missing);
  out.partial_length = in.partial_length;
  return !out.empty();
}

bool Matcher::StepBytes(const Grammar& g, const MatchState& in, std::string_view bytes, MatchState& out) {
  if (bytes.empty()) {
    out = in;
    return !out.empty();
  }
  MatchState tmp;
  const MatchState* cur = &in;
  // Ping-pong between out and tmp so that the last step writes `out`.
  MatchState* bufs[2] = {(bytes.size() % 2) ? &out : &tmp, (bytes.size() % 2) ? &tmp : &out};
  for (size_t i = 0; i < bytes.size(); ++i) {
    MatchState* dst = bufs[i % 2];
    if (!StepByte(g, *cur, static_cast<uint8_t>(bytes[i]), *dst)) {
      ClearState(out);
      return false;
    }
    cur = dst;
  }
  return true;
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  if (state_.empty()) return false;
  MatchState next;
  if (!StepBytes(*grammar_, state_, bytes, next)) return false;
  history_.push_back(std::move(state_));
  if (history_.size() > max_history_) history_.pop_front();
  state_ = std::move(next);
  return true;
}

bool Matcher::CanAcceptBytes(std::string_view bytes) const {
  if (state_.empty()) return false;
  MatchState next;
  return StepBytes(*grammar_, state_, bytes, next);
}

bool Matcher::IsAccepting() const {
  if (state_.partial_missing != 0) return false;
  for (size_t i = 0; i < state_.num_stacks(); ++i) {
    if (state_.stack(i).empty()) return true;
  }
  return false;
}

bool Matcher::IsDeadEnd() const {
  for (size_t i = 0; i < state_.num_stacks(); ++i) {
    if (!state_.stack(i).empty()) return false;
  }
  return true;
}

Status Matcher::Rollback(size_t n) {
  if (n > history_.size()) {
    return OutOfRange("grammar rollback of " + std::to_string(n) + " steps, but only " +
                      std::to_string(history_.size()) + " are remembered");
  }
  if (n == 0) return Status::Ok();
  state_ = std::move(history_[history_.size() - n]);
  history_.resize(history_.size() - n);
  return Status::Ok();
}

void Matcher::set_max_history(size_t n) {
  max_history_ = n;
  while (history_.size() > max_history_) history_.pop_front();
}

}  // namespace gemlet::grammar
