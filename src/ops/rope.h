// Rotary position embedding in the half-split ("NeoX", HF rotate_half) layout: dimension i
// pairs with i + head_dim/2. A per-pair inv_freq table covers both the default RoPE and the
// proportional one (HF _compute_proportional_rope_parameters), where only the first
// `pairs` pairs rotate and the rest have inv_freq 0 (cos 1, sin 0: exact identity).
#pragma once

#include <cstdint>
#include <vector>

namespace gemlet::ops {

// [head_dim/2]: inv_freq[i] = theta^(−2i/head_dim) for i < pairs, 0 beyond. The exponent's
// denominator is the full head_dim even when only some pairs rotate.
std::vector<double> RopeInvFreq(int64_t head_dim, double theta, int64_t pairs);

// cos, sin [T, half] of the angles pos[t]·inv_freq[i], half = inv_freq.size(). The angles are
// computed in double (HF uses fp32; this is at least as exact at any position).
void RopeAngles(const std::vector<double>& inv_freq, const int64_t* pos, int64_t T, float* cos, float* sin);

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
