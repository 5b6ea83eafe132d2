// A byte buffer that grows in place: it reserves address space for its largest size up front
// (mmap PROT_NONE, which costs no memory) and commits it (mprotect read/write) as it grows,
// so its data never moves and growing copies nothing. Committed pages take memory only once
// they are written. The KV cache keeps its full-attention rows in these (runtime/kv_cache.h):
// contiguous for the attention kernel, paid for by the tokens actually held.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace gemlet {

class GrowableBuffer {
 public:
  // Commits in multiples of the system's page size.
  static size_t page_size();

  GrowableBuffer() = default;
  ~GrowableBuffer();
  // A copy reserves the same capacity and copies the committed bytes.
  GrowableBuffer(const GrowableBuffer& other);
  GrowableBuffer& operator=(const GrowableBuffer& other);
  GrowableBuffer(GrowableBuffer&& other) noexcept;
  GrowableBuffer& operator=(GrowableBuffer&& other) noexcept;

  // Makes at least `bytes` usable (≤ max_bytes), reserving max_bytes of address space on the
  // first call (max_bytes must not change afterwards). Newly committed bytes are zero.
  // OutOfRange when the system refuses the address space or the memory.
  Status Grow(size_t bytes, size_t max_bytes);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t committed() const { return committed_; }  // usable bytes (whole pages)
  size_t reserved() const { return reserved_; }    // address space held

 private:
  void Release();

  uint8_t* data_ = nullptr;
  size_t committed_ = 0, reserved_ = 0;
};

}  // namespace gemlet
