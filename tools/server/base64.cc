#include "tools/server/base64.h"

#include <cctype>

namespace gemlet::server {
namespace {

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

bool StartsNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

Result<std::vector<uint8_t>> DecodeBase64(std::string_view b64, const std::string& part, size_t max_bytes,
                                          std::string_view what) {
  std::vector<uint8_t> out;
  out.reserve(b64.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < b64.size(); ++i) {
    const char c = b64[i];
    if (c == '\r' || c == '\n') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = Sextet(c);
    if (v < 0 || pad > 0) {
      return InvalidArgument("'" + part + "' is not valid base64 (character " + std::to_string(i) + ")");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
      if (out.size() > max_bytes) {
        return InvalidArgument("'" + part + "' is larger than the " + std::string(what) + " limit of " +
                               std::to_string(max_bytes) + " bytes");
      }
    }
  }
  if (pad > 2 || bits >= 6) return InvalidArgument("'" + part + "' is not valid base64 (its length)");
  if (out.empty()) return InvalidArgument("'" + part + "' holds no " + std::string(what) + " data");
  return out;
}

bool IsMediaType(std::string_view t, std::string_view prefix) {
  return t.size() > prefix.size() + 1 && StartsNoCase(t, prefix) && t[prefix.size()] == '/';
}

Result<std::string_view> DataUrlPayload(std::string_view url, std::string_view prefix, const std::string& part,
                                        std::string_view* type_out) {
  const std::string example = "data:" + std::string(prefix) + (prefix == "image" ? "/png" : "/wav") + ";base64,...";
  if (!StartsNoCase(url, "data:")) return InvalidArgument("'" + part + "' must be a data: URL (" + example + ")");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return InvalidArgument("'" + part + "' is a data: URL without ','");
  std::string_view meta = url.substr(5, comma - 5);
  const std::string_view suffix = ";base64";
  if (meta.size() < suffix.size() || meta.substr(meta.size() - suffix.size()) != suffix) {
    return InvalidArgument("'" + part + "' must be a base64 data: URL (" + example + ")");
  }
  meta.remove_suffix(suffix.size());
  const std::string_view type = meta.substr(0, meta.find(';'));
  if (!IsMediaType(type, prefix)) {
    return InvalidArgument("'" + part + "' is not " + (prefix == "audio" ? "audio" : "an " + std::string(prefix)) +
                           ": media type '" + std::string(type) + "'");
  }
  if (type_out) *type_out = type;
  return url.substr(comma + 1);
}

}  // namespace gemlet::server
