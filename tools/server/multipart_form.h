// multipart/form-data request bodies (RFC 7578), as OpenAI's /v1/audio/transcriptions and
// /v1/audio/translations take them: parts named by Content-Disposition (`name`, and
// `filename` for a file), each with its bytes. Bodies come from clients, so every malformed
// body (no boundary, a part without its headers' end or its closing boundary, too many parts)
// is an InvalidArgument naming what is wrong, for a 400; fuzz/multipart_form_fuzz.cc covers it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gemlet::server {

struct FormPart {
  std::string name;
  std::string filename;      // "" for a plain field
  std::string content_type;  // the part's Content-Type ("" if none)
  std::string_view data;     // into the body
};

struct MultipartForm {
  std::vector<FormPart> parts;
  // The first part called `name`, or null.
  const FormPart* Find(std::string_view name) const;
};

// The boundary parameter of a `multipart/form-data; boundary=...` Content-Type (quoted or
// not); InvalidArgument for another type or no boundary.
Result<std::string> MultipartBoundary(std::string_view content_type);

// The parts of `body` (which must outlive the result). At most `max_parts` parts.
Result<MultipartForm> ParseMultipartForm(std::string_view body, std::string_view boundary, size_t max_parts = 64);

}  // namespace gemlet::server
