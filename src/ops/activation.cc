#include "ops/activation.h"

#include <algorithm>
#include <cstring>

namespace gemlet::ops {

namespace {

#if defined(__GNUC__) || defined(__clang__)
#define GEMLET_INLINE inline __attribute__((always_inline))
#else
#define GEMLET_INLINE inline
#endif

// e^x for x in [-87, 88] (clamped), Cephes' expf scheme: x = n·ln2 + r, |r| ≤ ln2/2, e^r by
// a degree-6 polynomial, 2^n by the exponent bits. ≤ 2 ulp. Branch-free so loops over it
// vectorize on every ISA.
GEMLET_INLINE float ExpApprox(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);  // (no std::min: it must inline into clones)
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // NaN in, NaN out (through p); the exponent is taken from 0 then, since converting NaN to
  // an integer is undefined.
  const int32_t bits = (static_cast<int32_t>(n == n ? n : 0.0f) + 127) << 23;
  float s;
  std::memcpy(&s, &bits, 4);
  return p * s;
}

// tanh(x) = (e^2x − 1) / (e^2x + 1); |x| ≥ 9 rounds to ±1 in f32. Absolute error ≤ ~2e-7.
GEMLET_INLINE float TanhApprox(float x) {
  x = x < -9.0f ? -9.0f : (x > 9.0f ? 9.0f : x);
  const float e = ExpApprox(2.0f * x);
  return (e - 1.0f) / (e + 1.0f);
}

GEMLET_INLINE float GeluFast(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + TanhApprox(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// The array loops get an AVX2 clone on x86-64 (chosen at load time); the file is compiled
// with -ffp-contract=off (CMakeLists.txt), so every clone gives the same bits.
// ("avx2", not "arch=haswell": an arch= clone is chosen by CPU model, so AMD and newer Intel
// CPUs got the baseline code.)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMLET_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GEMLET_SIMD_CLONES
#endif

}  // namespace

float GeluTanhFast(float x) { return GeluFast(x); }

GEMLET_SIMD_CLONES void GeluTanhInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = GeluFast(x[i]);
}

GEMLET_SIMD_CLONES void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = GeluFast(gate[i]) * up[i];
}

GEMLET_SIMD_CLONES void ExpInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = ExpApprox(x[i]);
}

GEMLET_SIMD_CLONES void Softcap(float* x, int64_t n, float cap) {
  if (!(cap > 0)) return;
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * TanhApprox(x[i] * inv);
}

void Scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

GEMLET_SIMD_CLONES void Clamp(const float* x, int64_t n, ClampRange r, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], r.lo), r.hi);
}

GEMLET_SIMD_CLONES void GeGlu(const float* gate, const float* up, int64_t n, float* out, ClampRange g, ClampRange u) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = GeluFast(std::min(std::max(gate[i], g.lo), g.hi)) * std::min(std::max(up[i], u.lo), u.hi);
  }
}

}  // namespace gemlet::ops
