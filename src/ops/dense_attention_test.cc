#include "ops/dense_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace dense_attention_test {

// Straightforward attention in double with an explicit score row per query (every query
// sees every key). q [T, H, hd], k and v [N, Hkv, hd], contiguous.
std::vector<double> NaiveDense(const DenseAttentionShape& s, const std::vector<float>& q,
                               const std::vector<float>& k, const std::vector<float>& v, int64_t T, int64_t N) {
  const int64_t H = s.n_heads, Hkv = s.n_kv_heads, hd = s.head_dim;
  std::vector<double> out(T * H * hd, 0.0);
  std::vector<double> sc(N);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t u = 0; u < N; ++u) {
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(q[(t * H + h) * hd + i]) * k[(u * Hkv + g) * hd + i];
        sc[u] = d * s.scale;
        mx = std::max(mx, sc[u]);
      }
      double sum = 0;
      for (int64_t u = 0; u < N; ++u) sum += std::exp(sc[u] - mx);
      for (int64_t u = 0; u < N; ++u) {
        const double p = std::exp(sc[u] - mx) / sum;
        for (int64_t i = 0; i < hd; ++i) out[(t * H + h) * hd + i] += p * v[(u * Hkv + g) * hd + i];
      }
    }
  }
  return out;
}

// The numerics of dense_attention.h spelled out one query row at a time in scalar code: the
// op must give exactly these bits on every kernel tier.
std::vector<float> ScalarTwin(const DenseAttentionShape& s, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v, int64_t T, int64_t N) {
  const int64_t H = s.n_heads, Hkv = s.n_kv_heads, hd = s.head_dim;
  std::vector<float> out(T * H * hd);
  std::vector<float> qs(hd), o(hd), p(kDenseKeyTile);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      for (int64_t d = 0; d < hd; ++d) qs[d] = s.scale != 1.0f ? q[(t * H + h) * hd + d] * s.scale : q[(t * H + h) * hd + d];
      float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
      std::fill(o.begin(), o.end(), 0.0f);
      for (int64_t u0 = 0; u0 < N; u0 += kDenseKeyTile) {
        const int64_t n = std::min(kDenseKeyTile, N - u0);
        for (int64_t c = 0; c < n; ++c) {
          float acc = 0.0f;
          for (int64_t d = 0; d < hd; ++d) acc = std::fmaf(qs[d], k[((u0 + c) * Hkv + g) * hd + d], acc);
          p[c] = acc;
        }
        float corr;
        kernels::OnlineSoftmaxRef(p.data(), n, 1, n, &m, &l, &corr);
        if (corr != 1.0f) {
          for (float& x : o) x *= corr;
        }
        for (int64_t d = 0; d < hd; ++d) {
          for (int64_t c = 0; c < n; ++c) o[d] = std::fmaf(p[c], v[((u0 + c) * Hkv + g) * hd + d], o[d]);
        }
      }
      for (int64_t d = 0; d < hd; ++d) out[(t * H + h) * hd + d] = o[d] * (1.0f / l);
    }
  }
  return out;
}

// DenseAttentionMath::kBf16's numerics, one query row at a time, on the kernels' scalar twins:
// the scaled query, keys, values and weights rounded to bf16, both products as gemm_acc_bf16.
std::vector<float> ScalarTwinBf16(const DenseAttentionShape& s, const std::vector<float>& q,
                                  const std::vector<float>& k, const std::vector<float>& v, int64_t T, int64_t N) {
  const int64_t H = s.n_heads, Hkv = s.n_kv_heads, hd = s.head_dim, tile = kDenseKeyTile;
  std::vector<float> out(T * H * hd), qs(hd), o(hd), p(tile);
  std::vector<uint16_t> qb(hd), pb(tile), kp(hd * tile), vp(tile * hd), e(1);
  auto bf = [&](float x) {
    kernels::F32ToBf16Ref(&x, e.data(), 1);
    return e[0];
  };
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      for (int64_t d = 0; d < hd; ++d) qs[d] = s.scale != 1.0f ? q[(t * H + h) * hd + d] * s.scale : q[(t * H + h) * hd + d];
      kernels::F32ToBf16Ref(qs.data(), qb.data(), hd);
      float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
      std::fill(o.begin(), o.end(), 0.0f);
      for (int64_t u0 = 0; u0 < N; u0 += tile) {
        const int64_t n = std::min(tile, N - u0), n2 = (n + 1) / 2 * 2;
        std::fill(kp.begin(), kp.end(), uint16_t{0});
        std::fill(vp.begin(), vp.end(), uint16_t{0});
        for (int64_t c = 0; c < n; ++c) {
          for (int64_t d = 0; d < hd; ++d) {
            kp[(d / 2) * 2 * n + 2 * c + d % 2] = bf(k[((u0 + c) * Hkv + g) * hd + d]);
            vp[(c / 2) * 2 * hd + 2 * d + c % 2] = bf(v[((u0 + c) * Hkv + g) * hd + d]);
          }
        }
        std::fill(p.begin(), p.end(), 0.0f);
        kernels::GemmAccBf16Ref(qb.data(), hd, 1, kp.data(), 2 * n, hd, n, p.data(), tile);
        float corr;
        kernels::OnlineSoftmaxRef(p.data(), n, 1, n, &m, &l, &corr);
        if (corr != 1.0f) {
          for (float& x : o) x *= corr;
        }
        std::fill(pb.begin(), pb.end(), uint16_t{0});
        kernels::F32ToBf16Ref(p.data(), pb.data(), n);
        kernels::GemmAccBf16Ref(pb.data(), tile, 1, vp.data(), 2 * hd, n2, hd, o.data(), hd);
      }
      for (int64_t d = 0; d < hd; ++d) out[(t * H + h) * hd + d] = o[d] * (1.0f / l);
    }
  }
  return out;
}

