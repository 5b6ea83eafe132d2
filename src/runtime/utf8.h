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
int DecodeChar(std::string_view s, size_t pos, uint32_t* cp);

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

}  // namespace gemlet::utf8
