#include "tools/convert/source.h"

#include "format/gguf_kquants.h"
#include "kernels/ref/quant.h"

namespace gemlet::convert {

const char* SourceTypeName(SourceType t) {
  switch (t) {
    case SourceType::kF32:
      return "F32";
    case SourceType::kF16:
      return "F16";
    case SourceType::kBF16:
      return "BF16";
    case SourceType::kQ8_0:
      return "Q8_0";
    case SourceType::kQ4_0:
      return "Q4_0";
    case SourceType::kQ4_K:
      return "Q4_K";
    case SourceType::kQ5_K:
      return "Q5_K";
    case SourceType::kQ6_K:
      return "Q6_K";
  }
  return "?";
}

std::optional<TensorType> LosslessType(SourceType t) {
  switch (t) {
    case SourceType::kF32:
      return TensorType::kF32;
    case SourceType::kF16:
      return TensorType::kF16;
    case SourceType::kBF16:
      return TensorType::kBF16;
    case SourceType::kQ8_0:
      return TensorType::kQ8;
    case SourceType::kQ4_0:
      return TensorType::kQ4;
    default:
      return std::nullopt;
  }
}

int SourceBlockElems(SourceType t) {
  switch (t) {
    case SourceType::kF32:
    case SourceType::kF16:
    case SourceType::kBF16:
      return 1;
    case SourceType::kQ8_0:
    case SourceType::kQ4_0:
      return kQBlock;
    default:
      return kQK_K;
  }
}

int SourceBlockBytes(SourceType t) {
  switch (t) {
    case SourceType::kF32:
      return 4;
    case SourceType::kF16:
    case SourceType::kBF16:
      return 2;
    case SourceType::kQ8_0:
      return sizeof(BlockQ8);
    case SourceType::kQ4_0:
      return sizeof(BlockQ4);
    case SourceType::kQ4_K:
      return sizeof(BlockQ4K);
    case SourceType::kQ5_K:
      return sizeof(BlockQ5K);
    case SourceType::kQ6_K:
      return sizeof(BlockQ6K);
  }
  return 0;
}

int64_t SourceTensor::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}

uint64_t SourceTensor::row_bytes() const {
  return static_cast<uint64_t>(cols() / SourceBlockElems(type)) * SourceBlockBytes(type);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void DecodeRows(const SourceTensor& t, int64_t row0, int64_t n, float* out) {
  const int64_t cols = t.cols();
  const uint64_t rb = t.row_bytes();
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* src = t.data + static_cast<uint64_t>(row0 + r) * rb;
    float* dst = out + r * cols;
    switch (t.type) {
      case SourceType::kF32:
        kernels::DequantizeRowRef(TensorType::kF32, src, dst, cols);
        break;
      case SourceType::kF16:
        kernels::DequantizeRowRef(TensorType::kF16, src, dst, cols);
        break;
      case SourceType::kBF16:
        kernels::DequantizeRowRef(TensorType::kBF16, src, dst, cols);
        break;
      case SourceType::kQ8_0:
        kernels::DequantizeRowRef(TensorType::kQ8, src, dst, cols);
        break;
      case SourceType::kQ4_0:
        kernels::DequantizeRowRef(TensorType::kQ4, src, dst, cols);
        break;
      case SourceType::kQ4_K:
        DequantizeRowQ4K(reinterpret_cast<const BlockQ4K*>(src), dst, cols);
        break;
      case SourceType::kQ5_K:
        DequantizeRowQ5K(reinterpret_cast<const BlockQ5K*>(src), dst, cols);
        break;
      case SourceType::kQ6_K:
        DequantizeRowQ6K(reinterpret_cast<const BlockQ6K*>(src), dst, cols);
        break;
    }
  }
}

Result<SourceTensor> FromSafetensors(const SafetensorsFile& file, const SafetensorsTensor& t) {
  ASSIGN_OR_RETURN(TensorType ft, file.FloatType(t));
  SourceTensor s;
  s.source_name = t.name;
  s.type = ft == TensorType::kF32   ? SourceType::kF32
           : ft == TensorType::kF16 ? SourceType::kF16
                                    : SourceType::kBF16;
  s.shape = t.shape;
  s.data = t.data;
  s.nbytes = t.nbytes;
  s.mapped = file.mapping() != nullptr;
  return s;
}

Result<SourceTensor> FromGguf(const GgufFile& file, const GgufTensorInfo& t) {
  SourceTensor s;
  switch (static_cast<GgmlType>(t.ggml_type)) {
    case GgmlType::kF32:
      s.type = SourceType::kF32;
      break;
    case GgmlType::kF16:
      s.type = SourceType::kF16;
      break;
    case GgmlType::kBF16:
      s.type = SourceType::kBF16;
      break;
    case GgmlType::kQ8_0:
      s.type = SourceType::kQ8_0;
      break;
    case GgmlType::kQ4_0:
      s.type = SourceType::kQ4_0;
      break;
    case GgmlType::kQ4_K:
      s.type = SourceType::kQ4_K;
      break;
    case GgmlType::kQ5_K:
      s.type = SourceType::kQ5_K;
      break;
    case GgmlType::kQ6_K:
      s.type = SourceType::kQ6_K;
      break;
    default:
      return Unsupported(file.path() + ": tensor '" + t.name + "' has type " + t.type_name() +
                         " (convertible: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
  }
  s.source_name = t.name;
  s.shape = t.shape;
  s.data = t.data;
  s.nbytes = t.nbytes;
  s.mapped = file.mapping() != nullptr;
  return s;
}

}  // namespace gemlet::convert
