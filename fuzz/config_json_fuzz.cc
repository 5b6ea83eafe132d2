// libFuzzer target: a checkpoint's config.json as the converter reads it (HfTextConfig, then
// model::Gemma4Config::FromJson; and as an MTP drafter's, model::Gemma4DrafterConfig::FromJson)
// on arbitrary text. Nothing may crash; a config that is accepted must validate, round-trip
// through ToJson, and give a tensor table whose shapes are all positive.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "model/gemma4_config.h"
#include "model/gemma4_drafter_config.h"
#include "model/gemma4_drafter_tensors.h"
#include "model/gemma4_tensors.h"
#include "tools/convert/hf_import.h"

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "config_json_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j =
      nlohmann::json::parse(data, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  if (auto d = gemlet::model::Gemma4DrafterConfig::FromJson(j); d.ok()) {
    Require(d->Validate().ok(), "drafter FromJson accepted a config that Validate rejects");
    auto again = gemlet::model::Gemma4DrafterConfig::FromJson(d->ToJson());
    Require(again.ok(), "drafter FromJson(ToJson()) failed");
    Require(again->ToJson() == d->ToJson(), "drafter FromJson(ToJson()) changed the config");
    for (const auto& spec : gemlet::model::DrafterTensors(*d)) {
      for (int64_t dim : spec.shape) Require(dim > 0, "a drafter tensor dimension that is not positive");
    }
    return 0;
  }
  auto text = gemlet::convert::HfTextConfig(j, "fuzz/config.json");
  if (!text.ok()) return 0;
  auto cfg = gemlet::model::Gemma4Config::FromJson(*text);
  if (!cfg.ok()) return 0;
  Require(cfg->Validate().ok(), "FromJson accepted a config that Validate rejects");
  auto again = gemlet::model::Gemma4Config::FromJson(cfg->ToJson());
  Require(again.ok(), "FromJson(ToJson()) failed");
  Require(again->ToJson() == cfg->ToJson(), "FromJson(ToJson()) changed the config");
  if (cfg->num_layers > 64) return 0;  // the table grows with the layer count; enough for coverage
  for (const auto& spec : gemlet::model::ExpectedTensors(*cfg)) {
    for (int64_t d : spec.shape) Require(d > 0, "a tensor dimension that is not positive");
  }
  return 0;
}
