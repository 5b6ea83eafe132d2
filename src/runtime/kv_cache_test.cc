#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/ref/quant.h"
#include "ops/ops_test_util.h"

namespace gemlet::runtime {
namespace kv_cache_test {

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
  if (s.type == TensorType::kQ8) {
    const BlockQ8& b = static_cast<const BlockQ8*>(p)[i / kQBlock];
    return b.qs[i % kQBlock] * F16ToF32(b.d);
  }
  return static_cast<const float*>(p)[i];
}

// The value a row of x's holds in a cache of `type` (ops::RoundToKvType).
float Held(float x, TensorType type) {
  std::vector<float> row(kQBlock, x);
  ops::RoundToKvType(type, row.data(), kQBlock);
  return row[0];
}

// The parameterized tests' row sizes: q8 rows are whole blocks of 32.
int64_t RowOf(int64_t n, TensorType type) { return type == TensorType::kQ8 ? n * kQBlock : n; }

// Checks that the segments hold exactly positions [first, n) in order, each row intact
// (the positions are small integers, exact in f16 too; in q8 as RoundToKvType rounds them).
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
        const float want = Held(static_cast<float>(expect), layer.type());
        ASSERT_EQ(At(segs[i], segs[i].k, u * segs[i].stride + j), want) << "n=" << n;
        ASSERT_EQ(At(segs[i], segs[i].v, u * segs[i].stride + j), -want) << "n=" << n;
      }
    }
  }
  EXPECT_EQ(expect, n);
}

class KvLayerTest : public ::testing::TestWithParam<TensorType> {};

// A ring of its own size: one position at a time past several wrap-arounds.
TEST_P(KvLayerTest, RingWrapsOneAtATime) {
  const int64_t cap = 4, row = RowOf(3, GetParam());
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
  const int64_t cap = 5, row = RowOf(2, GetParam());
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

// SegmentsFrom: the rows from any stored position on (the MTP drafter reads W + 1 of a ring
// whose queries see W), in order and intact; −1 once the first of them is overwritten.
TEST_P(KvLayerTest, SegmentsFromReachesBeyondTheWindow) {
  const int64_t cap = 7, window = 4, row = RowOf(2, GetParam());
  KvLayer ring(row, cap, GetParam(), window);
  for (int64_t n = 0; n < 20; ++n) {
    auto k = Rows(n, 1, row, 1), v = Rows(n, 1, row, -1);
    ring.Write(n, k.data(), v.data(), 1);
    const int64_t size = n + 1;
    for (int64_t first = 0; first <= size; ++first) {
      ops::KvSegment segs[2];
      const int count = ring.SegmentsFrom(size, first, segs);
      if (first < size - cap) {
        EXPECT_EQ(count, -1) << "size " << size << " first " << first;
        continue;
      }
      int64_t expect = first;
      for (int i = 0; i < count; ++i) {
        ASSERT_EQ(segs[i].pos0, expect);
        for (int64_t u = 0; u < segs[i].count; ++u, ++expect) {
          ASSERT_EQ(At(segs[i], segs[i].k, u * segs[i].stride), Held(static_cast<float>(expect), GetParam()));
          ASSERT_EQ(At(segs[i], segs[i].v, u * segs[i].stride), -Held(static_cast<float>(expect), GetParam()));
        }
      }
      EXPECT_EQ(expect, size) << "size " << size << " first " << first;
    }
  }
}

TEST_P(KvLayerTest, ContiguousGrowsInPagesInPlaceUpToTheLimit) {
  const int64_t row = RowOf(4, GetParam());
  KvLayer full(row, 0, GetParam());
  EXPECT_FALSE(full.is_ring());
  EXPECT_EQ(full.capacity_rows(), 0);
  const int64_t limit = 1000;
  int64_t n = 0;
  const void* base = nullptr;
  for (int64_t T : {1, 1, 3, 20, 5, 300, 40, 1, 600}) {
    ASSERT_TRUE(full.Grow(n + T, limit).ok());
    EXPECT_EQ(full.capacity_rows(), std::min(limit, (n + T + kKvPageRows - 1) / kKvPageRows * kKvPageRows));
    auto k = Rows(n, T, row, 1), v = Rows(n, T, row, -1);
    full.Write(n, k.data(), v.data(), T);
    n += T;
    ExpectHolds(full, n, 0);  // earlier rows survive every growth
    ops::KvSegment seg[2];
    ASSERT_EQ(full.Segments(n, seg), 1);
    if (base == nullptr) base = seg[0].k;
    EXPECT_EQ(seg[0].k, base) << "the rows never move";
  }
  EXPECT_EQ(full.capacity_rows(), limit);  // capped at the limit, not the next page
  const uint64_t row_bytes = GetParam() == TensorType::kQ8   ? row / kQBlock * sizeof(BlockQ8)
                             : GetParam() == TensorType::kF16 ? row * 2
                                                               : row * 4;
  EXPECT_EQ(full.bytes(), 2u * limit * row_bytes);
}

INSTANTIATE_TEST_SUITE_P(Types, KvLayerTest,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kQ8),
                         [](const ::testing::TestParamInfo<TensorType>& i) {
                           return std::string(TensorTypeName(i.param));
                         });

