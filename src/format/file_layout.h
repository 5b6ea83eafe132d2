// On-disk structures of the .gemlet file shared by the reader and the writer
// (docs/file-format.md §1). All integers little-endian.
#pragma once

#include <cstdint>

namespace gemlet::layout {

#pragma pack(push, 1)
struct FileHeader {             // at offset 0, 64 bytes
  char magic[8];                // "GEMLET\0\x1a"
  uint32_t version;             // kGemletVersion
  uint32_t header_size;         // 64
  uint64_t file_size;           // total bytes; a shorter file is truncated
  uint64_t section_table_offset;
  uint32_t section_count;
  uint32_t alignment;           // tensor alignment, 64
  uint64_t tensor_data_offset;  // start of the tensor data region
  uint64_t tensor_data_size;
  uint64_t reserved;
};
struct SectionEntry {  // 32 bytes
  uint32_t kind;       // SectionKind
  uint32_t flags;      // 0
  uint64_t offset;
  uint64_t size;
  uint64_t reserved;
};
struct VocabHeader {  // start of the kVocab section
  uint32_t n_tokens;
  uint32_t n_merges;
  uint64_t blob_size;
};
struct VocabEntry {  // [n_tokens], then merges [n_merges] × 2 × int32, then the blob
  uint32_t blob_offset;
  uint32_t length;
  float score;
  uint8_t type;
  uint8_t pad[3];
};
#pragma pack(pop)
static_assert(sizeof(FileHeader) == 64);
static_assert(sizeof(SectionEntry) == 32);
static_assert(sizeof(VocabHeader) == 16);
static_assert(sizeof(VocabEntry) == 16);

constexpr uint32_t kMaxDims = 4;
constexpr uint32_t kMaxNameLen = 256;
constexpr uint32_t kMaxSections = 64;

}  // namespace gemlet::layout
