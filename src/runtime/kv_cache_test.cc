#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/half.h"

namespace gemlet::runtime {
namespace {

// Row of position p: every float is p (k) or −p (v), so segments can be read back.
std::vector<float> Rows(int64_t p0, int64_t T, int64_t row, float sign) {
  std::vector<float> v(T * row);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < row; ++i) v[t * row + i] = sign * static_cast<float>(p0 + t);
  }
  return v;
}

// Element i of a segment's k or v rows, as f32.
float At(const ops::KvSegment& s, const void* p, int64_t i) {
  if (s.type == TensorType::kF16) return F16ToF32(static_cast<const uint16_t*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

// Checks that the segments hold exactly positions [first, n) in order, each row intact
// (the positions are small integers, exact in f16 too).
void ExpectHolds(const KvLayer& layer, int64_t n, int64_t first) {
  ops::KvSegment segs[2];
  const int count = layer.Segments(n, segs);
  int64_t expect = first;
  for (int i = 0; i < count; ++i) {
    ASSERT_EQ(segs[i].pos0, expect) << "n=" << n;
    ASSERT_EQ(segs[i].stride, layer.row_floats());
    ASSERT_EQ(segs[i].type, layer.type());
    for (int64_t u = 0; u < segs[i].count; ++u, ++expect) {
      for (int64_t j = 0; j < layer.row_floats(); ++j) {
        ASSERT_EQ(At(segs[i], segs[i].k, u * segs[i].stride + j), static_cast<float>(expect)) << "n=" << n;
        ASSERT_EQ(At(segs[i], segs[i].v, u * segs[i].stride + j), -static_cast<float>(expect)) << "n=" << n;
      }
    }
  }
  EXPECT_EQ(expect, n);
}

class KvLayerTest : public ::testing::TestWithParam<TensorType> {};

// A ring of its own size: one position at a time past several wrap-arounds.
TEST_P(KvLayerTest, RingWrapsOneAtATime) {
  const int64_t cap = 4, row = 3;
  KvLayer ring(row, cap, GetParam());
  EXPECT_TRUE(ring.is_ring());
  ExpectHolds(ring, 0, 0);
  for (int64_t n = 0; n < 13; ++n) {
    auto k = Rows(n, 1, row, 1), v = Rows(n, 1, row, -1);
    ring.Write(n, k.data(), v.data(), 1);
    ExpectHolds(ring, n + 1, std::max<int64_t>(0, n + 1 - cap));
  }
  EXPECT_EQ(ring.capacity_rows(), cap);
}

// Chunks that end exactly at the ring size, cross the wrap, and exceed the ring.
TEST_P(KvLayerTest, RingChunks) {
  const int64_t cap = 5, row = 2;
  for (const std::vector<int64_t>& chunks :
       std::vector<std::vector<int64_t>>{{5, 5, 5}, {3, 4, 1, 7}, {12}, {1, 11, 2}, {4, 6, 6}}) {
    KvLayer ring(row, cap, GetParam());
    int64_t n = 0;
    for (int64_t T : chunks) {
      auto k = Rows(n, T, row, 1), v = Rows(n, T, row, -1);
      ring.Write(n, k.data(), v.data(), T);
      n += T;
      ExpectHolds(ring, n, std::max<int64_t>(0, n - cap));
    }
  }
}

TEST_P(KvLayerTest, ContiguousGrowsByDoublingUpToTheLimit) {
  const int64_t row = 4;
  KvLayer full(row, 0, GetParam());
  EXPECT_FALSE(full.is_ring());
  EXPECT_EQ(full.capacity_rows(), 0);
  int64_t n = 0;
  for (int64_t T : {1, 1, 3, 20, 5, 40}) {
    full.Grow(n + T, 100);
    EXPECT_GE(full.capacity_rows(), n + T);
    EXPECT_LE(full.capacity_rows(), std::max<int64_t>(16, 2 * (n + T)));
    auto k = Rows(n, T, row, 1), v = Rows(n, T, row, -1);
    full.Write(n, k.data(), v.data(), T);
    n += T;
    ExpectHolds(full, n, 0);  // earlier rows survive every reallocation
  }
  full.Grow(100, 100);
  EXPECT_EQ(full.capacity_rows(), 100);  // capped at the limit, not the next power of two
  EXPECT_EQ(full.bytes(), 2u * 100 * row * (GetParam() == TensorType::kF16 ? 2 : 4));
}

INSTANTIATE_TEST_SUITE_P(Types, KvLayerTest, ::testing::Values(TensorType::kF32, TensorType::kF16),
                         [](const ::testing::TestParamInfo<TensorType>& i) {
                           return std::string(i.param == TensorType::kF16 ? "f16" : "f32");
                         });

// An f16 layer stores each committed f32 as base/half.h rounds it (nearest even), including
// values that are not exact in f16 and a row length that is not a multiple of the SIMD width.
TEST(KvLayerF16Test, CommitRoundsToNearestEven) {
  const int64_t row = 13;
  KvLayer full(row, 0, TensorType::kF16);
  full.Grow(3, 3);
  std::vector<float> k(3 * row), v(3 * row);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = 1.0f / static_cast<float>(i + 3) - 0.1f;
    v[i] = 1000.0f + static_cast<float>(i) * 0.3f;  // f16 spacing 0.5 here: ties and roundings
  }
  full.Write(0, k.data(), v.data(), 3);
  ops::KvSegment seg[2];
  ASSERT_EQ(full.Segments(3, seg), 1);
  for (size_t i = 0; i < k.size(); ++i) {
    EXPECT_EQ(static_cast<const uint16_t*>(seg[0].k)[i], F32ToF16(k[i])) << i;
    EXPECT_EQ(static_cast<const uint16_t*>(seg[0].v)[i], F32ToF16(v[i])) << i;
  }
}

model::Gemma4Config TinyConfig() {
  model::Gemma4Config c;
  c.vocab_size = 512;
  c.hidden_size = 64;
  c.num_layers = 7;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 32;
  c.global_head_dim = 64;
  c.intermediate_size = 32;
  c.hidden_size_per_layer_input = 32;
  c.vocab_size_per_layer_input = 512;
  c.sliding_window = 16;
  c.num_kv_shared_layers = 3;
  using A = model::AttnType;
  c.layer_types = {A::kSliding, A::kSliding, A::kSliding, A::kFull, A::kSliding, A::kSliding, A::kFull};
  EXPECT_TRUE(c.Validate().ok());
  return c;
}

TEST(KvCacheTest, OnlyLayersWithKvAndMemoryFollowsUse) {
  const auto cfg = TinyConfig();
  KvCache cache(cfg, 100000);
  EXPECT_EQ(cache.cached_layers(), 4);  // layers 0–3; 4–6 read 2 and 3
  // Three sliding rings of 16 rows × 32 floats (k and v) and no full-attention rows yet.
  EXPECT_EQ(cache.bytes_allocated(), 3u * 2 * 16 * 32 * 4);
  ASSERT_TRUE(cache.Reserve(10).ok());
  const uint64_t small = cache.bytes_allocated();
  EXPECT_LE(small, 3u * 2 * 16 * 32 * 4 + 2 * 16 * 64 * 4);  // far below 100000 positions
  ASSERT_TRUE(cache.Reserve(1000).ok());
  EXPECT_LE(cache.bytes_allocated(), 3u * 2 * 16 * 32 * 4 + 2 * 1024 * 64 * 4);
  // The same in f16: half the bytes.
  KvCache half(cfg, 100000, TensorType::kF16);
  EXPECT_EQ(half.type(), TensorType::kF16);
  ASSERT_TRUE(half.Reserve(1000).ok());
  EXPECT_EQ(2 * half.bytes_allocated(), cache.bytes_allocated());
}

TEST(KvCacheTest, CommitAdvancePastAndLimit) {
  const auto cfg = TinyConfig();
  KvCache cache(cfg, 40);
  EXPECT_EQ(cache.size(), 0);
  ops::KvSegment segs[2];
  EXPECT_EQ(cache.Past(0, segs), 0);
  for (int64_t step = 0; step < 4; ++step) {
    const int64_t T = 9, n = cache.size();
    ASSERT_TRUE(cache.Reserve(n + T).ok());
    for (int64_t l = 0; l < 4; ++l) {
      auto k = Rows(n, T, cfg.kv_dim(l), 1), v = Rows(n, T, cfg.kv_dim(l), -1);
      cache.Commit(l, k.data(), v.data(), T);
    }
    cache.Advance(T);
    // Sliding layer 0 keeps the last 16 positions, full layer 3 all of them.
    int c0 = cache.Past(0, segs);
    int64_t held = 0;
    for (int i = 0; i < c0; ++i) held += segs[i].count;
    EXPECT_EQ(held, std::min<int64_t>(16, cache.size()));
    EXPECT_EQ(segs[0].pos0, std::max<int64_t>(0, cache.size() - 16));
    ASSERT_EQ(cache.Past(3, segs), 1);
    EXPECT_EQ(segs[0].pos0, 0);
    EXPECT_EQ(segs[0].count, cache.size());
    EXPECT_EQ(static_cast<const float*>(segs[0].k)[(cache.size() - 1) * 64], static_cast<float>(cache.size() - 1));
  }
  EXPECT_EQ(cache.size(), 36);
  Status st = cache.Reserve(41);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find("41"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("40"), std::string::npos) << st.message();
  cache.Clear();
  EXPECT_EQ(cache.size(), 0);
  EXPECT_EQ(cache.Past(3, segs), 0);
}

}  // namespace
}  // namespace gemlet::runtime
