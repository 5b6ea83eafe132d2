// Audio parts of API requests: OpenAI's `input_audio` content part on chat completions,
// {"type": "input_audio", "input_audio": {"data": BASE64, "format": "wav" | "mp3" | ...}}.
// The bytes are then decoded and encoded by runtime::AudioEncoder (libsndfile sniffs the
// container, so `format` is checked against what it can read, not trusted), whose errors name
// the part too. Errors are InvalidArgument naming the part, for a 400.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gemlet::server {

struct AudioLimits {
  size_t max_bytes = 25u << 20;  // decoded bytes of one clip (OpenAI's upload limit)
};

// The formats an input_audio part may name: wav, mp3, flac, ogg, opus, oga (and "" for none).
bool KnownAudioFormat(std::string_view format);

// The bytes of an input_audio part's `data`: bare base64, or a data:audio/...;base64, URL.
// `format` must be a KnownAudioFormat.
Result<std::vector<uint8_t>> AudioFromBase64(std::string_view data, std::string_view format, const std::string& part,
                                             const AudioLimits& limits = {});

}  // namespace gemlet::server
