// GGUF value types and ggml tensor types: their numbering, names and block sizes, and the
// primitives that decode and skip encoded metadata values (shared by the GGUF reader and its
// getters; format/gguf.h is the API).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "base/tensor_type.h"

namespace gemlet {

enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
const char* GgufValueTypeName(GgufValueType t);

// ggml tensor types that matter here (numbering of ggml.h).
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kI32 = 26,
  kI64 = 27,
  kBF16 = 30,
};
// "F32", "Q4_K", ... for any ggml type id (also ones this reader cannot decode); "type N" if
// the id is unknown.
std::string GgmlTypeName(uint32_t ggml_type);
// Values per block and bytes per block of a ggml type; false for an unknown id.
bool GgmlTypeSize(uint32_t ggml_type, int* block_elems, int* block_bytes);

// The gemlet type that holds a ggml type losslessly (F32, F16, BF16, Q8_0 -> q8, Q4_0 -> q4),
// or nullopt.
std::optional<TensorType> GgmlToTensorType(uint32_t ggml_type);

namespace gguf_detail {

constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are rejected

// Bytes of a scalar value type; 0 for strings, arrays and unknown types.
int ScalarSize(GgufValueType t);
bool IsInteger(GgufValueType t);

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// An integer value as (negative?, magnitude) so every integer type compares exactly.
struct IntValue {
  bool negative;
  uint64_t magnitude;
};
IntValue DecodeInt(GgufValueType t, const uint8_t* p);

// Bounds-checked reader over [0, n).
class Reader {
 public:
  Reader(const uint8_t* p, uint64_t n, uint64_t pos = 0) : p_(p), n_(n), pos_(pos) {}
  template <typename T>
  bool Get(T* v) {
    if (sizeof(T) > n_ - pos_) return false;
    std::memcpy(v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Skip(uint64_t k) {
    if (k > n_ - pos_) return false;
    pos_ += k;
    return true;
  }
  // A u64-length-prefixed string.
  bool String(std::string_view* s) {
    uint64_t len = 0;
    if (!Get(&len) || len > n_ - pos_) return false;
    *s = std::string_view(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return n_ - pos_; }
  const uint8_t* here() const { return p_ + pos_; }

 private:
  const uint8_t* p_;
  uint64_t n_;
  uint64_t pos_;
};

// Skips one value of type `t` (the type tag already read); false with `why` set if malformed.
bool SkipValue(Reader& r, GgufValueType t, int depth, std::string* why);

}  // namespace gguf_detail
}  // namespace gemlet
