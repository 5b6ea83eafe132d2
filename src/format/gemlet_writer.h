// Streaming writer of .gemlet files. Tensors are written to disk as they come (the whole
// model is never held in memory); the metadata, vocabulary and tensor index go at the end and
// the header is patched last. Output goes to PATH.tmp and is renamed on Finish(), so a failed
// conversion never leaves a half-written model behind.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/tensor_type.h"
#include "format/vocab.h"

namespace gemlet {

class GemletWriter {
 public:
  static Result<std::unique_ptr<GemletWriter>> Create(const std::string& path);
  ~GemletWriter();  // removes PATH.tmp if Finish() was not reached

  // A whole tensor at once.
  Status AddTensor(const std::string& name, TensorType type, const std::vector<int64_t>& shape,
                   const void* data, size_t nbytes,
                   TensorLayout layout = TensorLayout::kRowMajor);
  // Or in pieces: Begin, Append (any number of times), End. End checks the byte count.
  Status BeginTensor(const std::string& name, TensorType type, const std::vector<int64_t>& shape,
                     TensorLayout layout = TensorLayout::kRowMajor);
  Status AppendTensorData(const void* data, size_t nbytes);
  Status EndTensor();

  void SetMetadata(nlohmann::json metadata) { metadata_ = std::move(metadata); }
  void SetVocab(Vocab vocab) { vocab_ = std::move(vocab); }
  Status Finish();

  uint64_t bytes_written() const { return pos_; }

 private:
  struct Entry {
    std::string name;
    TensorType type;
    TensorLayout layout;
    std::vector<int64_t> shape;
    uint64_t offset;
    uint64_t nbytes;
  };
  GemletWriter() = default;
  Status Write(const void* data, size_t n);
  Status PadTo(uint64_t alignment);

  std::string path_, tmp_path_;
  FILE* f_ = nullptr;
  uint64_t pos_ = 0;
  bool finished_ = false;
  bool in_tensor_ = false;
  uint64_t expected_bytes_ = 0;
  std::vector<Entry> entries_;
  nlohmann::json metadata_ = nlohmann::json::object();
  Vocab vocab_;
};

}  // namespace gemlet
