// Streaming writer of Hugging Face .safetensors files. The header (8-byte little-endian
// length, then JSON: name -> {dtype, shape, data_offsets}) is computed up front from the list
// of tensors, so the data can follow tensor by tensor in pieces and the whole model is never
// held in memory. Output goes to PATH.tmp and is renamed on Finish().
//
// Format: https://github.com/huggingface/safetensors ("Format" section): offsets are relative
// to the first byte after the header; the header is padded with spaces to a multiple of 8.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace gemlet {

struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype;           // "BF16", "F16", "F32", "I8", ... (SafetensorsDtypeBytes knows it)
  std::vector<int64_t> shape;  // outermost first; {} is a 0-d scalar
};

class SafetensorsWriter {
 public:
  // Writes the header for `tensors`, whose data must then be appended in exactly this order.
  // `metadata` becomes "__metadata__" (string values only, per the format); HF writes
  // {"format": "pt"}.
  static Result<std::unique_ptr<SafetensorsWriter>> Create(const std::string& path,
                                                           std::vector<SafetensorsTensorInfo> tensors,
                                                           const nlohmann::json& metadata = {
                                                               {"format", "pt"}});
  ~SafetensorsWriter();  // removes PATH.tmp if Finish() was not reached
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // Appends raw little-endian element bytes. A call may span tensor boundaries; writing more
  // than the tensors hold in total is an error.
  Status Append(const void* data, size_t nbytes);
  // Checks that every tensor got all its bytes, flushes and renames PATH.tmp to PATH.
  Status Finish();

  // Index of the tensor the next appended byte belongs to (tensors().size() when complete).
  size_t current_tensor() const { return current_; }
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  uint64_t header_bytes() const { return header_bytes_; }  // 8 + JSON length
  uint64_t data_bytes() const { return data_bytes_; }
  uint64_t file_bytes() const { return header_bytes_ + data_bytes_; }
  // Byte size of tensor i's data.
  uint64_t tensor_bytes(size_t i) const { return ends_[i] - (i ? ends_[i - 1] : 0); }

 private:
  SafetensorsWriter() = default;

  std::string path_, tmp_path_;
  FILE* f_ = nullptr;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::vector<uint64_t> ends_;  // [n] end offset of each tensor's data
  uint64_t header_bytes_ = 0;
  uint64_t data_bytes_ = 0;
  uint64_t written_ = 0;  // data bytes appended so far
  size_t current_ = 0;
  bool finished_ = false;
};

}  // namespace gemlet
