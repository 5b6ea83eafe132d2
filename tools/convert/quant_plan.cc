#include "tools/convert/quant_plan.h"

namespace gemlet::convert {

using model::TensorClass;

namespace {

// Every matrix in q4 (stored interleaved as q4x8 where the shape allows) except
// per_layer_model_proj, in q8: decode streams every matrix but the two embedding tables once
// per token, so their bytes are the budget (the PLE projections in bf16 were 6 % of those
// bytes, 82.5 MB of E2B's 1.34 GB per token). per_layer_model_proj ([L·P, D], 13.8 M weights
// in E2B) in q4 moves the tiny oracle's logits from llama.cpp's Q4_0 run by a mean of 0.21, past
// the int8 tier of ../shared/oracle/README.md (llama.cpp's quantizer leaves it in F32); in q8
// the mean is 0.070 (the same weights otherwise: 0.064), for 6.9 MB more per E2B token than q4.
std::map<TensorClass, TensorType> DefaultTypes() {
  return {{TensorClass::kTokenEmbedding, TensorType::kQ4}, {TensorClass::kPleTable, TensorType::kQ4},
          {TensorClass::kPleModelProj, TensorType::kQ8}, {TensorClass::kAttention, TensorType::kQ4},
          {TensorClass::kFeedForward, TensorType::kQ4},    {TensorClass::kPleGate, TensorType::kQ4},
          {TensorClass::kPleProj, TensorType::kQ4},      {TensorClass::kNorm, TensorType::kF32},
          {TensorClass::kScalar, TensorType::kF32},      {TensorClass::kDrafterProj, TensorType::kQ4},
          // The drafter's sparse head picks its candidates by the centroid scores: kept exact
          // (2,048 × 256 f32, 2 MB for E2B). token_order holds ids, never quantized.
          {TensorClass::kCentroids, TensorType::kF32},   {TensorClass::kTokenOrder, TensorType::kF32},
          // The vision tower in bf16, the checkpoint's own type (exact; an f16 mmproj's values
          // were bf16 before llama.cpp's converter stored them as f16). On a CPU with the bf16 dot
          // products (AVX512_BF16) the tower then rounds its activations to bf16 and runs its
          // attention's products in bf16 (MatMulMode::kFastBf16): on the tiny vision oracle the
          // soft tokens are 0.012 max / 0.0020 mean off, a ninth of the reduced tier (max 0.1,
          // mean 0.02; elsewhere, f32 activations: 1e-6), while in q8 with int8 activations they
          // are 0.087 / 0.015, already 87 % of it with 2 of E2B's 16 layers, and the prompts'
          // logits on the q8 decoder reach max 2.4 (the int8 tier: 2.0; tests/oracle_vision_test.cc).
          // The q8 weights' rounding alone does it: with f32 activations in every clipped linear
          // (a temporary switch, 2026-12-06) the soft tokens are still 0.082 max and the logits
          // max 2.4. Full-size E2B, a 280-token image, 2 threads, Zen 5 (gemlet encode-image,
          // interleaved rounds): bf16 3.86–3.97 s on 2026-12-05, 3.59 s (median of 5, against
          // 4.22 s for the earlier kernels in the same rounds) with the panel GEMM; without the
          // bf16 dot products (GEMLET_CPU=avx512) 6.2 s; q8 (stored q8x8) 2.72–3.01 s.
          // It is read once per image, so its bytes (E2B: 337 MB, q8 179 MB) cost no decode speed.
          {TensorClass::kVisionMatrix, TensorType::kBF16}, {TensorClass::kVisionPosTable, TensorType::kF16},
          {TensorClass::kVisionProj, TensorType::kBF16},
          // The audio tower in f16 with f32 activations, read once per clip: on the tiny audio
          // oracle its soft tokens are within 2.2e-6 × RMS of the reference on the fast path
          // (tests/oracle_audio_test.cc). Faster arithmetic leaves the README's approximate tier
          // (1e-2 × RMS max, 1e-3 mean): bf16 weights with bf16 activations (the vision tower's
          // kFastBf16, tried on this tower) are 1.4–3.8e-2 × RMS max / 3.1–4.1e-3 mean off, and
          // in the feed-forward blocks' first (or second) products alone already 0.9–1.2e-3 ×
          // RMS mean, at the tier's edge; so the audio tower keeps f32 activations whatever its
          // weights' type; q8 with int8
          // activations is 0.087–0.147 / 0.018–0.022 off. Full-size E2B, a 30 s clip, 2
          // threads, Zen 5 (gemlet encode-audio, interleaved): f16 3.02 s, bf16 with bf16
          // activations 2.18 s, q8 (stored q8x8) 1.62 s.
          // The convolution kernels stay f32 (rows of 3 or 5 values fill no block; E2B's are
          // 0.15 M values).
          {TensorClass::kAudioMatrix, TensorType::kF16}, {TensorClass::kAudioConv, TensorType::kF32},
          {TensorClass::kAudioProj, TensorType::kF16}};
}

}  // namespace

Result<QuantPlan> MakeQuantPlan(const std::string& name, const std::vector<std::string>& overrides) {
  QuantPlan p;
  p.name = name;
  p.types = DefaultTypes();
  if (name == "default") {
  } else if (name == "keep") {
    p.keep = true;
  } else if (name == "q8" || name == "q4") {
    for (auto& [cls, type] : p.types) {
      if (cls != TensorClass::kNorm && cls != TensorClass::kScalar && cls != TensorClass::kCentroids &&
          cls != TensorClass::kTokenOrder && cls != TensorClass::kAudioConv) {
        type = name == "q8" ? TensorType::kQ8 : TensorType::kQ4;
      }
    }
  } else {
    return InvalidArgument("unknown quantization plan '" + name + "' (expected default, keep, q8 or q4)");
  }
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument("--type expects CLASS=TYPE (e.g. ple_table=q8), got '" + o + "'");
    }
    ASSIGN_OR_RETURN(TensorClass cls, model::ParseTensorClass(o.substr(0, eq)));
    ASSIGN_OR_RETURN(TensorType type, ParseTensorType(o.substr(eq + 1)));
    if (cls == TensorClass::kTokenOrder && type != TensorType::kF32) {
      return InvalidArgument("--type " + o + ": the token_order class holds token ids, stored as f32 only");
    }
    if (cls == TensorClass::kScalar && IsQuantized(type)) {
      return InvalidArgument("--type " + o +
                             ": the scalar class holds 1-element tensors, which cannot be quantized");
    }
    p.overrides[cls] = type;
  }
  return p;
}

TensorType PlanType(const QuantPlan& plan, TensorClass cls, std::optional<TensorType> source) {
  if (auto it = plan.overrides.find(cls); it != plan.overrides.end()) return it->second;
  if (plan.keep && source) return *source;
  return plan.types.at(cls);
}

Result<uint64_t> StoredBytes(TensorType type, const std::vector<int64_t>& shape) {
  const int64_t cols = shape.empty() ? 1 : shape.back();
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= static_cast<uint64_t>(shape[i]);
  ASSIGN_OR_RETURN(uint64_t row_bytes, RowBytes(type, cols));
  return rows * row_bytes;
}

}  // namespace gemlet::convert