struct Case {
  int64_t H, Hkv, hd, T, N;
  float scale;
};

class DenseAttentionTest : public ::testing::TestWithParam<Case> {};

// Against float64, and bit for bit against the scalar spelling of its numerics, serial and on
// 2 and 3 threads.
TEST_P(DenseAttentionTest, MatchesFloat64AndItsScalarTwin) {
  const Case c = GetParam();
  const DenseAttentionShape s{c.H, c.Hkv, c.hd, c.scale};
  auto q = testing::RandomVector(c.T * c.H * c.hd, 1);
  auto k = testing::RandomVector(c.N * c.Hkv * c.hd, 2, 0.5f);
  auto v = testing::RandomVector(c.N * c.Hkv * c.hd, 3);
  const auto ref = NaiveDense(s, q, k, v, c.T, c.N);
  const auto twin = ScalarTwin(s, q, k, v, c.T, c.N);
  ThreadPool pool2(2), pool3(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
    std::vector<float> out(c.T * c.H * c.hd, -1.0f);
    DenseAttention(s, q.data(), c.H * c.hd, c.T, k.data(), v.data(), c.Hkv * c.hd, c.N, out.data(), c.H * c.hd, nullptr, p);
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - ref[i]));
    EXPECT_LE(worst, 2e-5) << "threads " << (p ? p->num_threads() : 1);
    ASSERT_EQ(0, std::memcmp(out.data(), twin.data(), out.size() * sizeof(float)))
        << "threads " << (p ? p->num_threads() : 1);
  }
}

// DenseAttentionMath::kBf16: with the bf16 dot products (and an even head size), bit for bit its
// scalar spelling on every thread count, within bf16 rounding of float64 (the vision oracle
// measures the effect on a real tower: tests/oracle_vision_test.cc); else exactly kF32.
TEST_P(DenseAttentionTest, Bf16MathMatchesItsScalarTwin) {
  const Case c = GetParam();
  const DenseAttentionShape s{c.H, c.Hkv, c.hd, c.scale, DenseAttentionMath::kBf16};
  auto q = testing::RandomVector(c.T * c.H * c.hd, 11);
  auto k = testing::RandomVector(c.N * c.Hkv * c.hd, 12, 0.5f);
  auto v = testing::RandomVector(c.N * c.Hkv * c.hd, 13);
  const bool bf16 = kernels::ActiveKernels().gemm_acc_bf16 != nullptr && c.hd % 2 == 0;
  const auto twin = bf16 ? ScalarTwinBf16(s, q, k, v, c.T, c.N) : ScalarTwin(s, q, k, v, c.T, c.N);
  const auto ref = NaiveDense(s, q, k, v, c.T, c.N);
  ThreadPool pool2(2), pool3(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
    std::vector<float> out(c.T * c.H * c.hd, -1.0f);
    DenseAttention(s, q.data(), c.H * c.hd, c.T, k.data(), v.data(), c.Hkv * c.hd, c.N, out.data(), c.H * c.hd, nullptr, p);
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - ref[i]));
    // bf16 rounds each score by up to ~2^-8 of Σ|q_d·k_d| (about 0.03 here, where the unscaled
    // scores reach ±15), which moves the peaked weights by a few percent.
    EXPECT_LE(worst, bf16 ? 0.1 : 2e-5) << "threads " << (p ? p->num_threads() : 1);
    ASSERT_EQ(0, std::memcmp(out.data(), twin.data(), out.size() * sizeof(float)))
        << (bf16 ? "bf16" : "f32") << " threads " << (p ? p->num_threads() : 1);
  }
}

