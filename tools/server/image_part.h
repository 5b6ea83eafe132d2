// Image parts of API requests, in one place for every API the server speaks: the bytes of an
// OpenAI `image_url` (a `data:image/...;base64,` URL), of an Ollama `images` entry (bare
// base64) and of an Anthropic image block (`source.type` "base64" with `media_type`). The
// bytes are then decoded and encoded by runtime::ImageEncoder, whose errors name the part too.
// http(s) URLs are refused here (the server makes no requests to other hosts unless
// --allow-image-urls: request_parser keeps them for api_handlers to fetch, image_fetch.h).
//
// Errors are InvalidArgument with a message that names the part (e.g.
// "messages[0].content[1].image_url.url"), for a 400 response.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gemlet::server {

struct ImageLimits {
  size_t max_bytes = 20u << 20;  // decoded bytes of one image
};

// The bytes of a `data:` URL whose media type is image/* (image/png, image/jpeg, image/webp,
// or any image/ type: the decoder sniffs the content) with base64 data.
Result<std::vector<uint8_t>> ImageFromUrl(std::string_view url, const std::string& part,
                                          const ImageLimits& limits = {});
// Standard base64 (RFC 4648 §4, '=' padding optional, no whitespace but CR/LF, which are
// skipped) of an image; `media_type` "" or image/*.
Result<std::vector<uint8_t>> ImageFromBase64(std::string_view base64, std::string_view media_type,
                                             const std::string& part, const ImageLimits& limits = {});

}  // namespace gemlet::server
