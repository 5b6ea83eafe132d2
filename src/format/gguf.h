// Reader of GGUF files (versions 2 and 3, little-endian), the llama.cpp model format:
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv,
//   n_kv × (string key, u32 value_type, value)            strings are u64 length + bytes,
//   n_tensors × (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset),
//   padding to general.alignment (default 32), then the tensor data; offsets are relative to it.
// Every value, array (also nested), tensor extent and alignment is validated when the file is
// opened; values are decoded lazily from the mapping by the typed getters, which return an
// error naming the file and key for a missing key or a type that does not fit.
//
// Tensor shapes are given outermost first (GGUF's `ne` is innermost first, so it is reversed).
// Tensors are zero-copy views. Types F32, F16, BF16, Q8_0, Q4_0 map to gemlet types
// losslessly (Q8_0/Q4_0 blocks are byte-identical to BlockQ8/BlockQ4); Q4_K, Q5_K, Q6_K can be
// dequantized to f32 (format/gguf_kquants.h). Other ggml types are listed but not readable.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "base/tensor_type.h"
#include "format/gguf_types.h"
#include "format/mapped_reader.h"

namespace gemlet {

// A metadata value: its type and where its encoding lies in the file (decoded on demand).
struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  GgufValueType elem_type = GgufValueType::kU8;  // arrays only
  uint64_t count = 0;                            // arrays only: number of elements
  const uint8_t* raw = nullptr;                  // the encoding after the type tag
  uint64_t raw_size = 0;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // outermost first (reverse of GGUF's ne)
  uint32_t ggml_type = 0;
  bool known_type = false;  // size known, extent validated
  uint64_t offset = 0;      // from the start of the file
  uint64_t nbytes = 0;      // 0 for an unknown type
  const uint8_t* data = nullptr;

  int64_t numel() const;
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const;
  std::string type_name() const { return GgmlTypeName(ggml_type); }
};

class GgufFile : public MappedReader<GgufFile> {
 public:
  // (Open, FromMemory, path, base, size and mapping: MappedReader.)
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata keys in file order.
  const std::vector<std::string>& keys() const { return keys_; }
  const GgufValue* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // Typed getters: an error if the key is missing or its value does not fit the type.
  // Integer getters accept any integer type whose value fits; float getters accept F32/F64.
  Result<uint32_t> GetU32(std::string_view key) const;
  Result<int64_t> GetI64(std::string_view key) const;
  Result<uint64_t> GetU64(std::string_view key) const;
  Result<double> GetF64(std::string_view key) const;
  Result<float> GetF32(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::string> GetString(std::string_view key) const;
  // Arrays: the element type must match (integers: any integer type that fits).
  Result<uint64_t> GetArrayLength(std::string_view key) const;
  Result<std::vector<std::string>> GetStringArray(std::string_view key) const;
  Result<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  Result<std::vector<float>> GetF32Array(std::string_view key) const;
  Result<std::vector<bool>> GetBoolArray(std::string_view key) const;
  // Elements of a (possibly nested) array value.
  Result<std::vector<GgufValue>> ArrayElements(const GgufValue& v) const;

  // Any value as JSON (arrays longer than max_array are cut, with a final "... N more").
  nlohmann::json ValueToJson(const GgufValue& v, uint64_t max_array = UINT64_MAX) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;

 private:
  friend class MappedReader<GgufFile>;  // constructs it and calls Parse
  GgufFile() = default;
  Status Parse();
  Result<const GgufValue*> Require(std::string_view key) const;

  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::string> keys_;
  std::unordered_map<std::string, GgufValue> values_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace gemlet
