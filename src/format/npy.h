// NumPy .npy files (format versions 1.0, 2.0 and 3.0): reading float32 / float16 / float64
// arrays into f32 (the oracle's golden logits), int32/int64 token ids, writing float32
// (`gemlet logits -o`).
// Only little-endian, C-order arrays are accepted; anything else is a clear error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace gemlet {

struct NpyArray {
  std::vector<int64_t> shape;  // outermost first; empty for a 0-d array
  std::vector<float> data;     // numel() values, C order, converted to f32
  int64_t numel() const;
};

// Parses an in-memory .npy image; `name` names it in errors.
Result<NpyArray> ParseNpy(const uint8_t* data, size_t size, const std::string& name);
Result<NpyArray> ReadNpy(const std::string& path);

// Token ids from a one-dimensional int32 (or int64) .npy array (`--tokens-file` of gemlet
// logits and run): InvalidArgument for another rank or an id outside [0, 2^31).
Result<std::vector<int32_t>> ParseNpyIds(const uint8_t* data, size_t size, const std::string& name);
Result<std::vector<int32_t>> ReadNpyIds(const std::string& path);

// The bytes of a float32 .npy v1.0 file with a 64-byte aligned header.
std::string EncodeNpyF32(const float* data, const std::vector<int64_t>& shape);
Status WriteNpyF32(const std::string& path, const float* data, const std::vector<int64_t>& shape);

}  // namespace gemlet
