// The MTP drafter ("assistant") checkpoint for conversion: a Hugging Face folder whose
// config.json has model_type gemma4_assistant (../shared/spec/gemma4-multimodal-mtp.md §3.2),
// and how its tensors are written into a .gemlet file, on their own or as a second section
// of the target's file (names under model::kDrafterPrefix, the config under the metadata key
// model::kDrafterMetadataKey).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/thread_pool.h"
#include "format/gemlet_writer.h"
#include "format/safetensors.h"
#include "model/gemma4_drafter_config.h"
#include "model/gemma4_drafter_tensors.h"
#include "tools/convert/convert.h"
#include "tools/convert/quant_plan.h"
#include "tools/convert/source.h"

namespace gemlet::convert {

struct DrafterCheckpoint {
  std::string source;
  std::vector<std::string> files;  // the weight files (hashed for provenance)
  model::Gemma4DrafterConfig config;
  struct Item {
    model::TensorSpec spec;
    SourceTensor src;  // (unused for the token ordering)
  };
  std::vector<Item> tensors;            // DrafterTensors(config) order, without the token ordering
  std::vector<int64_t> token_ordering;  // [V] (empty without the sparse head)
  std::unique_ptr<SafetensorsFolder> safetensors;
};

// True if `folder`'s config.json names model_type gemma4_assistant.
bool IsHfDrafterFolder(const std::string& folder);

// Every tensor of DrafterTensors(config) must be present with its shape (floats; the token
// ordering I64, a permutation of the vocabulary); any other tensor is an error.
Result<DrafterCheckpoint> LoadHfDrafter(const std::string& folder);

// Writes the drafter's tensors under `plan` (the token ordering as f32 ids) and adds one
// entry per tensor to `report`. The caller sets the metadata (DrafterMetadata).
Status WriteDrafterTensors(GemletWriter& writer, const DrafterCheckpoint& ck, const QuantPlan& plan,
                           ThreadPool& pool, ConvertReport* report);

}  // namespace gemlet::convert
