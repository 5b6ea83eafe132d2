#include "format/gemlet_file.h"

#include <cstring>
#include <limits>

#include "format/file_layout.h"

namespace gemlet {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// Bounds-checked little-endian cursor over a byte range.
class Cursor {
 public:
  Cursor(const uint8_t* p, uint64_t n) : p_(p), n_(n) {}
  bool Read(void* out, uint64_t k) {
    if (k > n_ - pos_) return false;
    if (k) std::memcpy(out, p_ + pos_, k);  // `out` may be null when k == 0 (empty vectors)
    pos_ += k;
    return true;
  }
  template <typename T>
  bool Get(T* v) { return Read(v, sizeof(T)); }
  bool Bytes(uint64_t k, const uint8_t** out) {
    if (k > n_ - pos_) return false;
    *out = p_ + pos_;
    pos_ += k;
    return true;
  }
  uint64_t remaining() const { return n_ - pos_; }

 private:
  const uint8_t* p_;
  uint64_t n_;
  uint64_t pos_ = 0;
};

// The vocabulary section [p, p + size) (docs/file-format.md §3) into *out, or only checked
// when out is null.
Status ParseVocab(const std::string& name, const uint8_t* p, uint64_t size, Vocab* out) {
  auto bad = [&](const std::string& what) { return Corrupt(name + ": not a valid .gemlet file: " + what); };
  Cursor c(p, size);
  layout::VocabHeader vh;
  if (!c.Get(&vh)) return bad("vocabulary section truncated");
  // The tables must fit before they are read (their size cannot wrap: 32-bit counts); the
  // 64-bit blob size is left to the checked read below, since added to them it could wrap.
  const uint64_t tables = uint64_t{vh.n_tokens} * sizeof(layout::VocabEntry) + uint64_t{vh.n_merges} * 8;
  if (tables > c.remaining()) return bad("vocabulary section truncated");
  const uint8_t *entries = nullptr, *merges = nullptr, *blob = nullptr;
  if (!c.Bytes(uint64_t{vh.n_tokens} * sizeof(layout::VocabEntry), &entries) ||
      !c.Bytes(uint64_t{vh.n_merges} * 8, &merges) || !c.Bytes(vh.blob_size, &blob)) {
    return bad("vocabulary section truncated");
  }
  if (out != nullptr) {
    out->pieces.resize(vh.n_tokens);
    out->scores.resize(vh.n_tokens);
    out->types.resize(vh.n_tokens);
    out->merges.resize(vh.n_merges);
  }
  for (uint32_t i = 0; i < vh.n_tokens; ++i) {
    layout::VocabEntry e;
    std::memcpy(&e, entries + uint64_t{i} * sizeof(e), sizeof(e));
    if (e.blob_offset > vh.blob_size || e.length > vh.blob_size - e.blob_offset) {
      return bad("vocabulary piece " + std::to_string(i) + " lies outside its blob");
    }
    if (e.type < 1 || e.type > 6) {
      return bad("vocabulary piece " + std::to_string(i) + " has unknown type " + std::to_string(e.type));
    }
    if (out != nullptr) {
      out->pieces[i].assign(reinterpret_cast<const char*>(blob) + e.blob_offset, e.length);
      out->scores[i] = e.score;
      out->types[i] = static_cast<TokenType>(e.type);
    }
  }
  for (uint32_t i = 0; i < vh.n_merges; ++i) {
    int32_t ab[2];
    std::memcpy(ab, merges + uint64_t{i} * 8, 8);
    const int32_t a = ab[0], b = ab[1];
    if (a < 0 || b < 0 || static_cast<uint32_t>(a) >= vh.n_tokens || static_cast<uint32_t>(b) >= vh.n_tokens) {
      return bad("merge " + std::to_string(i) + " names a token outside the vocabulary");
    }
    if (out != nullptr) out->merges[i] = {a, b};
  }
  return Status::Ok();
}

}  // namespace

Vocab GemletFile::ReadVocab() const {
  Vocab v;
  if (vocab_tokens_ == 0) return v;
  const Status st = ParseVocab(name_, data_ + vocab_offset_, vocab_size_, &v);
  GEMLET_CHECK_MSG(st.ok(), "the vocabulary was validated when the file was opened");
  if (map_) map_->DropPages(vocab_offset_, vocab_size_);
  return v;
}

