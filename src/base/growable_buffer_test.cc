#include "base/growable_buffer.h"

#include <gtest/gtest.h>

#include <cstring>

namespace gemlet {
namespace growable_buffer_test {

TEST(GrowableBufferTest, GrowsInPlaceKeepingItsBytes) {
  GrowableBuffer b;
  EXPECT_EQ(b.committed(), 0u);
  const size_t page = GrowableBuffer::page_size();
  const size_t max = size_t{64} << 20;  // 64 MiB of address space, none of it committed yet
  ASSERT_TRUE(b.Grow(100, max).ok());
  EXPECT_EQ(b.committed(), page);
  EXPECT_EQ(b.reserved(), max);
  uint8_t* p = b.data();
  for (size_t i = 0; i < b.committed(); ++i) p[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(b.Grow(5 * page + 1, max).ok());
  EXPECT_EQ(b.data(), p) << "growing must not move the data";
  EXPECT_EQ(b.committed(), 6 * page);
  for (size_t i = 0; i < page; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(i * 7)) << i;
  for (size_t i = page; i < b.committed(); ++i) ASSERT_EQ(p[i], 0) << i;
  p[b.committed() - 1] = 9;  // the last committed byte is writable
  ASSERT_TRUE(b.Grow(10, max).ok());  // never shrinks
  EXPECT_EQ(b.committed(), 6 * page);
  ASSERT_TRUE(b.Grow(max, max).ok());  // up to the whole reservation
  EXPECT_EQ(b.committed(), max);
}

TEST(GrowableBufferTest, CopiesAndMoves) {
  GrowableBuffer a;
  ASSERT_TRUE(a.Grow(3000, 1 << 20).ok());
  std::memset(a.data(), 0x5a, 3000);
  GrowableBuffer b = a;
  EXPECT_NE(b.data(), a.data());
  EXPECT_EQ(b.committed(), a.committed());
  EXPECT_EQ(b.reserved(), a.reserved());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.committed()), 0);
  b.data()[0] = 1;
  EXPECT_EQ(a.data()[0], 0x5a);
  GrowableBuffer c;
  ASSERT_TRUE(c.Grow(10 * GrowableBuffer::page_size(), 1 << 20).ok());
  c = a;  // a smaller copy over a larger buffer of the same reservation
  EXPECT_EQ(std::memcmp(a.data(), c.data(), a.committed()), 0);
  const uint8_t* pa = a.data();
  GrowableBuffer d = std::move(a);
  EXPECT_EQ(d.data(), pa);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.committed(), 0u);
}

}  // namespace growable_buffer_test
}  // namespace gemlet
