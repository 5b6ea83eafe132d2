// libFuzzer target: the Hugging Face tokenizer reader (format/tokenizer_json.h,
// ParseHfTokenizer) on arbitrary file text, then the runtime tokenizer built from what it
// accepts. The input is tokenizer.json, optionally followed by a NUL byte and
// tokenizer_config.json, and another NUL byte and generation_config.json. Nothing may crash;
// an accepted tokenizer has one score and one type per piece and merges of existing ids, and
// if the runtime tokenizer takes it, encoding gives ids inside the vocabulary and decoding
// them succeeds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "format/tokenizer_json.h"
#include "text/tokenizer.h"

namespace {

void Require(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_json_fuzz: %s\n", what.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::string parts[3];
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t nul = i < 2 ? in.find('\0', start) : std::string::npos;
    parts[i] = in.substr(start, nul == std::string::npos ? std::string::npos : nul - start);
    if (nul == std::string::npos) break;
    start = nul + 1;
  }
  auto info = gemlet::ParseHfTokenizer(parts[0], parts[1], parts[2], "fuzz/tokenizer.json");
  if (!info.ok()) return 0;
  const gemlet::Vocab& v = info->vocab;
  const int64_t n = static_cast<int64_t>(v.size());
  Require(v.scores.size() == v.size() && v.types.size() == v.size(), "scores/types do not match the pieces");
  for (const auto& [l, r] : v.merges) {
    Require(l >= 0 && l < n && r >= 0 && r < n, "a merge of an id outside the vocabulary");
  }
  auto tok = gemlet::Tokenizer::Create(v, info->special);
  if (!tok.ok()) return 0;
  for (const char* text : {"Hello world", "  \n\n<|turn>user\n", "\xE2\x96\x81x\xF0\x9F\x98\x80", ""}) {
    auto ids = tok->Encode(text);
    Require(ids.ok(), std::string("Encode failed: ") + (ids.ok() ? "" : ids.status().ToString()));
    for (int32_t id : *ids) Require(id >= 0 && id < n, "an encoded id outside the vocabulary");
    auto back = tok->Decode(*ids);
    Require(back.ok(), "Decode of encoded ids failed");
  }
  return 0;
}
