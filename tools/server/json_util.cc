#include "tools/server/json_util.h"

namespace gemlet::server {

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        max_depth = depth;
        if (max_depth > limit) return limit + 1;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (int k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += len;
  }
  return true;
}

size_t CompleteUtf8Prefix(std::string_view s) {
  // Look back at most 3 bytes for the start of a multi-byte sequence.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xc0) == 0x80) continue;  // continuation byte: keep looking
    int len = 1;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
    }
    return static_cast<size_t>(len) > back ? n - back : n;
  }
  return n;
}

ApiOr<Json> ParseRequestBody(std::string_view body) {
  if (body.empty()) return BadRequest("the request body is empty; expected a JSON object");
  if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    return BadRequest("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels");
  }
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions for the position and reason (only on the error path).
    std::string why = "invalid JSON";
    try {
      Json ignored = Json::parse(body.begin(), body.end());
      (void)ignored;
    } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number too large
      why = e.what();
      const size_t close = why.find("] ");
      if (why.rfind("[json.exception.", 0) == 0 && close != std::string::npos) why = why.substr(close + 2);
    }
    return BadRequest("could not parse the JSON body of the request: " + why);
  }
  if (!j.is_object()) return BadRequest("the request body must be a JSON object");
  return j;
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace gemlet::server
