#include "format/gguf_kquants.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace gemlet {
namespace gguf_kquants_test {

// The 12 packed scale bytes used by the Q4_K and Q5_K tests and, worked out by hand from the
// packing (j < 4: low 6 bits of bytes j / j+4; j >= 4: nibbles of byte j+4 plus the top two bits
// of bytes j-4 / j), the eight (scale, min) pairs they hold.
constexpr uint8_t kScales[12] = {0x02, 0x03, 0x47, 0xC1, 0x01, 0x00, 0x84, 0x3F, 0x25, 0x10, 0x31, 0xFF};
constexpr int kSc[8] = {2, 3, 7, 1, 5, 0, 17, 63};
constexpr int kMin[8] = {1, 0, 4, 63, 2, 1, 35, 15};
constexpr uint16_t kF16Quarter = 0x3400, kF16Half = 0x3800;  // 0.25, 0.5

BlockQ4K MakeQ4K() {
  BlockQ4K b;
  b.d = kF16Quarter;
  b.dmin = kF16Half;
  std::memcpy(b.scales, kScales, 12);
  for (int l = 0; l < 128; ++l) b.qs[l] = static_cast<uint8_t>((l & 15) | ((15 - (l & 15)) << 4));
  return b;
}

TEST(KQuants, Q4KHandComputed) {
  const BlockQ4K b = MakeQ4K();
  std::vector<float> y(256);
  DequantizeRowQ4K(&b, y.data(), 256);
  EXPECT_EQ(y[0], -0.5f);         // 0.25·2·0 − 0.5·1
  EXPECT_EQ(y[1], 0.0f);          // 0.25·2·1 − 0.5·1
  EXPECT_EQ(y[32], 11.25f);       // 0.25·3·15 − 0.5·0 (high nibble of qs[0])
  EXPECT_EQ(y[64 + 5], 6.75f);    // 0.25·7·5 − 0.5·4
  EXPECT_EQ(y[96 + 5], -29.0f);   // 0.25·1·10 − 0.5·63
  EXPECT_EQ(y[192], -17.5f);      // 0.25·17·0 − 0.5·35
  EXPECT_EQ(y[224 + 1], 213.0f);  // 0.25·63·14 − 0.5·15
  // Every value: group g of 64 = sub-blocks 2g (low nibbles) and 2g+1 (high nibbles).
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      const int q = b.qs[32 * g + l];
      EXPECT_EQ(y[64 * g + l], 0.25f * kSc[2 * g] * (q & 15) - 0.5f * kMin[2 * g]);
      EXPECT_EQ(y[64 * g + 32 + l], 0.25f * kSc[2 * g + 1] * (q >> 4) - 0.5f * kMin[2 * g + 1]);
    }
  }
}

TEST(KQuants, Q5KHandComputed) {
  BlockQ5K b;
  b.d = kF16Quarter;
  b.dmin = kF16Half;
  std::memcpy(b.scales, kScales, 12);
  for (int l = 0; l < 128; ++l) b.qs[l] = static_cast<uint8_t>((l & 15) | ((15 - (l & 15)) << 4));
  // Even l: bits 0,2,4,6 (the low-nibble values of every group get +16); odd l: bits 1,3,5,7.
  for (int l = 0; l < 32; ++l) b.qh[l] = (l % 2 == 0) ? 0x55 : 0xAA;
  std::vector<float> y(256);
  DequantizeRowQ5K(&b, y.data(), 256);
  EXPECT_EQ(y[0], 7.5f);          // 0.25·2·(0+16) − 0.5·1
  EXPECT_EQ(y[1], 0.0f);          // 0.25·2·1 − 0.5
  EXPECT_EQ(y[32], 11.25f);       // 0.25·3·15
  EXPECT_EQ(y[33], 22.5f);        // 0.25·3·(14+16)
  EXPECT_EQ(y[192], 50.5f);       // 0.25·17·(0+16) − 0.5·35
  EXPECT_EQ(y[224 + 1], 465.0f);  // 0.25·63·(14+16) − 0.5·15
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      const int q = b.qs[32 * g + l];
      const int h0 = (b.qh[l] >> (2 * g)) & 1, h1 = (b.qh[l] >> (2 * g + 1)) & 1;
      EXPECT_EQ(y[64 * g + l], 0.25f * kSc[2 * g] * ((q & 15) + 16 * h0) - 0.5f * kMin[2 * g]);
      EXPECT_EQ(y[64 * g + 32 + l], 0.25f * kSc[2 * g + 1] * ((q >> 4) + 16 * h1) - 0.5f * kMin[2 * g + 1]);
    }
  }
}

TEST(KQuants, Q6KHandComputed) {
  BlockQ6K b;
  b.d = kF16Half;
  for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<int8_t>(i - 8);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i);
  for (int i = 0; i < 64; ++i) b.qh[i] = 0xE4;  // 2-bit fields 0, 1, 2, 3 from the bottom
  std::vector<float> y(256);
  DequantizeRowQ6K(&b, y.data(), 256);
  EXPECT_EQ(y[0], 128.0f);             // q = (0 | 0<<4) − 32 = −32, scale −8: 0.5·−8·−32
  EXPECT_EQ(y[32], 48.0f);             // ql[32] low 0, qh field 1 -> 16 − 32 = −16; scale −6
  EXPECT_EQ(y[64], 0.0f);              // ql[0] high 0, field 2 -> 32 − 32 = 0
  EXPECT_EQ(y[96], -18.0f);            // ql[32] high 2, field 3 -> 50 − 32 = 18; scale −2
  EXPECT_EQ(y[17], 108.5f);            // ql[17] low 1 -> −31; scale sc[1] = −7
  EXPECT_EQ(y[128 + 20], -14.0f);      // ql[84] low 4 -> −28; scale sc[9] = 1
  EXPECT_EQ(y[128 + 96 + 31], 80.5f);  // ql[127] high 7 | 48 -> 23; scale sc[15] = 7
}

TEST(KQuants, SeveralBlocksInARow) {
  std::vector<BlockQ4K> b(3, MakeQ4K());
  b[1].d = kF16Half;  // doubles the scale part of block 1
  std::vector<float> y(768);
  DequantizeRowQ4K(b.data(), y.data(), 768);
  EXPECT_EQ(y[0], y[512]);
  EXPECT_EQ(y[256 + 32], 2 * y[32]);  // min of sub-block 1 is 0
}

}  // namespace gguf_kquants_test
}  // namespace gemlet
