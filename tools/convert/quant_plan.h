// Quantization plans: which storage type each tensor class gets (classes: model/gemma4_tensors.h).
//
//   default  attn q4, ffn q4, token_embd q4, ple_table q4, ple_model_proj bf16, ple_gate bf16,
//            ple_proj bf16, norm f32, scalar f32 (full-size E2B: about 2.66 GB)
//   q8       every linear layer and embedding q8, norm f32, scalar f32
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

// Plan names: "default", "keep", "q8". Overrides are "CLASS=TYPE" (e.g. "ple_table=q8").
Result<QuantPlan> MakeQuantPlan(const std::string& name, const std::vector<std::string>& overrides);

// The stored type of a tensor of class `cls` whose source type is `source` (nullopt for a
// source type with no lossless gemlet type, such as Q6_K).
TensorType PlanType(const QuantPlan& plan, model::TensorClass cls, std::optional<TensorType> source);

// Bytes of a tensor of `shape` stored as `type` (an error if its rows do not fill whole blocks).
Result<uint64_t> StoredBytes(TensorType type, const std::vector<int64_t>& shape);

}  // namespace gemlet::convert
