#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gemlet {

Result<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(e));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return IoError(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return IoError(path + ": mmap failed: " + std::strerror(e));
    }
    f->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return f;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

static void Advise(const uint8_t* base, size_t size, size_t offset, size_t len, int advice) {
  if (!base || offset >= size) return;
  if (len > size - offset) len = size - offset;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(base + offset) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(base + offset + len);
  ::madvise(reinterpret_cast<void*>(start), end - start, advice);
}

void MappedFile::AdviseRandom(size_t offset, size_t len) const {
  Advise(data_, size_, offset, len, MADV_RANDOM);
  // Nor whole 2 MiB folios of the page cache mapped at once (FilePmdMapped): one touched row
  // would put 2 MiB in the resident set.
  Advise(data_, size_, offset, len, MADV_NOHUGEPAGE);
}
void MappedFile::AdviseWillNeed(size_t offset, size_t len) const {
  Advise(data_, size_, offset, len, MADV_WILLNEED);
}
void MappedFile::DropPages(size_t offset, size_t len) const {
  if (!data_ || offset >= size_) return;
  DropResidentPages(data_ + offset, std::min(len, size_ - offset));
}

void DropResidentPages(const void* p, size_t n) {
  if (p == nullptr || n == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t start = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(page - 1);
  if (start < end) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

Result<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return ss.str();
}

Status WriteStringToFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

}  // namespace gemlet
