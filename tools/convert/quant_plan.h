// Quantization plans: which storage type each tensor class gets (classes: model/gemma4_tensors.h).
//
//   default  every matrix q4 (attn, ffn, token_embd, ple_table, ple_gate, ple_proj) except
//            ple_model_proj q8 (quant_plan.cc says why); norm f32, scalar f32; the vision
//            tower (vision, vision_pos, vision_proj) f16; the audio
//            tower (audio, audio_proj) f16 and its kernels (audio_conv) f32
//   q8       every linear layer and embedding q8, norm f32, scalar f32
//   q4       every linear layer and embedding q4, norm f32, scalar f32
//            The q4 and q8 blocks are those of llama.cpp's Q4_0 / Q8_0 quantizer
//            (tests/convert_oracle_test.cc checks them against the oracle's GGUF files).
//   keep     every tensor at its source type (BF16 -> bf16, F32 -> f32, F16 -> f16, Q8_0 -> q8
//            and Q4_0 -> q4 byte-identical); K-quants (no gemlet type) get the default plan's
//            type for their class
//
// Overrides "CLASS=TYPE" (repeatable) replace the plan's type for a class, in every plan.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor_type.h"
#include "model/gemma4_tensors.h"

namespace gemlet::convert {

struct QuantPlan {
  std::string name;
  bool keep = false;  // keep source types where they have a gemlet type
  // Per class: the plan's type (for `keep`, the fallback for sources without a gemlet type).
  std::map<model::TensorClass, TensorType> types;
  std::map<model::TensorClass, TensorType> overrides;  // win over everything
};

// Plan names: "default", "keep", "q8", "q4". Overrides are "CLASS=TYPE" (e.g. "ple_table=q8").
Result<QuantPlan> MakeQuantPlan(const std::string& name, const std::vector<std::string>& overrides);

// The stored type of a tensor of class `cls` whose source type is `source` (nullopt for a
// source type with no lossless gemlet type, such as Q6_K).
TensorType PlanType(const QuantPlan& plan, model::TensorClass cls, std::optional<TensorType> source);

// Bytes of a tensor of `shape` stored as `type` (an error if its rows do not fill whole blocks).
Result<uint64_t> StoredBytes(TensorType type, const std::vector<int64_t>& shape);

}  // namespace gemlet::convert
