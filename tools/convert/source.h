// A checkpoint opened for conversion, whatever its format: the text config, the tokenizer, and
// every tensor the text model needs (in ExpectedTensors order) as a view of its source bytes.
// hf_import.h and gguf_import.h build it; convert.cc streams it into a .gemlet file.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor_type.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "format/tokenizer_info.h"
#include "model/gemma4_config.h"
#include "model/gemma4_tensors.h"

namespace gemlet::convert {

// Element encodings a source tensor may have.
enum class SourceType { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K };
const char* SourceTypeName(SourceType t);  // "F32", "BF16", "Q8_0", "Q6_K", ...
// The gemlet type holding it bit-exactly (Q8_0 -> q8, Q4_0 -> q4), nullopt for K-quants.
std::optional<TensorType> LosslessType(SourceType t);
// Values per block (1, 32 or 256) and bytes per block.
int SourceBlockElems(SourceType t);
int SourceBlockBytes(SourceType t);

struct SourceTensor {
  std::string source_name;  // the name in the checkpoint
  SourceType type = SourceType::kF32;
  std::vector<int64_t> shape;  // outermost first, as the checkpoint gives it
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  bool mapped = false;  // data lies in a read-only file mapping (pages may be dropped)

  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const;
  uint64_t row_bytes() const;  // cols / block · block bytes
};

// "[512, 64]"
std::string ShapeString(const std::vector<int64_t>& shape);

// Decodes rows [row0, row0 + n) of `t` into `out` (n · cols floats).
void DecodeRows(const SourceTensor& t, int64_t row0, int64_t n, float* out);

struct Checkpoint {
  std::string source;              // the path given
  std::string format;              // "safetensors" or "gguf"
  std::vector<std::string> files;  // the weight files (hashed for provenance)
  model::Gemma4Config config;
  TokenizerInfo tokenizer;
  struct Item {
    model::TensorSpec spec;
    SourceTensor src;
  };
  std::vector<Item> tensors;  // ExpectedTensors(config) order
  // The vision tower and embed_vision (HF checkpoints with a vision_config), in
  // ExpectedVisionTensors order, converted into the same file; `vision` is its metadata.
  std::vector<Item> vision_tensors;
  nlohmann::json vision;  // Gemma4VisionConfig::ToJson(), or null
  // The audio tower and embed_audio likewise (ExpectedAudioTensors order); `audio` is its
  // metadata. A checkpoint whose audio tensors do not make a whole tower for its audio_config
  // (the tiny text oracles' stubs) converts without it, and `audio_note` says why.
  std::vector<Item> audio_tensors;
  nlohmann::json audio;
  std::string audio_note;
  // Tensors of the vision/audio towers and embedders (HF only), for --multimodal; their dtypes
  // are checked only if they are written.
  std::vector<SafetensorsFolder::Entry> multimodal;
  nlohmann::json full_config;  // the whole config.json (HF) or null
  // Keep the mapped files alive.
  std::unique_ptr<SafetensorsFolder> safetensors;
  std::unique_ptr<GgufFile> gguf;
  // A llama.cpp mmproj file the towers came from (mmproj_import.h), and the tensors its
  // importer rewrote (the items point into both).
  std::unique_ptr<GgufFile> mmproj;
  std::vector<std::vector<uint8_t>> owned;
};

// A SourceTensor viewing a safetensors tensor (F32/F16/BF16, else an error naming file and tensor).
Result<SourceTensor> FromSafetensors(const SafetensorsFile& file, const SafetensorsTensor& t);
// A SourceTensor viewing a GGUF tensor (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K).
Result<SourceTensor> FromGguf(const GgufFile& file, const GgufTensorInfo& t);

}  // namespace gemlet::convert
