#include "kernels/ref/ref_kernels.h"

#include <cmath>

#include "base/half.h"
#include "kernels/float_rows.h"

namespace gemlet::kernels {

void QuantizeActRef(const float* x, ActBlock* out, int64_t K) {
  GEMLET_CHECK_MSG(K % kQBlock == 0, "quantize_act takes whole blocks of 32");
  for (int64_t b = 0; b < K / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    ActBlock& o = out[b];
    float amax = 0.0f;
    for (int j = 0; j < kQBlock; ++j) {
      const float a = std::fabs(xb[j]);
      amax = a > amax ? a : amax;
    }
    float d = 0.0f, id = 0.0f;
    if (amax >= 0x1p-100f) {
      d = amax / 127.0f;
      id = 127.0f / amax;
    }
    int32_t sum = 0;
    for (int j = 0; j < kQBlock; ++j) {
      float v = xb[j] * id;
      v = v > -127.0f ? v : -127.0f;  // NaN → −127, as x86 max_ps / Arm fmaxnm do
      v = v < 127.0f ? v : 127.0f;
      const int q = static_cast<int>(std::nearbyintf(v));  // default mode: half to even
      o.q[j] = static_cast<int8_t>(q);
      sum += q;
    }
    o.d = d;
    o.sum = sum;
  }
}

int32_t BlockDotQ4(const BlockQ4& w, const ActBlock& x) {
  int32_t s = 0;
  for (int j = 0; j < kQBlock / 2; ++j) {
    s += (static_cast<int32_t>(w.qs[j] & 0x0f) - 8) * x.q[j];
    s += (static_cast<int32_t>(w.qs[j] >> 4) - 8) * x.q[j + kQBlock / 2];
  }
  return s;
}

int32_t BlockDotQ8(const BlockQ8& w, const ActBlock& x) {
  int32_t s = 0;
  for (int j = 0; j < kQBlock; ++j) s += static_cast<int32_t>(w.qs[j]) * x.q[j];
  return s;
}

int32_t BlockDotQ4x8(const BlockQ4x8& w, int i, const ActBlock& x) {
  int32_t s = 0;
  for (int c = 0; c < 4; ++c) {
    for (int k = 0; k < 4; ++k) {
      const uint8_t byte = w.qs[c * 32 + i * 4 + k];
      s += (static_cast<int32_t>(byte & 0x0f) - 8) * x.q[4 * c + k];
      s += (static_cast<int32_t>(byte >> 4) - 8) * x.q[16 + 4 * c + k];
    }
  }
  return s;
}

int32_t BlockDotQ8x8(const BlockQ8x8& w, int i, const ActBlock& x) {
  int32_t s = 0;
  for (int c = 0; c < 8; ++c) {
    for (int k = 0; k < 4; ++k) s += static_cast<int32_t>(w.qs[c * 32 + i * 4 + k]) * x.q[4 * c + k];
  }
  return s;
}

namespace {

// acc = fmaf(f16(d_w)·d_x, isum, acc): the one float step of every quantized kernel.
inline float Step(float acc, uint16_t dw, float dx, int32_t isum) {
  const float s = F16ToF32(dw) * dx;
  return std::fmaf(s, static_cast<float>(isum), acc);
}

template <typename Block, int32_t (*Dot)(const Block&, const ActBlock&)>
float RowDot(const Block* row, const ActBlock* x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) acc = Step(acc, row[b].d, x[b].d, Dot(row[b], x[b]));
  return acc;
}

// Row i < 8 of an interleaved group (BlockQ4x8 or BlockQ8x8).
template <typename BlockX8, int32_t (*Dot)(const BlockX8&, int, const ActBlock&)>
float RowDotX8(const BlockX8* group, int i, const ActBlock* x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) acc = Step(acc, group[b].d[i], x[b].d, Dot(group[b], i, x[b]));
  return acc;
}

template <typename BlockX8, int32_t (*Dot)(const BlockX8&, int, const ActBlock&)>
void GemvX8(const BlockX8* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x, int64_t K, float* y) {
  GEMLET_CHECK_MSG(r0 % 8 == 0 && r1 % 8 == 0, "interleaved (q4x8/q8x8) kernels take whole groups of 8 rows");
  for (int64_t r = r0; r < r1; ++r) {
    y[r] = RowDotX8<BlockX8, Dot>(w + (r / 8) * gs, static_cast<int>(r % 8), x, K / kQBlock);
  }
}

template <typename BlockX8, int32_t (*Dot)(const BlockX8&, int, const ActBlock&)>
void GemmX8(const BlockX8* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs, int64_t T,
            int64_t K, float* y, int64_t ldy) {
  for (int64_t t = 0; t < T; ++t) GemvX8<BlockX8, Dot>(w, gs, r0, r1, x + t * xs, K, y + t * ldy);
}

inline float LoadF(TensorType t, const void* w, int64_t i) {
  switch (t) {
    case TensorType::kF16:
      return F16ToF32(static_cast<const uint16_t*>(w)[i]);
    case TensorType::kBF16:
      return Bf16ToF32(static_cast<const uint16_t*>(w)[i]);
    default:
      return static_cast<const float*>(w)[i];
  }
}

inline const void* RowPtr(TensorType t, const void* w, int64_t row_stride, int64_t r) {
  const int64_t esize = t == TensorType::kF32 ? 4 : 2;
  return static_cast<const uint8_t*>(w) + r * row_stride * esize;
}

}  // namespace

void GemvQ4Ref(const BlockQ4* w, int64_t rs, int64_t r0, int64_t r1, const ActBlock* x, int64_t K,
               float* y) {
  for (int64_t r = r0; r < r1; ++r) y[r] = RowDot<BlockQ4, BlockDotQ4>(w + r * rs, x, K / kQBlock);
}

