#include "tools/server/image_part.h"

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

bool IsImageType(std::string_view t) {
  if (t.size() <= 6) return false;
  for (size_t i = 0; i < 6; ++i) {
    if (std::tolower(static_cast<unsigned char>(t[i])) != "image/"[i]) return false;
  }
  return true;
}

}  // namespace

Result<std::vector<uint8_t>> ImageFromBase64(std::string_view b64, std::string_view media_type,
                                             const std::string& part, const ImageLimits& limits) {
  if (!media_type.empty() && !IsImageType(media_type)) {
    return InvalidArgument("'" + part + "' is not an image: media type '" + std::string(media_type) + "'");
  }
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
      if (out.size() > limits.max_bytes) {
        return InvalidArgument("'" + part + "' is larger than the image limit of " +
                               std::to_string(limits.max_bytes) + " bytes");
      }
    }
  }
  if (pad > 2 || bits >= 6) return InvalidArgument("'" + part + "' is not valid base64 (its length)");
  if (out.empty()) return InvalidArgument("'" + part + "' holds no image data");
  return out;
}

Result<std::vector<uint8_t>> ImageFromUrl(std::string_view url, const std::string& part, const ImageLimits& limits) {
  auto starts = [&](std::string_view p) {
    if (url.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(url[i])) != p[i]) return false;
    }
    return true;
  };
  if (starts("http://") || starts("https://")) {
    return InvalidArgument("'" + part + "': image URLs are not fetched by this server; send the image as a " +
                           "data: URL (data:image/png;base64,...)");
  }
  if (!starts("data:")) return InvalidArgument("'" + part + "' must be a data: URL (data:image/png;base64,...)");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return InvalidArgument("'" + part + "' is a data: URL without ','");
  std::string_view meta = url.substr(5, comma - 5);
  const std::string_view suffix = ";base64";
  if (meta.size() < suffix.size() || meta.substr(meta.size() - suffix.size()) != suffix) {
    return InvalidArgument("'" + part + "' must be a base64 data: URL (data:image/png;base64,...)");
  }
  meta.remove_suffix(suffix.size());
  const std::string_view type = meta.substr(0, meta.find(';'));
  if (!IsImageType(type)) {
    return InvalidArgument("'" + part + "' is not an image: media type '" + std::string(type) + "'");
  }
  return ImageFromBase64(url.substr(comma + 1), type, part, limits);
}

}  // namespace gemlet::server
