// The common part of the file readers that parse a whole file in place (GemletFile, GgufFile,
// SafetensorsFile): Open maps the file read-only and FromMemory takes a caller's buffer (the
// fuzz targets and tests), then the reader's Parse validates it. The reader keeps the mapping,
// so the views it hands out (tensor data, strings) stay valid while it lives.
//
//   class GgufFile : public MappedReader<GgufFile> {
//     friend class MappedReader<GgufFile>;  // constructs it and calls Parse
//    private:
//     GgufFile() = default;
//     Status Parse();  // reads data_[0, size_), names name_ in its errors
//   };
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "base/mapped_file.h"
#include "base/status.h"

namespace gemlet {

template <typename Reader>
class MappedReader {
 public:
  // Maps `path` and parses it; the errors name the path.
  static Result<std::unique_ptr<Reader>> Open(const std::string& path) {
    ASSIGN_OR_RETURN(auto map, MappedFile::Open(path));
    const uint8_t* data = map->data();
    const size_t size = map->size();
    return Make(path, data, size, std::move(map));
  }
  // Parses an in-memory image (the caller keeps it alive); the errors name `name`.
  static Result<std::unique_ptr<Reader>> FromMemory(const uint8_t* data, size_t size, const std::string& name) {
    return Make(name, data, size, nullptr);
  }

  // The path it was opened from (or the name given to FromMemory).
  const std::string& path() const { return name_; }
  const uint8_t* base() const { return data_; }
  size_t size() const { return size_; }
  // The file's mapping; null for FromMemory.
  const MappedFile* mapping() const { return map_.get(); }

 protected:
  MappedReader() = default;

  std::string name_;
  std::unique_ptr<MappedFile> map_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;

 private:
  static Result<std::unique_ptr<Reader>> Make(const std::string& name, const uint8_t* data, size_t size,
                                              std::unique_ptr<MappedFile> map) {
    std::unique_ptr<Reader> r(new Reader());
    r->name_ = name;
    r->data_ = data;
    r->size_ = size;
    r->map_ = std::move(map);
    RETURN_IF_ERROR(r->Parse());
    return r;
  }
};

}  // namespace gemlet
