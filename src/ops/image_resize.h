// Image resampling: the bicubic resize with antialiasing of PyTorch's
// interpolate(mode="bicubic", antialias=True, align_corners=False) on float data, which is
// what torchvision's resize(BICUBIC, antialias=True) computes on a uint8 image through its
// float path (GPU, and CPU before torchvision 0.17): the result is then clamped to [0, 255]
// and rounded half to even (ATen upsample_bicubic2d_aa; _compute_indices_weights_aa).
#pragma once

#include <cstdint>
#include <vector>

namespace gemlet::ops {

// The weights of one separable pass from `in` samples to `out`: output i reads the inputs
// [first[i], first[i] + weights[i].size()). Keys cubic with a = −0.5, support 2·max(1, in/out),
// source centre (i + 0.5)·in/out, weights normalised to sum 1 per output sample.
struct ResampleTaps {
  std::vector<int64_t> first;                 // [out]
  std::vector<std::vector<double>> weights;   // [out][taps]
};
ResampleTaps BicubicAntialiasTaps(int64_t in, int64_t out);

// dst [oh, ow, channels] = src [h, w, channels] (uint8, channel fastest) resized: the
// horizontal pass, then the vertical pass, in double with no rounding between them, then
// clamp and round half to even.
void ResizeBicubicAntialias(const uint8_t* src, int64_t h, int64_t w, int64_t channels, int64_t oh, int64_t ow,
                            uint8_t* dst);

}  // namespace gemlet::ops
