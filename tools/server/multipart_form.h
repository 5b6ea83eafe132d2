// A multipart/form-data request body (RFC 7578), as OpenAI's /v1/audio/transcriptions and
// /v1/audio/translations take it: parts named by their Content-Disposition (`name`, and
// `filename` for a file), each with its bytes. cpp-httplib parses the body (http_server.cc
// collects its parts here, with a cap on their count and size); audio_api.h reads the fields.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gemlet::server {

struct FormPart {
  std::string name;
  std::string filename;      // "" for a plain field
  std::string content_type;  // the part's Content-Type ("" if none)
  std::string data;
};

struct MultipartForm {
  std::vector<FormPart> parts;
  // The first part called `name`, or null.
  const FormPart* Find(std::string_view name) const {
    for (const FormPart& p : parts) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }
};

}  // namespace gemlet::server