void GemmQ4Ref(const BlockQ4* w, int64_t rs, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs,
               int64_t T, int64_t K, float* y, int64_t ldy) {
  for (int64_t t = 0; t < T; ++t) GemvQ4Ref(w, rs, r0, r1, x + t * xs, K, y + t * ldy);
}

void GemvQ8Ref(const BlockQ8* w, int64_t rs, int64_t r0, int64_t r1, const ActBlock* x, int64_t K,
               float* y) {
  for (int64_t r = r0; r < r1; ++r) y[r] = RowDot<BlockQ8, BlockDotQ8>(w + r * rs, x, K / kQBlock);
}

void GemmQ8Ref(const BlockQ8* w, int64_t rs, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs,
               int64_t T, int64_t K, float* y, int64_t ldy) {
  for (int64_t t = 0; t < T; ++t) GemvQ8Ref(w, rs, r0, r1, x + t * xs, K, y + t * ldy);
}

void GemvQ4x8Ref(const BlockQ4x8* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x,
                 int64_t K, float* y) {
  GemvX8<BlockQ4x8, BlockDotQ4x8>(w, gs, r0, r1, x, K, y);
}

void GemmQ4x8Ref(const BlockQ4x8* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x,
                 int64_t xs, int64_t T, int64_t K, float* y, int64_t ldy) {
  GemmX8<BlockQ4x8, BlockDotQ4x8>(w, gs, r0, r1, x, xs, T, K, y, ldy);
}

void GemvQ8x8Ref(const BlockQ8x8* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x,
                 int64_t K, float* y) {
  GemvX8<BlockQ8x8, BlockDotQ8x8>(w, gs, r0, r1, x, K, y);
}

void GemmQ8x8Ref(const BlockQ8x8* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x,
                 int64_t xs, int64_t T, int64_t K, float* y, int64_t ldy) {
  GemmX8<BlockQ8x8, BlockDotQ8x8>(w, gs, r0, r1, x, xs, T, K, y, ldy);
}

float DotFRef(TensorType wt, const void* w, const float* x, int64_t K) {
  float a[16] = {};
  const int64_t K16 = K / 16 * 16;
  for (int64_t i = 0; i < K16; i += 16) {
    for (int l = 0; l < 16; ++l) a[l] = std::fmaf(x[i + l], LoadF(wt, w, i + l), a[l]);
  }
  for (int l = 0; l < 8; ++l) a[l] = a[l] + a[l + 8];
  for (int l = 0; l < 4; ++l) a[l] = a[l] + a[l + 4];
  for (int l = 0; l < 2; ++l) a[l] = a[l] + a[l + 2];
  float s = a[0] + a[1];
  for (int64_t i = K16; i < K; ++i) s = std::fmaf(x[i], LoadF(wt, w, i), s);
  return s;
}

void GemvFRef(TensorType wt, const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x,
              int64_t K, float* y) {
  for (int64_t r = r0; r < r1; ++r) y[r] = DotFRef(wt, RowPtr(wt, w, rs, r), x, K);
}

void GemmFRef(TensorType wt, const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x,
              int64_t xs, int64_t T, int64_t K, float* y, int64_t ldy, int64_t /*prefetch*/) {
  for (int64_t t = 0; t < T; ++t) GemvFRef(wt, w, rs, r0, r1, x + t * xs, K, y + t * ldy);
}

void GemmAccFRef(TensorType bt, const float* a, int64_t lda, int64_t M, const void* b,
                 int64_t bs, int64_t N, int64_t D, float* y, int64_t ldy, int64_t /*prefetch*/) {
  CheckAccRows(bt, bs, D);
  // B[n, d]: for q8, the int8 value times the block's f16 scale (exact in f32).
  auto load = [&](int64_t n, int64_t d) {
    if (bt != TensorType::kQ8) return LoadF(bt, RowPtr(bt, b, bs, n), d);
    const BlockQ8& blk = static_cast<const BlockQ8*>(b)[(n * bs + d) / kQBlock];
    return static_cast<float>(blk.qs[d % kQBlock]) * F16ToF32(blk.d);
  };
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t d = 0; d < D; ++d) {
      float acc = y[m * ldy + d];
      for (int64_t n = 0; n < N; ++n) acc = std::fmaf(a[m * lda + n], load(n, d), acc);
      y[m * ldy + d] = acc;
    }
  }
}

void OnlineSoftmaxRef(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr) {
  for (int64_t r = 0; r < R; ++r) {
    float* sr = s + r * lds;
    float mt = m[r];
    for (int64_t c = 0; c < n; ++c) mt = sr[c] > mt ? sr[c] : mt;
    corr[r] = SoftmaxExp(m[r] - mt);
    m[r] = mt;
    float a[16] = {};
    for (int64_t c = 0; c < n; ++c) {
      sr[c] = SoftmaxExp(sr[c] - mt);
      a[c % 16] += sr[c];
    }
    l[r] = l[r] * corr[r] + SumLanes16(a);
  }
}

const KernelTable& ScalarKernels() {
  static const KernelTable t = {Tier::kScalar, QuantizeActRef, GemvQ4Ref,   GemmQ4Ref,   GemvQ8Ref,
                                GemmQ8Ref,     GemvQ4x8Ref,    GemmQ4x8Ref, GemvQ8x8Ref, GemmQ8x8Ref,
                                GemvFRef,      GemmFRef,       F16ToF32Ref, F32ToF16Ref, GemmAccFRef,
                                OnlineSoftmaxRef};
  return t;
}

}  // namespace gemlet::kernels
