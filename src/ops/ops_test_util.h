// Helpers shared by the ops tests: deterministic random data and weights of every type.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/half.h"
#include "base/tensor_type.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"
#include "ops/weight.h"

namespace gemlet::ops::testing {

inline std::vector<float> RandomVector(int64_t n, uint64_t seed, float stddev = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// A weight [rows, cols] of `type` made from f32 values, owning its bytes; `ref` receives the
// exact f32 values the stored weight represents (after rounding / quantization).
struct OwnedWeight {
  std::vector<uint8_t> bytes;
  Weight w;
  std::vector<float> ref;  // [rows, cols] dequantized
};

inline OwnedWeight MakeWeight(TensorType type, int64_t rows, int64_t cols, uint64_t seed,
                              float stddev = 1.0f) {
  OwnedWeight o;
  const std::vector<float> src = RandomVector(rows * cols, seed, stddev);
  const uint64_t row_bytes = RowBytes(type, cols).value();
  o.bytes.resize(row_bytes * rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src.data() + r * cols;
    uint8_t* d = o.bytes.data() + r * row_bytes;
    switch (type) {
      case TensorType::kF32:
        std::memcpy(d, s, cols * 4);
        break;
      case TensorType::kF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = F32ToF16(s[i]);
          std::memcpy(d + 2 * i, &h, 2);
        }
        break;
      case TensorType::kBF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = F32ToBf16(s[i]);
          std::memcpy(d + 2 * i, &h, 2);
        }
        break;
      case TensorType::kQ8:
        kernels::QuantizeRowQ8Ref(s, reinterpret_cast<BlockQ8*>(d), cols);
        break;
      case TensorType::kQ4:
        kernels::QuantizeRowQ4Ref(s, reinterpret_cast<BlockQ4*>(d), cols);
        break;
    }
  }
  o.w = Weight{type, TensorLayout::kRowMajor, rows, cols, row_bytes, o.bytes.data()};
  o.ref.resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    kernels::DequantizeRowRef(type, o.bytes.data() + r * row_bytes, o.ref.data() + r * cols, cols);
  }
  return o;
}

// The same q4 / q8 weight stored interleaved (TensorLayout::kQ4x8 / kQ8x8, kernels/repack.h);
// rows must be a multiple of 8.
struct InterleavedWeight {
  std::vector<uint8_t> bytes;
  Weight w;
};

inline InterleavedWeight Interleave(const Weight& src) {
  InterleavedWeight q;
  q.bytes.resize(static_cast<size_t>(src.rows) * src.row_bytes);
  q.w = src;
  q.w.data = q.bytes.data();
  Status st = InvalidArgument("only q4 and q8 weights interleave");
  if (src.type == TensorType::kQ4) {
    q.w.layout = TensorLayout::kQ4x8;
    st = kernels::RepackQ4x8(reinterpret_cast<const BlockQ4*>(src.data), src.rows, src.cols,
                             reinterpret_cast<BlockQ4x8*>(q.bytes.data()));
  } else if (src.type == TensorType::kQ8) {
    q.w.layout = TensorLayout::kQ8x8;
    st = kernels::RepackQ8x8(reinterpret_cast<const BlockQ8*>(src.data), src.rows, src.cols,
                             reinterpret_cast<BlockQ8x8*>(q.bytes.data()));
  }
  GEMLET_CHECK_MSG(st.ok(), st.ToString().c_str());
  return q;
}
inline InterleavedWeight Interleave(const OwnedWeight& o) { return Interleave(o.w); }

}  // namespace gemlet::ops::testing