// Rows in place inside wider rows (q, k and v interleaved in one buffer, out strided), and any
// subset of the queries computed alone: the same bits as the contiguous call.
TEST_P(DenseAttentionTest, StridesAndQuerySubsetsKeepTheBits) {
  const Case c = GetParam();
  const DenseAttentionShape s{c.H, c.Hkv, c.hd, c.scale};
  const int64_t qw = c.H * c.hd, kw = c.Hkv * c.hd;
  auto q = testing::RandomVector(c.T * qw, 4);
  auto k = testing::RandomVector(c.N * kw, 5, 0.5f);
  auto v = testing::RandomVector(c.N * kw, 6);
  std::vector<float> want(c.T * qw);
  DenseAttention(s, q.data(), qw, c.T, k.data(), v.data(), kw, c.N, want.data(), qw, nullptr, nullptr);
  // One row per position: [q | pad 3], and [k | v | pad 5] for the keys.
  const int64_t qs = qw + 3, kvs = 2 * kw + 5, os = qw + 7;
  std::vector<float> qi(c.T * qs, 9.0f), kvi(c.N * kvs, 9.0f), out(c.T * os, -1.0f);
  for (int64_t t = 0; t < c.T; ++t) std::copy(q.begin() + t * qw, q.begin() + (t + 1) * qw, qi.begin() + t * qs);
  for (int64_t u = 0; u < c.N; ++u) {
    std::copy(k.begin() + u * kw, k.begin() + (u + 1) * kw, kvi.begin() + u * kvs);
    std::copy(v.begin() + u * kw, v.begin() + (u + 1) * kw, kvi.begin() + u * kvs + kw);
  }
  ThreadPool pool(2);
  // (The caller's scratch, left holding NaNs from earlier use: the op writes what it reads.)
  std::vector<float> scratch(DenseAttentionScratch(s, c.N), std::numeric_limits<float>::quiet_NaN());
  DenseAttention(s, qi.data(), qs, c.T, kvi.data(), kvi.data() + kw, kvs, c.N, out.data(), os, scratch.data(), &pool);
  for (int64_t t = 0; t < c.T; ++t) {
    ASSERT_EQ(0, std::memcmp(out.data() + t * os, want.data() + t * qw, qw * sizeof(float))) << "row " << t;
    ASSERT_EQ(out[t * os + qw], -1.0f) << "wrote past row " << t;
  }
  for (int64_t t0 : {int64_t{0}, c.T / 2, c.T - 1}) {
    const int64_t n = std::min<int64_t>(3, c.T - t0);
    std::vector<float> part(n * qw);
    DenseAttention(s, q.data() + t0 * qw, qw, n, k.data(), v.data(), kw, c.N, part.data(), qw, nullptr, &pool);
    ASSERT_EQ(0, std::memcmp(part.data(), want.data() + t0 * qw, part.size() * sizeof(float))) << "rows from " << t0;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenseAttentionTest,
                         ::testing::Values(Case{12, 12, 64, 70, 70, 1.0f},     // an image tower's heads, a part tile
                                           Case{2, 2, 32, 130, 130, 1.0f},     // the tiny oracle's heads, 2 tiles
                                           Case{3, 3, 72, 65, 129, 0.125f},    // odd head size, a 1-key tail
                                           Case{4, 2, 64, 1, 300, 1.0f},       // GQA, one query, 3 tiles
                                           Case{1, 1, 64, 200, 256, 1.0f},     // keys exactly two tiles
                                           Case{5, 1, 17, 9, 5, 0.3f},         // MQA, fewer keys than a lane
                                           Case{2, 2, 64, 131, 1, 1.0f},       // a single key: out = v
                                           Case{6, 3, 72, 150, 257, 1.0f}));   // query blocks with a tail

// Large scores (a peaked softmax, as the unscaled q·k of an image tower) stay finite and
// accurate: the running maximum is subtracted before the exponential.
TEST(DenseAttentionStability, LargeScores) {
  const DenseAttentionShape s{2, 2, 64, 1.0f};
  const int64_t T = 40, N = 200;
  auto q = testing::RandomVector(T * 128, 7, 4.0f);
  auto k = testing::RandomVector(N * 128, 8, 4.0f);
  auto v = testing::RandomVector(N * 128, 9);
  const auto ref = NaiveDense(s, q, k, v, T, N);
  std::vector<float> out(T * 128);
  DenseAttention(s, q.data(), 128, T, k.data(), v.data(), 128, N, out.data(), 128, nullptr, nullptr);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(std::isfinite(out[i])) << i;
    ASSERT_NEAR(out[i], ref[i], 1e-3) << i;  // scores up to ~500: f32 rounds them by ~3e-5
  }
}

}  // namespace dense_attention_test
}  // namespace gemlet::ops
