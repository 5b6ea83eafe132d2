// Rotary position embedding in the half-split ("NeoX", HF rotate_half) layout: dimension i
// pairs with i + head_dim/2. A per-pair inv_freq table covers both the default RoPE and the
// proportional one (HF _compute_proportional_rope_parameters), where only the first
// `pairs` pairs rotate and the rest have inv_freq 0 (cos 1, sin 0: exact identity).
//
// The angles follow Hugging Face's float32 recipe bit for bit (its RotaryEmbedding classes and
// modeling_rope_utils.py), since that is how the weights are served: at position 131,071 a
// float64 angle, or ggml's float32 recurrence, moves the logits by up to 3e-2
// (../shared/oracle/long/README.md "RoPE angle modes").
#pragma once

#include <cstdint>
#include <vector>

namespace gemlet::ops {

// [head_dim/2], float32 as HF builds it:
//   inv_freq[i] = f32(1 / f32(f32(theta) ^ f32(f32(2i) / head_dim)))  for i < pairs, 0 beyond
// (the pow correctly rounded to float32, as numpy's powf). The exponent's denominator is the
// full head_dim even when only some pairs rotate.
std::vector<float> RopeInvFreq(int64_t head_dim, double theta, int64_t pairs);

// The angle of pair i at position pos: one float32 product f32(inv_freq · f32(pos)) (HF's
// inv_freq @ position_ids with K = 1, autocast off). Positions are exact in float32 below 2^24.
inline float RopeAngle(float inv_freq, int64_t pos) { return inv_freq * static_cast<float>(pos); }

// cos, sin [T, half] of RopeAngle(inv_freq[i], pos[t]), half = inv_freq.size(), each the
// float32 rounding of the exact cos/sin of that float32 angle.
void RopeAngles(const std::vector<float>& inv_freq, const int64_t* pos, int64_t T, float* cos, float* sin);

// Rotates x [T, n_heads, head_dim] in place with the cos/sin [T, head_dim/2] of each row:
//   y[i]        = x[i]·cos[i] − x[i + half]·sin[i]
//   y[i + half] = x[i + half]·cos[i] + x[i]·sin[i]            (HF apply_rotary_pos_emb)
void ApplyRope(float* x, int64_t T, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin);

}  // namespace gemlet::ops

namespace gemlet::ops {

// Multi-axis RoPE (e.g. a 2-D RoPE over image patches): each head of x [T, n_heads, head_dim]
// is cut into n_sections equal sections, and section s is rotated as ApplyRope does (pairs
// (i, i + section/2) within the section) with its own cos[s], sin[s] [T, section/2].
void ApplyRopeSections(float* x, int64_t T, int64_t n_heads, int64_t head_dim, int n_sections,
                       const float* const* cos, const float* const* sin);

}  // namespace gemlet::ops
