// Reader of Hugging Face safetensors files (https://huggingface.co/docs/safetensors): an
// 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {...}, "NAME": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, ...}
// then the data area; offsets are relative to the data area. Every structural fact is checked
// before use (header length, JSON, dtype sizes against shapes and offsets, extents inside the
// data area, no overlap). Tensors are zero-copy views into the mapping. A tensor whose dtype we
// do not know (I64, F8_*, ...) is listed; reading it as floats is an error (FloatType).
//
// SafetensorsFolder loads the weights of a checkpoint folder: one `model.safetensors`, or the
// shards named by `model.safetensors.index.json` ("weight_map": tensor -> shard file).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "base/tensor_type.h"
#include "format/mapped_reader.h"

namespace gemlet {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;           // as written: "BF16", "F32", "I64", "F8_E4M3", ...
  int element_bytes = 0;       // 0 when the dtype is not one we know
  std::vector<int64_t> shape;  // outermost first; empty for a 0-d (scalar) tensor
  uint64_t offset = 0;         // from the start of the file
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping (or the caller's buffer)

  int64_t numel() const;
};

class SafetensorsFile : public MappedReader<SafetensorsFile> {
 public:
  // Headers above this size are rejected (the reference implementation uses the same cap).
  static constexpr uint64_t kMaxHeaderBytes = 100u << 20;

  // (Open, FromMemory, path, base, size and mapping: MappedReader.)
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* Find(std::string_view name) const;
  // The "__metadata__" object (string -> string), or an empty object.
  const nlohmann::json& metadata() const { return metadata_; }

  // The gemlet float type of `t` (F32, F16, BF16); an error naming this file, the tensor and
  // its dtype otherwise.
  Result<TensorType> FloatType(const SafetensorsTensor& t) const;

 private:
  friend class MappedReader<SafetensorsFile>;  // constructs it and calls Parse
  SafetensorsFile() = default;
  Status Parse();

  nlohmann::json metadata_ = nlohmann::json::object();
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
};

// Bytes per element of a safetensors dtype name, 0 if unknown.
int SafetensorsDtypeBytes(std::string_view dtype);

class SafetensorsFolder {
 public:
  struct Entry {
    const SafetensorsFile* file;
    const SafetensorsTensor* tensor;
  };

  // `folder` holds model.safetensors.index.json (sharded) or model.safetensors; failing both,
  // every *.safetensors file in it. A tensor present in two files is an error, so is an index
  // naming a shard that does not exist or a tensor its shard does not hold.
  static Result<std::unique_ptr<SafetensorsFolder>> Open(const std::string& folder);

  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  // Every tensor of every file, in file order.
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* Find(std::string_view name) const;

 private:
  SafetensorsFolder() = default;
  Status AddFile(std::unique_ptr<SafetensorsFile> f);

  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace gemlet
