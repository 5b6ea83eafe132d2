#include "ops/weight.h"

#include "kernels/ref/quant.h"
#include "kernels/repack.h"

namespace gemlet::ops {

void DequantizeWeightRow(const Weight& w, int64_t r, float* out) {
  if (w.layout == TensorLayout::kQ4x8) {  // rows interleaved in groups of 8
    kernels::DequantizeRowQ4x8(reinterpret_cast<const BlockQ4x8*>(w.data), w.cols / kQBlock, r, out, w.cols);
  } else {
    kernels::DequantizeRowRef(w.type, w.row(r), out, w.cols);
  }
}

}  // namespace gemlet::ops
