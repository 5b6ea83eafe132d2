// libFuzzer target: the GGUF parser (GgufFile::FromMemory), every metadata value decoded, the
// tokenizer import, and the gemma4 and gemma4-assistant config mappings with the tensor table
// checks that the converter does. Nothing may crash or read outside the input.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_vocab.h"
#include "model/gemma4_config.h"
#include "model/gemma4_drafter_config.h"
#include "model/gemma4_drafter_tensors.h"
#include "model/gemma4_tensors.h"
#include "tools/convert/gguf_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);
  auto f = gemlet::GgufFile::FromMemory(buf.data(), buf.size(), "fuzz.gguf");
  if (!f.ok()) return 0;
  const gemlet::GgufFile& g = **f;
  volatile uint8_t sink = 0;
  for (const std::string& k : g.keys()) {
    const gemlet::GgufValue* v = g.Find(k);
    (void)g.ValueToJson(*v, 64).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    (void)g.GetU32(k);
    (void)g.GetI64(k);
    (void)g.GetF64(k);
    (void)g.GetBool(k);
    (void)g.GetString(k);
    (void)g.GetIntArray(k);
    (void)g.GetF32Array(k);
    (void)g.GetBoolArray(k);
  }
  for (const auto& t : g.tensors()) {
    if (t.nbytes > 0) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];
  }
  (void)gemlet::TokenizerFromGguf(g);
  // The tensor tables grow with the layer count; 64 layers are enough for coverage.
  if (auto j = gemlet::convert::GgufTextConfig(g); j.ok()) {
    auto cfg = gemlet::model::Gemma4Config::FromJson(*j);
    if (cfg.ok() && cfg->num_layers <= 64) {
      for (const auto& spec : gemlet::model::ExpectedTensors(*cfg)) {
        const gemlet::GgufTensorInfo* t = g.FindTensor(spec.gguf_name);
        if (t && t->shape == spec.shape) sink = sink ^ 1;
      }
    }
  }
  if (auto j = gemlet::convert::GgufDrafterConfig(g); j.ok()) {
    auto cfg = gemlet::model::Gemma4DrafterConfig::FromJson(*j);  // (its layer count is at most 64)
    if (cfg.ok()) {
      for (const auto& spec : gemlet::model::DrafterTensors(*cfg)) {
        const gemlet::GgufTensorInfo* t = g.FindTensor(spec.gguf_name);
        if (t && t->shape == spec.shape) sink = sink ^ 1;
      }
    }
  }
  return 0;
}
