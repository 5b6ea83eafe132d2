#include "format/gemlet_writer.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include "format/file_layout.h"
#include "format/gemlet_file.h"

namespace gemlet {

Result<std::unique_ptr<GemletWriter>> GemletWriter::Create(const std::string& path) {
  std::unique_ptr<GemletWriter> w(new GemletWriter());
  w->path_ = path;
  w->tmp_path_ = path + ".tmp";
  w->f_ = std::fopen(w->tmp_path_.c_str(), "wb");
  if (!w->f_) return IoError(w->tmp_path_ + ": cannot create: " + std::strerror(errno));
  layout::FileHeader h{};  // placeholder, patched by Finish()
  RETURN_IF_ERROR(w->Write(&h, sizeof(h)));
  return w;
}

GemletWriter::~GemletWriter() {
  if (f_) std::fclose(f_);
  if (!finished_) std::remove(tmp_path_.c_str());
}

Status GemletWriter::Write(const void* data, size_t n) {
  if (n && std::fwrite(data, 1, n, f_) != n) {
    return IoError(tmp_path_ + ": write failed: " + std::strerror(errno));
  }
  pos_ += n;
  return Status::Ok();
}

Status GemletWriter::PadTo(uint64_t alignment) {
  static const uint8_t zeros[4096] = {};
  uint64_t pad = (alignment - pos_ % alignment) % alignment;
  return Write(zeros, pad);
}

Status GemletWriter::AddTensor(const std::string& name, TensorType type,
                               const std::vector<int64_t>& shape, const void* data,
                               size_t nbytes, TensorLayout layout) {
  RETURN_IF_ERROR(BeginTensor(name, type, shape, layout));
  RETURN_IF_ERROR(AppendTensorData(data, nbytes));
  return EndTensor();
}

Status GemletWriter::BeginTensor(const std::string& name, TensorType type,
                                 const std::vector<int64_t>& shape, TensorLayout layout) {
  GEMLET_CHECK(!in_tensor_ && !finished_);
  if (name.empty() || name.size() > layout::kMaxNameLen) {
    return InvalidArgument("tensor name '" + name + "' is empty or too long");
  }
  if (shape.empty() || shape.size() > layout::kMaxDims) {
    return InvalidArgument("tensor '" + name + "' has " + std::to_string(shape.size()) + " dimensions");
  }
  for (const auto& e : entries_) {
    if (e.name == name) return InvalidArgument("tensor '" + name + "' written twice");
  }
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d <= 0) return InvalidArgument("tensor '" + name + "' has a non-positive dimension");
    numel *= static_cast<uint64_t>(d);
  }
  const TypeTraits& tr = GetTypeTraits(type);
  if (shape.back() % tr.block_elems != 0) {
    return InvalidArgument("tensor '" + name + "': innermost dimension " +
                           std::to_string(shape.back()) + " is not a multiple of " +
                           std::to_string(tr.block_elems) + " for type " + tr.name);
  }
  RETURN_IF_ERROR(PadTo(kGemletAlignment));
  expected_bytes_ = numel / tr.block_elems * tr.block_bytes;
  entries_.push_back({name, type, layout, shape, pos_, 0});
  in_tensor_ = true;
  return Status::Ok();
}

Status GemletWriter::AppendTensorData(const void* data, size_t nbytes) {
  GEMLET_CHECK(in_tensor_);
  Entry& e = entries_.back();
  if (e.nbytes + nbytes > expected_bytes_) {
    return Internal("tensor '" + e.name + "': more data than its shape holds");
  }
  e.nbytes += nbytes;
  return Write(data, nbytes);
}

Status GemletWriter::EndTensor() {
  GEMLET_CHECK(in_tensor_);
  in_tensor_ = false;
  const Entry& e = entries_.back();
  if (e.nbytes != expected_bytes_) {
    return Internal("tensor '" + e.name + "': wrote " + std::to_string(e.nbytes) +
                    " bytes, its shape needs " + std::to_string(expected_bytes_));
  }
  return Status::Ok();
}