// A q8 layer stores each committed row as ops::QuantizeKvRowQ8 blocks (the blocks the forward
// attends over before storing them), which dequantize to exactly what ops::RoundToKvType
// gives, through ring wrap-arounds and across rows of widely varying magnitudes.
TEST(KvLayerQ8Test, SegmentsDequantizeToTheRoundedValues) {
  const int64_t row = 2 * 64, cap = 6;  // two heads of 64
  for (int64_t ring : {int64_t{0}, cap}) {
    KvLayer layer(row, ring, TensorType::kQ8);
    const int64_t n_total = 15;
    ASSERT_TRUE(layer.Grow(n_total, n_total).ok());
    std::vector<float> k = ops::testing::RandomVector(n_total * row, 31);
    std::vector<float> v = ops::testing::RandomVector(n_total * row, 32);
    for (int64_t i = 0; i < n_total * row; ++i) {  // a magnitude per block, 2^-30 … 2^17
      const float m = std::exp2(static_cast<float>(i / kQBlock % 48) - 30.0f);
      k[i] *= m;
      v[i] *= -m;
    }
    int64_t n = 0;
    for (int64_t T : {1, 4, 7, 3}) {
      layer.Write(n, k.data() + n * row, v.data() + n * row, T);
      n += T;
    }
    std::vector<float> k_held = k, v_held = v;
    ops::RoundToKvType(TensorType::kQ8, k_held.data(), n * row);
    ops::RoundToKvType(TensorType::kQ8, v_held.data(), n * row);
    ops::KvSegment segs[2];
    const int count = layer.Segments(n, segs);
    int64_t p = ring > 0 ? n - cap : 0;
    std::vector<float> got(row);
    for (int s = 0; s < count; ++s) {
      ASSERT_EQ(segs[s].type, TensorType::kQ8);
      ASSERT_EQ(segs[s].pos0, p);
      for (int64_t u = 0; u < segs[s].count; ++u, ++p) {
        const auto* kb = static_cast<const BlockQ8*>(segs[s].k) + u * segs[s].stride / kQBlock;
        const auto* vb = static_cast<const BlockQ8*>(segs[s].v) + u * segs[s].stride / kQBlock;
        kernels::DequantizeRowRef(TensorType::kQ8, kb, got.data(), row);
        ASSERT_EQ(0, std::memcmp(got.data(), k_held.data() + p * row, row * sizeof(float))) << "k " << p;
        kernels::DequantizeRowRef(TensorType::kQ8, vb, got.data(), row);
        ASSERT_EQ(0, std::memcmp(got.data(), v_held.data() + p * row, row * sizeof(float))) << "v " << p;
      }
    }
    EXPECT_EQ(p, n);
  }
}

// An f16 layer stores each committed f32 as base/half.h rounds it (nearest even), including
// values that are not exact in f16 and a row length that is not a multiple of the SIMD width.
TEST(KvLayerF16Test, CommitRoundsToNearestEven) {
  const int64_t row = 13;
  KvLayer full(row, 0, TensorType::kF16);
  ASSERT_TRUE(full.Grow(3, 3).ok());
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
  // Three sliding rings of 16 + 1 + kKvRollback rows × 32 floats (k and v), no full-attention rows yet.
  EXPECT_EQ(cache.bytes_allocated(), 3u * 2 * (16 + kKvDrafterRows + kKvRollback) * 32 * 4);
  ASSERT_TRUE(cache.Reserve(10).ok());
  const uint64_t small = cache.bytes_allocated();
  const uint64_t rings = 3u * 2 * (16 + kKvDrafterRows + kKvRollback) * 32 * 4;
  EXPECT_EQ(small, rings + 2 * kKvPageRows * 64 * 4);  // one page, far below 100000 positions
  ASSERT_TRUE(cache.Reserve(1000).ok());
  EXPECT_EQ(cache.bytes_allocated(), rings + 2 * 1024 * 64 * 4);
  // The same in f16: half the bytes.
  KvCache half(cfg, 100000, TensorType::kF16);
  EXPECT_EQ(half.type(), TensorType::kF16);
  ASSERT_TRUE(half.Reserve(1000).ok());
  EXPECT_EQ(2 * half.bytes_allocated(), cache.bytes_allocated());
  // And in q8: 34 bytes per 32 values, against f16's 64.
  KvCache q8(cfg, 100000, TensorType::kQ8);
  EXPECT_EQ(q8.type(), TensorType::kQ8);
  ASSERT_TRUE(q8.Reserve(1000).ok());
  EXPECT_EQ(64 * q8.bytes_allocated(), 34 * half.bytes_allocated());
}

