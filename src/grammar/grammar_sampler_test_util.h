// Random texts of a grammar, for tests: a walk over the character-level matcher (matcher.h)
// that picks a random code point among those some stack's top allows, until the start rule
// can end. Biased to finish: past a target length it prefers the closing marks '"', '}', ']'
// (where a small character set, not a string's "any character", allows them) and else the code points of the smallest character set on top of a stack (a literal's next
// character rather than "any character"), and it stops as soon as the grammar may end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace gemlet::grammar::testing {

using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive, any order

// The code points the character set at grammar element `at` (kChar, kCharNot, kCharAny)
// matches, without the surrogates (and, for `.` and negated sets, without the token-symbol
// plane U+100000.., which only a positive set matches: token_symbols.h).
inline CodePointRanges CharSetAt(const Grammar& g, uint32_t at) {
  const Element& first = g.elements[at];
  CodePointRanges set;
  if (first.kind == ElementKind::kCharAny) return {{0, 0xD7FF}, {0xE000, 0xFFFFF}};
  uint32_t i = at;
  for (;;) {
    uint32_t lo = g.elements[i].value, hi = lo;
    ++i;
    if (g.elements[i].kind == ElementKind::kCharRangeUpper) hi = g.elements[i++].value;
    set.push_back({lo, hi});
    if (g.elements[i].kind != ElementKind::kCharAlt) break;
  }
  std::sort(set.begin(), set.end());
  if (first.kind == ElementKind::kCharNot) {
    CodePointRanges neg;
    uint32_t next = 0;
    for (auto [lo, hi] : set) {
      if (lo > next) neg.push_back({next, lo - 1});
      next = std::max(next, hi + 1);
    }
    if (next <= 0xFFFFF) neg.push_back({next, 0xFFFFF});
    set = neg;
  }
  CodePointRanges out;  // without the surrogates
  for (auto [lo, hi] : set) {
    if (lo < 0x100000 && hi >= 0x100000) hi = 0xFFFFF;  // a range into the symbol plane stops there
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.push_back({lo, hi});
      continue;
    }
    if (lo < 0xD800) out.push_back({lo, 0xD7FF});
    if (hi > 0xDFFF) out.push_back({0xE000, hi});
  }
  return out;
}

inline std::string Utf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

inline uint64_t Size(const CodePointRanges& s) {
  uint64_t n = 0;
  for (auto [lo, hi] : s) n += hi - lo + 1;
  return n;
}

// A random member of `s` (non-empty); printable ASCII and '\n' three times in four when any.
inline uint32_t PickCodePoint(const CodePointRanges& s, std::mt19937_64& rng) {
  std::vector<uint32_t> ascii;
  for (auto [lo, hi] : s)
    for (uint32_t c = std::max<uint32_t>(lo, 0x20); c <= std::min<uint32_t>(hi, 0x7E); ++c)
      ascii.push_back(c);
  for (auto [lo, hi] : s)
    if (lo <= '\n' && '\n' <= hi) ascii.push_back('\n');
  if (!ascii.empty() && rng() % 4 != 0) return ascii[rng() % ascii.size()];
  const auto& [lo, hi] = s[rng() % s.size()];
  return lo + static_cast<uint32_t>(rng() % (uint64_t{hi} - lo + 1));
}

// A random text of the grammar at most max_bytes long; nullopt if the walk got longer, or
// reached a state where nothing is allowed and the grammar cannot end (a grammar bug). Then
// *partial (if given) is the text so far.
inline std::optional<std::string> SampleText(const std::shared_ptr<const Grammar>& g,
                                             std::mt19937_64& rng, size_t max_bytes = 20000,
                                             std::string* partial = nullptr) {
  Matcher m(g);
  m.set_max_history(1);
  std::string text;
  const size_t target = 8 + rng() % 120;
  for (;;) {
    const MatchState& st = m.state();
    std::vector<CodePointRanges> tops;
    for (size_t i = 0; i < st.num_stacks(); ++i) {
      auto stack = st.stack(i);
      if (stack.empty()) continue;  // the start rule has ended on this stack
      CodePointRanges s = CharSetAt(*g, stack.back());
      if (!s.empty()) tops.push_back(std::move(s));
    }
    const bool late = text.size() >= target;
    if (m.IsAccepting() && (tops.empty() || late || rng() % 4 == 0)) return text;
    if (tops.empty() || text.size() > max_bytes) {
      if (partial) *partial = text;
      return std::nullopt;
    }
    CodePointRanges all;
    for (const auto& s : tops) all.insert(all.end(), s.begin(), s.end());
    uint32_t c;
    if (late && rng() % 10 != 0) {
      std::vector<uint32_t> closers;  // from small sets only: not a string's "any character"
      for (uint32_t k : {'"', '}', ']'})
        for (const auto& set : tops) {
          if (Size(set) > 16) continue;
          bool in = false;
          for (auto [lo, hi] : set) in = in || (lo <= k && k <= hi);
          if (in) {
            closers.push_back(k);
            break;
          }
        }
      if (!closers.empty()) {
        c = closers[rng() % closers.size()];
      } else {
        // Not a lone '\\' (an escape starts a longer way to the end) unless it is all.
        auto escape = [](const CodePointRanges& s) {
          return s.size() == 1 && s[0].first == '\\' && s[0].second == '\\';
        };
        bool others = false;
        for (const auto& s : tops) others = others || !escape(s);
        uint64_t least = UINT64_MAX;
        for (const auto& s : tops)
          if (!others || !escape(s)) least = std::min(least, Size(s));
        std::vector<const CodePointRanges*> smallest;  // ties: any of them
        for (const auto& s : tops)
          if (Size(s) == least && (!others || !escape(s))) smallest.push_back(&s);
        c = PickCodePoint(*smallest[rng() % smallest.size()], rng);
      }
    } else {
      c = PickCodePoint(all, rng);
    }
    const std::string bytes = Utf8(c);
    if (!m.AcceptBytes(bytes)) {  // the top said it was allowed
      if (partial) *partial = text + "<" + bytes + " refused>";
      return std::nullopt;
    }
    text += bytes;
  }
}

}  // namespace gemlet::grammar::testing
