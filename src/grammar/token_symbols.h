// Control tokens inside grammar text. A grammar over a model's tokens sometimes has to name a
// control token (a tool call's opening marker) that no run of ordinary tokens may spell. The
// convention: token id t (t ≤ kMaxSymbolToken) is the code point U+100000 + t, in plane 16
// (private use), which a vocabulary view (runtime/grammar_constraint.h) gives that token as
// its text, while never allowing the pieces and bytes that could write such a code point.
// The matcher lets only a positive set or literal match a symbol: `.` and negated classes
// ([^"\\]) never do, so a control token appears only where the grammar names it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gemlet::grammar {

inline constexpr uint32_t kTokenSymbolBase = 0x100000;
inline constexpr int32_t kMaxSymbolToken = 0xFFFD;  // U+10FFFD, the plane's last character

// The symbol of token `id` as UTF-8 (4 bytes, led by 0xF4).
inline std::string TokenSymbolUtf8(int32_t id) {
  const uint32_t cp = kTokenSymbolBase + static_cast<uint32_t>(id);
  std::string s;
  s += static_cast<char>(0xF0 | (cp >> 18));
  s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  s += static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}

// The symbol of token `id` as a GBNF escape ("\U00100030" for id 48), for literals and classes.
inline std::string TokenSymbolGbnf(int32_t id) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\U%08X", kTokenSymbolBase + static_cast<uint32_t>(id));
  return buf;
}

// A GBNF class range of every symbol ("\U00100000-\U0010FFFF").
inline std::string TokenSymbolRange() { return "\\U00100000-\\U0010FFFF"; }

}  // namespace gemlet::grammar
