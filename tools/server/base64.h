// Base64 as API requests carry media (RFC 4648 §4, the standard alphabet): OpenAI's data:
// URLs and input_audio parts, Ollama's images, Anthropic's image blocks. The input comes from
// clients, so every malformed string is an InvalidArgument naming the request part.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gemlet::server {

// The bytes of `b64` ('=' padding optional; CR and LF are skipped, no other whitespace).
// `what` names the content in errors ("image", "audio"); more than `max_bytes` decoded bytes,
// an empty result, a character outside the alphabet or a bad length is an error naming `part`.
Result<std::vector<uint8_t>> DecodeBase64(std::string_view b64, const std::string& part, size_t max_bytes,
                                          std::string_view what);

// True if `s` begins with `prefix`, compared without case (`prefix` in lower case).
bool StartsNoCase(std::string_view s, std::string_view prefix);

// True if `media_type` is "<prefix>/<something>", the prefix compared without case
// ("image", "audio").
bool IsMediaType(std::string_view media_type, std::string_view prefix);

// The base64 payload of a `data:<type>;base64,<payload>` URL whose type is `prefix`/*, with
// its media type in *type (may be null). An error naming `part` otherwise.
Result<std::string_view> DataUrlPayload(std::string_view url, std::string_view prefix, const std::string& part,
                                        std::string_view* type);

}  // namespace gemlet::server
