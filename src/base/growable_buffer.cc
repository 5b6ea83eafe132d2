#include "base/growable_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace gemlet {

namespace {
size_t RoundUp(size_t bytes) {
  const size_t page = GrowableBuffer::page_size();
  return (bytes + page - 1) / page * page;
}
}  // namespace

size_t GrowableBuffer::page_size() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

GrowableBuffer::~GrowableBuffer() { Release(); }

void GrowableBuffer::Release() {
  if (data_ != nullptr) ::munmap(data_, reserved_);
  data_ = nullptr;
  committed_ = reserved_ = 0;
}

GrowableBuffer::GrowableBuffer(const GrowableBuffer& other) { *this = other; }

GrowableBuffer& GrowableBuffer::operator=(const GrowableBuffer& other) {
  if (this == &other) return *this;
  if (reserved_ != other.reserved_) Release();
  if (other.reserved_ == 0) return *this;
  const Status st = Grow(other.committed_, other.reserved_);
  GEMLET_CHECK_MSG(st.ok(), "copying a KV buffer: the system refused the memory");
  std::memcpy(data_, other.data_, other.committed_);
  if (committed_ > other.committed_) std::memset(data_ + other.committed_, 0, committed_ - other.committed_);
  return *this;
}

GrowableBuffer::GrowableBuffer(GrowableBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      committed_(std::exchange(other.committed_, 0)),
      reserved_(std::exchange(other.reserved_, 0)) {}

GrowableBuffer& GrowableBuffer::operator=(GrowableBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    committed_ = std::exchange(other.committed_, 0);
    reserved_ = std::exchange(other.reserved_, 0);
  }
  return *this;
}

Status GrowableBuffer::Grow(size_t bytes, size_t max_bytes) {
  GEMLET_CHECK(bytes <= max_bytes);
  if (bytes <= committed_) return Status::Ok();
  if (data_ == nullptr) {
    const size_t reserve = RoundUp(max_bytes);
    void* p = ::mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      return OutOfRange("cannot reserve " + std::to_string(reserve) + " bytes of address space for the KV cache: " +
                        std::strerror(errno));
    }
    data_ = static_cast<uint8_t*>(p);
    reserved_ = reserve;
  }
  GEMLET_CHECK_MSG(RoundUp(max_bytes) == reserved_, "a buffer's maximum is fixed");
  const size_t want = std::min(reserved_, RoundUp(bytes));
  if (::mprotect(data_ + committed_, want - committed_, PROT_READ | PROT_WRITE) != 0) {
    return OutOfRange("cannot commit " + std::to_string(want - committed_) + " more bytes for the KV cache (" +
                      std::to_string(committed_) + " held): " + std::strerror(errno));
  }
  committed_ = want;
  return Status::Ok();
}

}  // namespace gemlet
