// Reader of the .gemlet model file (docs/file-format.md). Open() maps the file and validates
// every structural fact before anything is used: magic, version, section table, the metadata
// JSON, the vocabulary, and each tensor's type, shape, offset, alignment and extent. Tensor
// data is never copied: TensorView::data points into the map.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/status.h"
#include "base/tensor_type.h"
#include "format/mapped_reader.h"
#include "format/vocab.h"

namespace gemlet {

constexpr char kGemletMagic[8] = {'G', 'E', 'M', 'L', 'E', 'T', '\0', '\x1a'};
constexpr uint32_t kGemletVersion = 1;
constexpr uint32_t kGemletAlignment = 64;  // every tensor starts on a 64-byte boundary

enum class SectionKind : uint32_t {
  kMetadata = 1,     // UTF-8 JSON object
  kVocab = 2,        // binary vocabulary (§3)
  kTensorIndex = 3,  // binary tensor table (§4)
};

struct TensorView {
  std::string name;
  TensorType type = TensorType::kF32;
  TensorLayout layout = TensorLayout::kRowMajor;
  std::vector<int64_t> shape;  // outermost first: [rows, cols] for a matrix
  uint64_t offset = 0;         // from the start of the file
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping

  int64_t numel() const;
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const { return cols() == 0 ? 0 : numel() / cols(); }
};

class GemletFile : public MappedReader<GemletFile> {
 public:
  // (Open, FromMemory, path, base, size and mapping: MappedReader.)
  uint32_t version() const { return version_; }
  // {"config": {...}, "tokenizer": {...}, "chat_template": "...", "provenance": {...},
  //  "quant_plan": {...}} — see docs/file-format.md §2.
  const nlohmann::json& metadata() const { return metadata_; }
  // Whether the file has a vocabulary section (validated when the file was opened).
  bool has_vocab() const { return vocab_tokens_ > 0; }
  // The vocabulary, read from its section on each call: the caller keeps it only while it
  // builds what it needs (the tokenizer), so a running engine holds one copy of the
  // vocabulary, not two, and the section's pages of a mapped file leave the resident set
  // again. Empty if the file has none.
  Vocab ReadVocab() const;
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* Find(std::string_view name) const;

 private:
  friend class MappedReader<GemletFile>;  // constructs it and calls Parse
  GemletFile() = default;
  Status Parse();

  uint32_t version_ = 0;
  nlohmann::json metadata_;
  uint64_t vocab_offset_ = 0, vocab_size_ = 0;  // the vocabulary section (size 0: none)
  uint32_t vocab_tokens_ = 0;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace gemlet
