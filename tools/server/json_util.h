// JSON helpers for the server: parsing untrusted request bodies (size, nesting depth and
// UTF-8 checked before nlohmann::json sees them) and dumping text that may hold invalid UTF-8.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tools/server/api_error.h"

namespace gemlet::server {

using Json = nlohmann::json;

// Deepest array/object nesting a request may use. OpenAI requests need about 10 levels (tool
// parameter schemas nest more); 64 leaves room while keeping hostile input cheap.
constexpr int kMaxJsonDepth = 64;

// Parses a request body that must be a JSON object. Errors are 400 with a message that says
// what is wrong (invalid JSON at byte N, too deep, not an object).
ApiOr<Json> ParseRequestBody(std::string_view body);

// Maximum nesting depth of the JSON text (brackets outside strings); stops counting once
// `limit` is exceeded and returns limit + 1.
int JsonNestingDepth(std::string_view text, int limit);

// True if `s` is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF).
bool IsValidUtf8(std::string_view s);
// Length of the longest prefix of `s` that ends on a UTF-8 character boundary and does not
// end inside an incomplete sequence (invalid bytes count as complete).
size_t CompleteUtf8Prefix(std::string_view s);

// Compact dump; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string Dump(const Json& j);

}  // namespace gemlet::server