// The model's whole context as the limit costs address space only: what is committed (and what
// the process holds) follows the positions stored, page by page of kKvPageRows.
TEST(KvCacheTest, CommittedBytesFollowTokensNotTheLimit) {
  auto cfg = TinyConfig();
  cfg.global_head_dim = 512;  // E2B's full-attention rows: 512 floats (2 KiB in f32)
  ASSERT_TRUE(cfg.Validate().ok());
  const uint64_t rings = 3u * 2 * (16 + kKvDrafterRows + kKvRollback) * 32 * 4;
  const uint64_t page = 2u * kKvPageRows * 512 * 4;  // K and V of one page of positions
  KvCache big(cfg, 131072), small(cfg, 4096);
  auto rss_kib = [] {
    long pages = 0, resident = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f != nullptr && std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f != nullptr) std::fclose(f);
    return resident * (GrowableBuffer::page_size() / 1024);
  };
  const long rss0 = rss_kib();
  std::vector<float> k(300 * 512), v(300 * 512);
  for (size_t i = 0; i < k.size(); ++i) k[i] = v[i] = 0.25f;
  for (int64_t held : {1, 256, 257, 1000, 3000}) {  // (3000 ≤ small's limit)
    for (KvCache* c : {&big, &small}) {
      const int64_t n = c->size();
      ASSERT_TRUE(c->Reserve(held).ok());
      for (int64_t p = n; p < held; p += 300) {  // fill the rows as a forward pass would
        const int64_t T = std::min<int64_t>(300, held - p);
        for (int64_t l = 0; l < 4; ++l) c->Commit(l, k.data(), v.data(), T);
        c->Advance(T);
      }
    }
    const uint64_t pages = (held + kKvPageRows - 1) / kKvPageRows;
    EXPECT_EQ(big.bytes_allocated(), rings + pages * page) << held;
    EXPECT_EQ(small.bytes_allocated(), big.bytes_allocated()) << held;
  }
  // 3000 positions of two caches: about 2 × 12 MiB written; a cache sized for its limit
  // (131072 × 4 KiB = 512 MiB) would be far above. RSS also counts the test's own pages: a
  // loose upper bound.
  const long grown = rss_kib() - rss0;
  EXPECT_LT(grown, 64 * 1024) << "KiB resident after writing 3000 positions";
  EXPECT_GT(grown, 2 * 10 * 1024) << "the rows written are resident";
}

// The full-attention layers and the sliding ones may keep different element types.
TEST(KvCacheTest, TypesPerLayerKind) {
  const auto cfg = TinyConfig();
  KvCache cache(cfg, 1000, TensorType::kQ8, TensorType::kF16);
  EXPECT_EQ(cache.type(), TensorType::kQ8);
  EXPECT_EQ(cache.sliding_type(), TensorType::kF16);
  for (int64_t l = 0; l < 4; ++l) {
    EXPECT_EQ(cache.row_type(l), cfg.is_full(l) ? TensorType::kQ8 : TensorType::kF16) << l;
  }
  ASSERT_TRUE(cache.Reserve(300).ok());
  std::vector<float> k(300 * 64, 0.5f), v(300 * 64, -0.25f);
  for (int64_t l = 0; l < 4; ++l) cache.Commit(l, k.data(), v.data(), 300);
  cache.Advance(300);
  for (int64_t l = 0; l < 4; ++l) {
    ops::KvSegment segs[2];
    const int n = cache.Past(l, segs);
    ASSERT_GE(n, 1);
    for (int i = 0; i < n; ++i) EXPECT_EQ(segs[i].type, cache.row_type(l)) << l;
  }
  // Rings of 16 + 1 + kKvRollback f16 rows of 32; two pages of q8 rows of 64 (2 blocks of 34 bytes).
  EXPECT_EQ(cache.bytes_allocated(), 3u * 2 * (16 + kKvDrafterRows + kKvRollback) * 32 * 2 + 2u * 2 * kKvPageRows * 2 * 34);
  KvCache same(cfg, 1000, TensorType::kF16);  // no sliding type: the full layers'
  EXPECT_EQ(same.sliding_type(), TensorType::kF16);
}

