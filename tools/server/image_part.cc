#include "tools/server/image_part.h"

#include "tools/server/base64.h"

namespace gemlet::server {

Result<std::vector<uint8_t>> ImageFromBase64(std::string_view b64, std::string_view media_type,
                                             const std::string& part, const ImageLimits& limits) {
  if (!media_type.empty() && !IsMediaType(media_type, "image")) {
    return InvalidArgument("'" + part + "' is not an image: media type '" + std::string(media_type) + "'");
  }
  return DecodeBase64(b64, part, limits.max_bytes, "image");
}

Result<std::vector<uint8_t>> ImageFromUrl(std::string_view url, const std::string& part, const ImageLimits& limits) {
  if (StartsNoCase(url, "http://") || StartsNoCase(url, "https://")) {
    return InvalidArgument("'" + part + "': image URLs are not fetched by this server; send the image as a " +
                           "data: URL (data:image/png;base64,...)");
  }
  std::string_view type;
  ASSIGN_OR_RETURN(std::string_view payload, DataUrlPayload(url, "image", part, &type));
  return ImageFromBase64(payload, type, part, limits);
}

}  // namespace gemlet::server
