// `gemlet convert`: brings a Hugging Face Gemma 4 checkpoint folder or a gemma4 GGUF file (with
// llama.cpp's mmproj file of its towers) into a .gemlet file, streaming tensor by tensor, under a
// quantization plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace gemlet::convert {

struct ConvertOptions {
  std::string src;               // HF folder (config.json, *.safetensors, tokenizer.json) or .gguf
  std::string out;               // output .gemlet path
  std::string plan = "default";  // "default", "keep", or a plan name (see quant_plan.h)
  // Per-class overrides "CLASS=TYPE", e.g. "ple_table=q8", "attn=q8" (classes: model/gemma4_tensors.h).
  std::vector<std::string> overrides;
  int threads = 0;      // 0 = all cores
  bool progress = true; // progress bar on a terminal, plain lines otherwise
  // If set, the vision/audio tensors of an HF checkpoint (skipped for the text model) go to this
  // second .gemlet file at their source types.
  std::string multimodal_out;
  // If set, an MTP drafter checkpoint (HF folder, model_type gemma4_assistant) written into
  // the output as a second section (model/gemma4_drafter_tensors.h). A `src` that is itself
  // a drafter folder converts to a drafter-only file.
  std::string assistant;
  // If set, llama.cpp's mmproj GGUF of the vision/audio towers (projector types gemma4v /
  // gemma4a) for a GGUF `src`: its towers are written as an HF checkpoint's are
  // (mmproj_import.h).
  std::string mmproj;
};

struct ConvertedTensor {
  std::string name;
  std::string source_type;  // as in the source ("BF16", "Q4_0", "Q6_K", ...)
  std::string stored_type;  // "f32", "q4", ...
  uint64_t bytes = 0;
  bool requantized = false;  // dequantized from a K-quant and quantized again
};

struct ConvertReport {
  std::vector<ConvertedTensor> tensors;
  std::vector<ConvertedTensor> multimodal;  // written to ConvertOptions::multimodal_out
  std::vector<std::string> notes;  // what was left out and why (e.g. an incomplete audio tower)
  uint64_t file_bytes = 0;
  double seconds = 0;
};

Result<ConvertReport> Convert(const ConvertOptions& options);

}  // namespace gemlet::convert