// q8 needs every cached layer's head size to be whole blocks of 32; f32 and f16 take any.
TEST(KvCacheTest, CheckKvTypeRefusesQ8WithPartialBlocks) {
  auto cfg = TinyConfig();
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kQ8}) EXPECT_TRUE(CheckKvType(cfg, t).ok());
  cfg.global_head_dim = 48;  // the full-attention layers' heads: 1.5 blocks
  EXPECT_TRUE(CheckKvType(cfg, TensorType::kF16).ok());
  const Status st = CheckKvType(cfg, TensorType::kQ8);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("multiples of 32"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("48"), std::string::npos) << st.message();
  EXPECT_EQ(CheckKvType(cfg, TensorType::kBF16).code(), ErrorCode::kInvalidArgument);
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

}  // namespace kv_cache_test
}  // namespace gemlet::runtime

namespace gemlet::runtime {
namespace kv_cache_test {

// Truncate is exact while the rings still hold what the shorter cache's next query sees:
// always before a ring wraps, and for rollbacks of up to kKvRollback positions after.
TEST(KvCacheTest, TruncateWithinTheRollbackMargin) {
  model::Gemma4Config c = TinyConfig();
  KvCache cache(c, 1000);
  const int64_t W = c.sliding_window;
  std::vector<float> k(64 * 8, 1.0f), v(64 * 8, 2.0f);
  auto feed = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(cache.Reserve(cache.size() + 1).ok());
      for (int64_t l = 0; l < 4; ++l) cache.Commit(l, k.data(), v.data(), 1);
      cache.Advance(1);
    }
  };
  feed(W + kKvDrafterRows + kKvRollback);  // not wrapped past anything position 1 reads
  EXPECT_TRUE(cache.Truncate(1));
  EXPECT_EQ(cache.size(), 1);
  feed(4 * W);
  const int64_t n = cache.size();
  EXPECT_TRUE(cache.Truncate(n - kKvRollback));
  EXPECT_EQ(cache.size(), n - kKvRollback);
  feed(kKvRollback);
  EXPECT_FALSE(cache.Truncate(n - kKvRollback - 1)) << "that row was overwritten";
  // After the deepest rollback the drafter still finds its W + 1 rows.
  ASSERT_TRUE(cache.Truncate(n - kKvRollback));
  ops::KvSegment drafter_segs[2];
  EXPECT_GE(cache.PastFrom(0, n - kKvRollback - W - 1, drafter_segs), 1);
  feed(kKvRollback);
  EXPECT_EQ(cache.size(), n) << "a refused truncation changes nothing";
  EXPECT_TRUE(cache.Truncate(n));
  ops::KvSegment segs[2];
  int count = cache.Past(0, segs);
  int64_t rows = 0;
  for (int i = 0; i < count; ++i) rows += segs[i].count;
  EXPECT_EQ(rows, W) << "a query still sees exactly the window";
  // The drafter's W + 1 rows through the KvStore interface: the ring's, and the default
  // (Past cut at `first`), which cannot reach beyond the window.
  count = cache.PastFrom(0, n - W - 1, segs);
  rows = 0;
  for (int i = 0; i < count; ++i) rows += segs[i].count;
  EXPECT_EQ(rows, W + 1);
  EXPECT_EQ(segs[0].pos0, n - W - 1);
  EXPECT_EQ(cache.PastFrom(0, n - W - kKvDrafterRows - kKvRollback - 1, segs), -1) << "overwritten";
  EXPECT_EQ(cache.model::KvStore::PastFrom(0, n - W - 1, segs), -1) << "beyond what Past shows";
  count = cache.model::KvStore::PastFrom(0, n - 3, segs);
  ASSERT_GE(count, 1);
  rows = 0;
  for (int i = 0; i < count; ++i) rows += segs[i].count;
  EXPECT_EQ(segs[0].pos0, n - 3);
  EXPECT_EQ(rows, 3);
}

}  // namespace kv_cache_test
}  // namespace gemlet::runtime
