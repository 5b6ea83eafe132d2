// libFuzzer target: the multipart/form-data parser of /v1/audio/transcriptions and
// /v1/audio/translations (tools/server/multipart_form.h). The input is a Content-Type value,
// a newline, and the body. Parsing must not crash, and every part it returns must lie inside
// the body, within the part limit.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tools/server/multipart_form.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  auto boundary = gemlet::server::MultipartBoundary(in.substr(0, nl));
  if (!boundary.ok()) return 0;
  const std::string_view body = in.substr(nl + 1);
  auto form = gemlet::server::ParseMultipartForm(body, *boundary, 8);
  if (!form.ok()) return 0;
  if (form->parts.size() > 8) {
    std::fprintf(stderr, "multipart_form_fuzz: more parts than the limit\n");
    std::abort();
  }
  for (const auto& p : form->parts) {
    if (p.data.data() < body.data() || p.data.data() + p.data.size() > body.data() + body.size()) {
      std::fprintf(stderr, "multipart_form_fuzz: a part outside the body\n");
      std::abort();
    }
  }
  return 0;
}