Status GemletWriter::Finish() {
  GEMLET_CHECK(!in_tensor_ && !finished_);
  RETURN_IF_ERROR(PadTo(kGemletAlignment));
  const uint64_t data_begin = sizeof(layout::FileHeader);
  const uint64_t data_end = pos_;
  // Tensors start at the first 64-byte boundary after the header.
  const uint64_t data_offset = (data_begin + kGemletAlignment - 1) / kGemletAlignment * kGemletAlignment;

  std::vector<layout::SectionEntry> sections;
  // Metadata.
  {
    const std::string meta = metadata_.dump();
    sections.push_back({static_cast<uint32_t>(SectionKind::kMetadata), 0, pos_, meta.size(), 0});
    RETURN_IF_ERROR(Write(meta.data(), meta.size()));
    RETURN_IF_ERROR(PadTo(8));
  }
  // Vocabulary.
  if (!vocab_.empty()) {
    const uint64_t start = pos_;
    std::string blob;
    std::vector<layout::VocabEntry> entries(vocab_.size());
    for (size_t i = 0; i < vocab_.size(); ++i) {
      if (blob.size() > std::numeric_limits<uint32_t>::max()) return Internal("vocabulary too large");
      entries[i].blob_offset = static_cast<uint32_t>(blob.size());
      entries[i].length = static_cast<uint32_t>(vocab_.pieces[i].size());
      entries[i].score = i < vocab_.scores.size() ? vocab_.scores[i] : 0.0f;
      entries[i].type = static_cast<uint8_t>(i < vocab_.types.size() ? vocab_.types[i] : TokenType::kNormal);
      blob += vocab_.pieces[i];
    }
    layout::VocabHeader vh{static_cast<uint32_t>(vocab_.size()),
                           static_cast<uint32_t>(vocab_.merges.size()), blob.size()};
    RETURN_IF_ERROR(Write(&vh, sizeof(vh)));
    RETURN_IF_ERROR(Write(entries.data(), entries.size() * sizeof(layout::VocabEntry)));
    for (const auto& m : vocab_.merges) {
      int32_t ab[2] = {m.first, m.second};
      RETURN_IF_ERROR(Write(ab, sizeof(ab)));
    }
    RETURN_IF_ERROR(Write(blob.data(), blob.size()));
    sections.push_back({static_cast<uint32_t>(SectionKind::kVocab), 0, start, pos_ - start, 0});
    RETURN_IF_ERROR(PadTo(8));
  }
  // Tensor index.
  {
    const uint64_t start = pos_;
    uint32_t n = static_cast<uint32_t>(entries_.size());
    RETURN_IF_ERROR(Write(&n, 4));
    for (const auto& e : entries_) {
      uint16_t len = static_cast<uint16_t>(e.name.size());
      RETURN_IF_ERROR(Write(&len, 2));
      RETURN_IF_ERROR(Write(e.name.data(), len));
      uint32_t type = static_cast<uint32_t>(e.type), lay = static_cast<uint32_t>(e.layout),
               ndim = static_cast<uint32_t>(e.shape.size());
      RETURN_IF_ERROR(Write(&type, 4));
      RETURN_IF_ERROR(Write(&lay, 4));
      RETURN_IF_ERROR(Write(&ndim, 4));
      for (int64_t d : e.shape) RETURN_IF_ERROR(Write(&d, 8));
      RETURN_IF_ERROR(Write(&e.offset, 8));
      RETURN_IF_ERROR(Write(&e.nbytes, 8));
    }
    sections.push_back({static_cast<uint32_t>(SectionKind::kTensorIndex), 0, start, pos_ - start, 0});
    RETURN_IF_ERROR(PadTo(8));
  }
  const uint64_t table = pos_;
  RETURN_IF_ERROR(Write(sections.data(), sections.size() * sizeof(layout::SectionEntry)));

  layout::FileHeader h{};
  std::memcpy(h.magic, kGemletMagic, sizeof(h.magic));
  h.version = kGemletVersion;
  h.header_size = sizeof(h);
  h.file_size = pos_;
  h.section_table_offset = table;
  h.section_count = static_cast<uint32_t>(sections.size());
  h.alignment = kGemletAlignment;
  h.tensor_data_offset = data_offset;
  h.tensor_data_size = data_end > data_offset ? data_end - data_offset : 0;
  if (std::fseek(f_, 0, SEEK_SET) != 0 || std::fwrite(&h, sizeof(h), 1, f_) != 1 ||
      std::fflush(f_) != 0) {
    return IoError(tmp_path_ + ": cannot write header: " + std::strerror(errno));
  }
  int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) return IoError(tmp_path_ + ": close failed: " + std::strerror(errno));
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return IoError("cannot rename " + tmp_path_ + " to " + path_ + ": " + std::strerror(errno));
  }
  finished_ = true;
  return Status::Ok();
}

}  // namespace gemlet
