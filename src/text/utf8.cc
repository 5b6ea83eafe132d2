#include "text/utf8.h"

namespace gemlet::utf8 {

namespace {

inline bool IsCont(uint8_t b) { return (b & 0xC0) == 0x80; }

// Valid range of the second byte for a given lead byte (Unicode Table 3-7), or {1, 0} if the
// lead byte can never start a character.
struct Range {
  uint8_t lo, hi;
  int len;
};
inline Range LeadInfo(uint8_t b) {
  if (b < 0x80) return {0, 0, 1};
  if (b < 0xC2) return {1, 0, 0};  // continuation byte or overlong 2-byte lead
  if (b < 0xE0) return {0x80, 0xBF, 2};
  if (b == 0xE0) return {0xA0, 0xBF, 3};
  if (b == 0xED) return {0x80, 0x9F, 3};  // no surrogates
  if (b < 0xF0) return {0x80, 0xBF, 3};
  if (b == 0xF0) return {0x90, 0xBF, 4};
  if (b < 0xF4) return {0x80, 0xBF, 4};
  if (b == 0xF4) return {0x80, 0x8F, 4};  // <= U+10FFFF
  return {1, 0, 0};
}

}  // namespace

bool IsValid(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    uint32_t cp;
    const int len = DecodeChar(s, i, &cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void Append(uint32_t cp, std::string* out) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t IncompleteTailLength(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  // A lead byte at most 3 bytes before the end.
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t b = p[n - back];
    if (IsCont(b)) continue;
    const Range r = LeadInfo(b);
    if (r.len <= static_cast<int>(back)) return 0;  // ASCII, invalid, or complete
    // Check the bytes present so far could still be a valid prefix.
    if (back >= 2 && (p[n - back + 1] < r.lo || p[n - back + 1] > r.hi)) return 0;
    return back;
  }
  return 0;
}

std::string Sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp;
    const int len = DecodeChar(s, i, &cp);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  return out;
}

}  // namespace gemlet::utf8
