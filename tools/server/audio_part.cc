#include "tools/server/audio_part.h"

#include "tools/server/base64.h"

namespace gemlet::server {

bool KnownAudioFormat(std::string_view format) {
  for (std::string_view f : {"", "wav", "mp3", "flac", "ogg", "opus", "oga"}) {
    if (format == f) return true;
  }
  return false;
}

Result<std::vector<uint8_t>> AudioFromBase64(std::string_view data, std::string_view format, const std::string& part,
                                             const AudioLimits& limits) {
  if (!KnownAudioFormat(format)) {
    return InvalidArgument("'" + part + ".format' must be one of wav, mp3, flac, ogg, opus, got '" +
                           std::string(format) + "'");
  }
  const std::string data_part = part + ".data";
  if (StartsNoCase(data, "data:")) {
    ASSIGN_OR_RETURN(data, DataUrlPayload(data, "audio", data_part, nullptr));
  }
  return DecodeBase64(data, data_part, limits.max_bytes, "audio");
}

}  // namespace gemlet::server
