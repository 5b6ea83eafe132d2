#include "ops/image_resize.h"

#include <algorithm>
#include <cmath>

namespace gemlet::ops {

namespace {

// Keys' cubic convolution kernel with a = −0.5 (ATen's aa bicubic filter).
double Cubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

}  // namespace

ResampleTaps BicubicAntialiasTaps(int64_t in, int64_t out) {
  ResampleTaps t;
  t.first.resize(out);
  t.weights.resize(out);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = scale >= 1.0 ? 2.0 * scale : 2.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  for (int64_t i = 0; i < out; ++i) {
    const double center = scale * (i + 0.5);
    // static_cast truncates toward zero, as ATen's int64_t conversions do.
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
    std::vector<double>& w = t.weights[i];
    double total = 0.0;
    for (int64_t j = lo; j < hi; ++j) {
      w.push_back(Cubic((j - center + 0.5) * invscale));
      total += w.back();
    }
    if (total != 0.0) {
      for (double& v : w) v /= total;
    }
    t.first[i] = lo;
  }
  return t;
}

void ResizeBicubicAntialias(const uint8_t* src, int64_t h, int64_t w, int64_t C, int64_t oh, int64_t ow,
                            uint8_t* dst) {
  const ResampleTaps tx = BicubicAntialiasTaps(w, ow), ty = BicubicAntialiasTaps(h, oh);
  std::vector<double> mid(static_cast<size_t>(h * ow * C));  // [h, ow, C] after the horizontal pass
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* row = src + y * w * C;
    for (int64_t x = 0; x < ow; ++x) {
      const auto& wt = tx.weights[x];
      for (int64_t c = 0; c < C; ++c) {
        double s = 0.0;
        for (size_t k = 0; k < wt.size(); ++k) s += wt[k] * row[(tx.first[x] + static_cast<int64_t>(k)) * C + c];
        mid[(y * ow + x) * C + c] = s;
      }
    }
  }
  for (int64_t y = 0; y < oh; ++y) {
    const auto& wt = ty.weights[y];
    for (int64_t x = 0; x < ow; ++x) {
      for (int64_t c = 0; c < C; ++c) {
        double s = 0.0;
        for (size_t k = 0; k < wt.size(); ++k) s += wt[k] * mid[((ty.first[y] + static_cast<int64_t>(k)) * ow + x) * C + c];
        s = std::clamp(s, 0.0, 255.0);
        dst[(y * ow + x) * C + c] = static_cast<uint8_t>(std::nearbyint(s));  // half to even
      }
    }
  }
}

}  // namespace gemlet::ops
