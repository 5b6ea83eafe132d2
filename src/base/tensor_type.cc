#include "base/tensor_type.h"

namespace gemlet {

namespace {
constexpr TypeTraits kF32{"f32", 1, 4};
constexpr TypeTraits kF16{"f16", 1, 2};
constexpr TypeTraits kBF16{"bf16", 1, 2};
constexpr TypeTraits kQ8{"q8", kQBlock, sizeof(BlockQ8)};
constexpr TypeTraits kQ4{"q4", kQBlock, sizeof(BlockQ4)};
}  // namespace

const TypeTraits* FindTypeTraits(uint32_t raw) {
  switch (static_cast<TensorType>(raw)) {
    case TensorType::kF32: return &kF32;
    case TensorType::kF16: return &kF16;
    case TensorType::kBF16: return &kBF16;
    case TensorType::kQ8: return &kQ8;
    case TensorType::kQ4: return &kQ4;
  }
  return nullptr;
}

const TypeTraits& GetTypeTraits(TensorType type) {
  const TypeTraits* t = FindTypeTraits(static_cast<uint32_t>(type));
  GEMLET_CHECK(t != nullptr);
  return *t;
}

const char* TensorTypeName(TensorType type) { return GetTypeTraits(type).name; }

const char* TensorLayoutName(TensorLayout layout) {
  switch (layout) {
    case TensorLayout::kQ4x8:
      return "q4x8";
    case TensorLayout::kQ8x8:
      return "q8x8";
    default:
      return "row-major";
  }
}

Result<TensorType> ParseTensorType(const std::string& name) {
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8,
                       TensorType::kQ4}) {
    if (name == TensorTypeName(t)) return t;
  }
  return InvalidArgument("unknown tensor type '" + name + "' (expected f32, f16, bf16, q8 or q4)");
}

Result<uint64_t> RowBytes(TensorType type, int64_t cols) {
  const TypeTraits& tr = GetTypeTraits(type);
  if (cols < 0 || cols % tr.block_elems != 0) {
    return InvalidArgument("row of " + std::to_string(cols) + " values is not a multiple of the " +
                           tr.name + " block size " + std::to_string(tr.block_elems));
  }
  return static_cast<uint64_t>(cols / tr.block_elems) * static_cast<uint64_t>(tr.block_bytes);
}

}  // namespace gemlet
