// The MTP drafter ("assistant") checkpoint for conversion: a Hugging Face folder whose
// config.json has model_type gemma4_assistant (../shared/spec/gemma4-multimodal-mtp.md §3.2)
// or llama.cpp's gemma4-assistant GGUF (the same tensors, gguf_import.h's GgufDrafterConfig),
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
#include "format/gguf.h"
#include "format/safetensors.h"
#include "model/gemma4_drafter_config.h"
#include "model/gemma4_drafter_tensors.h"
#include "tools/convert/convert.h"
#include "tools/convert/quant_plan.h"
#include "tools/convert/source.h"

namespace gemlet::convert {

struct DrafterCheckpoint {
  std::string source;
  std::string format;  // "safetensors" or "gguf"
  std::vector<std::string> files;  // the weight files (hashed for provenance)
  model::Gemma4DrafterConfig config;
  struct Item {
    model::TensorSpec spec;
    SourceTensor src;  // (unused for the token ordering)
  };
  std::vector<Item> tensors;            // DrafterTensors(config) order, without the token ordering
  std::vector<int64_t> token_ordering;  // [V] (empty without the sparse head)
  std::unique_ptr<SafetensorsFolder> safetensors;
  std::unique_ptr<GgufFile> gguf;
  std::string note;  // for the convert report: a GGUF without the sparse head (dense head only)
};

// True if `folder`'s config.json names model_type gemma4_assistant.
bool IsHfDrafterFolder(const std::string& folder);
// True if `path` is a GGUF file whose general.architecture is gemma4-assistant.
bool IsGgufDrafterFile(const std::string& path);
bool IsDrafterSource(const std::string& path);  // either of the two

// Every tensor of DrafterTensors(config) must be present with its shape (floats; the token
// ordering I64, a permutation of the vocabulary); any other tensor is an error.
Result<DrafterCheckpoint> LoadHfDrafter(const std::string& folder);

// The same for a gemma4-assistant GGUF (names: TensorSpec::gguf_name). The token ordering may be
// F32 (what llama.cpp's converter makes of the I64 buffer), I32 or I64 ids; rope_freqs.weight
// is read into the config. Without the centroids and the token ordering the drafter has no
// sparse head (use_ordered_embeddings false) and `note` says so.
Result<DrafterCheckpoint> LoadGgufDrafter(const std::string& path);

// LoadHfDrafter for a folder, LoadGgufDrafter for a file.
Result<DrafterCheckpoint> LoadDrafter(const std::string& path);

// Writes the drafter's tensors under `plan` (the token ordering as f32 ids) and adds one
// entry per tensor to `report`. The caller sets the metadata (DrafterMetadata).
Status WriteDrafterTensors(GemletWriter& writer, const DrafterCheckpoint& ck, const QuantPlan& plan,
                           ThreadPool& pool, ConvertReport* report);

}  // namespace gemlet::convert
