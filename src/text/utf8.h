// Strict UTF-8 helpers (RFC 3629): no overlong forms, no surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF. Used by the tokenizer (decoding byte-fallback runs exactly as Rust's
// String::from_utf8 accepts them), the streaming decoder and the chat code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gemlet::utf8 {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Decodes the character starting at s[pos]. Returns its length (1..4) and sets *cp, or 0 if the
// bytes there are not a complete, valid character (then *cp is unspecified). pos < s.size().
inline int DecodeChar(std::string_view s, size_t pos, uint32_t* cp) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + pos;
  const size_t avail = s.size() - pos;
  const uint8_t b0 = p[0];
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  // Lead byte -> length and the valid range of the second byte (Unicode Table 3-7).
  int len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 < 0xC2) return 0;  // continuation byte or overlong 2-byte lead
  if (b0 < 0xE0) {
    len = 2;
  } else if (b0 < 0xF0) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 < 0xF5) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (avail < static_cast<size_t>(len) || p[1] < lo || p[1] > hi) return 0;
  if (len == 2) {
    *cp = ((b0 & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    return 2;
  }
  if ((p[2] & 0xC0) != 0x80) return 0;
  if (len == 3) {
    *cp = ((b0 & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    return 3;
  }
  if ((p[3] & 0xC0) != 0x80) return 0;
  *cp = ((b0 & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  return 4;
}

// True if every byte of `s` belongs to a valid character.
bool IsValid(std::string_view s);

// Appends the UTF-8 form of `cp` (U+FFFD for surrogates and values above U+10FFFF).
void Append(uint32_t cp, std::string* out);

// Number of bytes at the end of `s` that form the start of a character that is still
// incomplete but could become valid with more bytes (0..3). IsValid(s minus that tail) holds
// when IsValid(s + continuation) can.
size_t IncompleteTailLength(std::string_view s);

// `s` with every invalid byte replaced by U+FFFD (valid characters are kept as they are).
std::string Sanitize(std::string_view s);

// `s` without its leading and trailing ASCII whitespace (space, \t, \n, \r, \f, \v), as the chat
// template trims a message.
inline std::string_view TrimAsciiSpace(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace gemlet::utf8
