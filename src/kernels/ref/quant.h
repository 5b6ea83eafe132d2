// Scalar reference quantization and dequantization of rows (the spec of the block formats,
// value-identical to GGUF Q8_0 / Q4_0 and ggml's reference quantizers).
#pragma once

#include <cstdint>

#include "base/tensor_type.h"

namespace gemlet::kernels {

// n must be a multiple of 32. Q8: d = amax/127, q = round(x/d) (ggml quantize_row_q8_0_ref).
void QuantizeRowQ8Ref(const float* x, BlockQ8* y, int64_t n);
// Q4: m = the value of largest |x| (with sign), d = m/−8, q = min(15, int(x/d + 8.5))
// (ggml quantize_row_q4_0_ref).
void QuantizeRowQ4Ref(const float* x, BlockQ4* y, int64_t n);

// Converts n values of `type` at `src` to f32. For quantized types n is a multiple of 32.
void DequantizeRowRef(TensorType type, const void* src, float* dst, int64_t n);

}  // namespace gemlet::kernels