const TensorView* GemletFile::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Status GemletFile::Parse() {
  auto bad = [&](const std::string& what) {
    return Corrupt(name_ + ": not a valid .gemlet file: " + what);
  };
  layout::FileHeader h;
  if (size_ < sizeof(h)) {
    return bad("file is " + std::to_string(size_) + " bytes, shorter than the 64-byte header");
  }
  std::memcpy(&h, data_, sizeof(h));
  if (std::memcmp(h.magic, kGemletMagic, sizeof(h.magic)) != 0) return bad("bad magic");
  version_ = h.version;
  if (h.version != kGemletVersion) {
    return Unsupported(name_ + ": .gemlet version " + std::to_string(h.version) +
                       " is not supported (this build reads version " +
                       std::to_string(kGemletVersion) + "); re-convert the model");
  }
  if (h.header_size != sizeof(h)) return bad("header size " + std::to_string(h.header_size));
  if (h.file_size != size_) {
    return bad("header says " + std::to_string(h.file_size) + " bytes but the file has " +
               std::to_string(size_) + (h.file_size > size_ ? " (truncated)" : ""));
  }
  if (h.alignment != kGemletAlignment) return bad("alignment " + std::to_string(h.alignment));
  if (h.section_count == 0 || h.section_count > layout::kMaxSections) {
    return bad("section count " + std::to_string(h.section_count));
  }
  if (h.section_table_offset > size_ ||
      uint64_t{h.section_count} * sizeof(layout::SectionEntry) > size_ - h.section_table_offset) {
    return bad("section table lies outside the file");
  }
  if (h.tensor_data_offset > size_ || h.tensor_data_size > size_ - h.tensor_data_offset ||
      h.tensor_data_offset % kGemletAlignment != 0) {
    return bad("tensor data region lies outside the file or is misaligned");
  }

  const layout::SectionEntry* meta = nullptr;
  const layout::SectionEntry* vocab = nullptr;
  const layout::SectionEntry* index = nullptr;
  std::vector<layout::SectionEntry> sections(h.section_count);
  std::memcpy(sections.data(), data_ + h.section_table_offset,
              sections.size() * sizeof(layout::SectionEntry));
  for (const auto& s : sections) {
    if (s.offset > size_ || s.size > size_ - s.offset) {
      return bad("section of kind " + std::to_string(s.kind) + " lies outside the file");
    }
    const layout::SectionEntry** slot = nullptr;
    switch (static_cast<SectionKind>(s.kind)) {
      case SectionKind::kMetadata: slot = &meta; break;
      case SectionKind::kVocab: slot = &vocab; break;
      case SectionKind::kTensorIndex: slot = &index; break;
      default: continue;  // unknown sections are skipped (forward compatible)
    }
    if (*slot) return bad("duplicate section of kind " + std::to_string(s.kind));
    *slot = &s;
  }
  if (!meta) return bad("no metadata section");
  if (!index) return bad("no tensor index section");

  // Metadata JSON.
  {
    const char* p = reinterpret_cast<const char*>(data_ + meta->offset);
    metadata_ = nlohmann::json::parse(p, p + meta->size, nullptr, /*allow_exceptions=*/false);
    if (metadata_.is_discarded() || !metadata_.is_object()) {
      return bad("metadata section is not a JSON object");
    }
    if (!metadata_.contains("config") || !metadata_["config"].is_object()) {
      return bad("metadata has no \"config\" object");
    }
  }

  // Vocabulary: validated here, read by ReadVocab.
  if (vocab) {
    RETURN_IF_ERROR(ParseVocab(name_, data_ + vocab->offset, vocab->size, nullptr));
    vocab_offset_ = vocab->offset;
    vocab_size_ = vocab->size;
    layout::VocabHeader vh;  // (ParseVocab checked that it fits)
    std::memcpy(&vh, data_ + vocab->offset, sizeof(vh));
    vocab_tokens_ = vh.n_tokens;
    if (map_) map_->DropPages(vocab_offset_, vocab_size_);
  }

  // Tensor index.
  Cursor c(data_ + index->offset, index->size);
  uint32_t n = 0;
  if (!c.Get(&n)) return bad("tensor index truncated");
  if (uint64_t{n} * 30 > c.remaining()) return bad("tensor index claims " + std::to_string(n) + " tensors");
  tensors_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string where = "tensor #" + std::to_string(i);
    uint16_t name_len = 0;
    if (!c.Get(&name_len) || name_len == 0 || name_len > layout::kMaxNameLen) {
      return bad(where + ": bad name length");
    }
    const uint8_t* name_p = nullptr;
    if (!c.Bytes(name_len, &name_p)) return bad(where + ": index truncated");
    TensorView t;
    t.name.assign(reinterpret_cast<const char*>(name_p), name_len);
    const std::string tw = "tensor '" + t.name + "'";
    uint32_t type = 0, lay = 0, ndim = 0;
    if (!c.Get(&type) || !c.Get(&lay) || !c.Get(&ndim)) return bad(tw + ": index truncated");
    const TypeTraits* tr = FindTypeTraits(type);
    if (!tr) return Unsupported(name_ + ": " + tw + " has unknown type " + std::to_string(type));
    t.type = static_cast<TensorType>(type);
    if (lay != static_cast<uint32_t>(TensorLayout::kRowMajor) && lay != static_cast<uint32_t>(TensorLayout::kQ4x8) &&
        lay != static_cast<uint32_t>(TensorLayout::kQ8x8)) {
      return Unsupported(name_ + ": " + tw + " has unknown layout " + std::to_string(lay));
    }
    t.layout = static_cast<TensorLayout>(lay);
    if (ndim == 0 || ndim > layout::kMaxDims) return bad(tw + ": " + std::to_string(ndim) + " dimensions");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < ndim; ++d) {
      int64_t dim = 0;
      if (!c.Get(&dim)) return bad(tw + ": index truncated");
      if (dim <= 0 || dim > (int64_t{1} << 40)) return bad(tw + ": dimension " + std::to_string(dim));
      if (numel > (uint64_t{1} << 48) / static_cast<uint64_t>(dim)) return bad(tw + ": too many elements");
      numel *= static_cast<uint64_t>(dim);
      t.shape.push_back(dim);
    }
    if (!c.Get(&t.offset) || !c.Get(&t.nbytes)) return bad(tw + ": index truncated");
    if (t.shape.back() % tr->block_elems != 0) {
      return bad(tw + ": innermost dimension " + std::to_string(t.shape.back()) +
                 " is not a multiple of the " + tr->name + " block size");
    }
    if (t.layout != TensorLayout::kRowMajor) {  // q4 / q8 rows interleaved in groups of 8 (§6)
      const TensorType want = t.layout == TensorLayout::kQ4x8 ? TensorType::kQ4 : TensorType::kQ8;
      const uint64_t rows = numel / static_cast<uint64_t>(t.shape.back());
      if (t.type != want || t.shape.size() < 2 || rows % 8 != 0) {
        return bad(tw + ": layout " + TensorLayoutName(t.layout) + " needs a " + TensorTypeName(want) +
                   " matrix whose row count is a multiple of 8 (type " + tr->name + ", " + std::to_string(rows) +
                   " rows)");
      }
    }
    const uint64_t expect = numel / tr->block_elems * tr->block_bytes;
    if (t.nbytes != expect) {
      return bad(tw + ": " + std::to_string(t.nbytes) + " bytes, expected " + std::to_string(expect));
    }
    if (t.offset % kGemletAlignment != 0) return bad(tw + ": offset is not 64-byte aligned");
    if (t.offset < h.tensor_data_offset || t.offset > h.tensor_data_offset + h.tensor_data_size ||
        t.nbytes > h.tensor_data_offset + h.tensor_data_size - t.offset) {
      return bad(tw + ": data lies outside the tensor region");
    }
    t.data = data_ + t.offset;
    if (!by_name_.emplace(t.name, tensors_.size()).second) return bad("duplicate " + tw);
    tensors_.push_back(std::move(t));
  }
  return Status::Ok();
}

}  // namespace gemlet
