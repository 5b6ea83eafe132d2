// A read-only memory map of a whole file. Weights are read in place from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace gemlet {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to size 0 with data() == nullptr.
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Hints the kernel about access to [offset, offset+len): random (no read-ahead, no huge-page
  // mappings) or sequential/will-need. Out-of-range ranges are clipped. Advisory only.
  void AdviseRandom(size_t offset, size_t len) const;
  void AdviseWillNeed(size_t offset, size_t len) const;
  // Takes the whole pages inside [offset, offset+len) out of this process's resident set
  // (MADV_DONTNEED on the read-only private mapping: the bytes stay as they are in the file,
  // and a later read faults them in again from the page cache). For data read once, such as
  // the vocabulary a tokenizer is built from. Out-of-range ranges are clipped.
  void DropPages(size_t offset, size_t len) const;

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Takes the whole pages inside [p, p + n) out of this process's resident set (MADV_DONTNEED).
// Only for read-only private *file* mappings, whose bytes stay in the file: a later read
// faults them in again from the page cache (anonymous or written memory would be lost). A
// partly covered page is kept: it may hold bytes someone else still reads.
void DropResidentPages(const void* p, size_t n);

// Reads a whole (small) file into a string: config.json, tokenizer.json, ...
Result<std::string> ReadFileToString(const std::string& path);
Status WriteStringToFile(const std::string& path, const std::string& data);

}  // namespace gemlet
