#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "base/mapped_file.h"

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/repack.h"
#include "ops/activation.h"
#include "ops/embedding.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace matmul_test {

constexpr TensorType kAllTypes[] = {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8,
                                    TensorType::kQ4};

// y = x · W^T against a double-precision reference on the dequantized weights, for every
// storage type, odd row counts and several token counts.
TEST(MatMulTest, MatchesReferenceForEveryType) {
  for (TensorType type : kAllTypes) {
    for (int64_t rows : {1, 7, 33}) {
      for (int64_t T : {1, 3, 40}) {
        const int64_t cols = 96;
        auto w = testing::MakeWeight(type, rows, cols, 10 + rows, 0.1f);
        auto x = testing::RandomVector(T * cols, 20 + T);
        std::vector<float> y(T * rows);
        MatMul(w.w, x.data(), T, y.data(), MatMulMode::kExact, nullptr);
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            double ref = 0;
            for (int64_t i = 0; i < cols; ++i) ref += double(w.ref[r * cols + i]) * x[t * cols + i];
            ASSERT_NEAR(y[t * rows + r], ref, 1e-5) << TensorTypeName(type) << " r=" << r << " t=" << t;
          }
        }
      }
    }
  }
}

// Results do not depend on the thread count nor on how tokens are batched: bit-identical.
TEST(MatMulTest, ThreadsAndBatchingAreBitIdentical) {
  ThreadPool pool1(1), pool2(2), pool3(3);
  for (TensorType type : kAllTypes) {
    const int64_t rows = 70, cols = 128, T = 37;
    auto w = testing::MakeWeight(type, rows, cols, 7);
    auto x = testing::RandomVector(T * cols, 8);
    std::vector<float> serial(T * rows), p1(T * rows), p2(T * rows), p3(T * rows), single(T * rows);
    MatMul(w.w, x.data(), T, serial.data(), MatMulMode::kExact, nullptr);
    MatMul(w.w, x.data(), T, p1.data(), MatMulMode::kExact, &pool1);
    MatMul(w.w, x.data(), T, p2.data(), MatMulMode::kExact, &pool2);
    MatMul(w.w, x.data(), T, p3.data(), MatMulMode::kExact, &pool3);
    for (int64_t t = 0; t < T; ++t) {
      MatMul(w.w, x.data() + t * cols, 1, single.data() + t * rows, MatMulMode::kExact, &pool2);
    }
    EXPECT_EQ(serial, p1) << TensorTypeName(type);
    EXPECT_EQ(serial, p2) << TensorTypeName(type);
    EXPECT_EQ(serial, p3) << TensorTypeName(type);
    EXPECT_EQ(serial, single) << TensorTypeName(type);
  }
}

using testing::Interleave;
using testing::InterleavedWeight;

// y[t, r] as the scalar twin of the int8 kernels computes it (kernels/ref): x quantized per
// block, one GEMV per token.
std::vector<float> ScalarInt8(const Weight& w, const std::vector<float>& x, int64_t T) {
  const kernels::KernelTable& k = *kernels::KernelsForTier(kernels::Tier::kScalar);
  const int64_t nb = w.cols / kQBlock;
  std::vector<kernels::ActBlock> xq(nb);
  std::vector<float> y(T * w.rows), row(w.rows);
  for (int64_t t = 0; t < T; ++t) {
    k.quantize_act(x.data() + t * w.cols, xq.data(), w.cols);
    if (w.type == TensorType::kQ4) {
      k.gemv_q4(reinterpret_cast<const BlockQ4*>(w.data), nb, 0, w.rows, xq.data(), w.cols, row.data());
    } else {
      k.gemv_q8(reinterpret_cast<const BlockQ8*>(w.data), nb, 0, w.rows, xq.data(), w.cols, row.data());
    }
    std::copy(row.begin(), row.end(), y.begin() + t * w.rows);
  }
  return y;
}

// kFast on q4 / q8: exactly the scalar twin's int8 result (row-major and interleaved, GEMV
// and GEMM, odd row counts), and close to the exact product.
TEST(MatMulFastTest, Int8EqualsScalarTwinForEveryLayout) {
  ThreadPool pool(2);
  for (TensorType type : {TensorType::kQ4, TensorType::kQ8}) {
    for (int64_t rows : {8, 13, 64, 200}) {
      for (int64_t T : {1, 2, 5, 37}) {
        const int64_t cols = 96;
        auto w = testing::MakeWeight(type, rows, cols, 30 + rows, 0.1f);
        auto x = testing::RandomVector(T * cols, 40 + T);
        const std::vector<float> want = ScalarInt8(w.w, x, T);
        std::vector<float> y(T * rows), exact(T * rows);
        MatMul(w.w, x.data(), T, y.data(), MatMulMode::kFast, &pool);
        EXPECT_EQ(y, want) << TensorTypeName(type) << " rows=" << rows << " T=" << T;
        MatMul(w.w, x.data(), T, exact.data(), MatMulMode::kExact, &pool);
        for (int64_t i = 0; i < T * rows; ++i) ASSERT_NEAR(y[i], exact[i], 0.05f) << i;
        if (rows % 8 == 0) {
          const InterleavedWeight q = Interleave(w);
          const char* layout = TensorLayoutName(q.w.layout);
          std::vector<float> yx(T * rows), ex(T * rows);
          MatMul(q.w, x.data(), T, yx.data(), MatMulMode::kFast, &pool);
          EXPECT_EQ(yx, want) << layout << " rows=" << rows << " T=" << T;
          MatMul(q.w, x.data(), T, ex.data(), MatMulMode::kExact, nullptr);
          EXPECT_EQ(ex, exact) << layout << " exact rows=" << rows << " T=" << T;
        }
      }
    }
  }
}

// kFast results do not depend on the thread count nor on the batching, for every type.
TEST(MatMulFastTest, ThreadsAndBatchingAreBitIdentical) {
  ThreadPool pool2(2), pool3(3);
  for (TensorType type : kAllTypes) {
    const int64_t rows = 72, cols = 128, T = 37;
    auto w = testing::MakeWeight(type, rows, cols, 17);
    auto x = testing::RandomVector(T * cols, 18);
    std::vector<float> serial(T * rows), p2(T * rows), p3(T * rows), single(T * rows);
    MatMul(w.w, x.data(), T, serial.data(), MatMulMode::kFast, nullptr);
    MatMul(w.w, x.data(), T, p2.data(), MatMulMode::kFast, &pool2);
    MatMul(w.w, x.data(), T, p3.data(), MatMulMode::kFast, &pool3);
    for (int64_t t = 0; t < T; ++t) {
      MatMul(w.w, x.data() + t * cols, 1, single.data() + t * rows, MatMulMode::kFast, &pool2);
    }
    EXPECT_EQ(serial, p2) << TensorTypeName(type);
    EXPECT_EQ(serial, p3) << TensorTypeName(type);
    EXPECT_EQ(serial, single) << TensorTypeName(type);
    if (IsQuantized(type)) {  // and interleaved: the same bits again
      const InterleavedWeight q = Interleave(w);
      std::vector<float> x1(T * rows), x3(T * rows);
      MatMul(q.w, x.data(), T, x1.data(), MatMulMode::kFast, nullptr);
      MatMul(q.w, x.data(), T, x3.data(), MatMulMode::kFast, &pool3);
      EXPECT_EQ(serial, x1) << TensorLayoutName(q.w.layout);
      EXPECT_EQ(serial, x3) << TensorLayoutName(q.w.layout);
    }
  }
}

// kFastBf16 on bf16 weights: on a CPU with the bf16 dot products, exactly the scalar twin's
// result on the activations rounded to bf16 (GEMV and GEMM, odd row and token counts, K with a
// partial group), within bf16 rounding of the exact product; elsewhere, and always in kFast,
// the float kernels' result.
TEST(MatMulFastTest, Bf16WeightsUseTheBf16DotProducts) {
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const bool bf16_dot = k.gemm_bf16 != nullptr;
  ThreadPool pool(2);
  for (int64_t cols : {96, 1000}) {
    for (int64_t rows : {5, 64}) {
      for (int64_t T : {1, 3, 37}) {
        auto w = testing::MakeWeight(TensorType::kBF16, rows, cols, 50 + rows, 0.1f);
        auto x = testing::RandomVector(T * cols, 60 + T);
        EXPECT_EQ(UsesBf16Activations(w.w, MatMulMode::kFastBf16), bf16_dot);
        EXPECT_FALSE(UsesBf16Activations(w.w, MatMulMode::kFast));
        EXPECT_FALSE(UsesBf16Activations(w.w, MatMulMode::kExact));
        std::vector<float> y(T * rows), want(T * rows), exact(T * rows), fast(T * rows), ref_f(T * rows);
        MatMul(w.w, x.data(), T, y.data(), MatMulMode::kFastBf16, &pool);
        MatMul(w.w, x.data(), T, fast.data(), MatMulMode::kFast, &pool);
        kernels::GemmFRef(TensorType::kBF16, w.w.data, cols, 0, rows, x.data(), cols, T, cols, ref_f.data(), rows);
        EXPECT_EQ(fast, ref_f) << "kFast: the float kernels";
        if (bf16_dot) {
          std::vector<uint16_t> xb(T * cols);
          kernels::F32ToBf16Ref(x.data(), xb.data(), T * cols);
          kernels::GemmBf16Ref(reinterpret_cast<const uint16_t*>(w.w.data), cols, 0, rows, xb.data(), cols, T, cols,
                               want.data(), rows);
        } else {
          kernels::GemmFRef(TensorType::kBF16, w.w.data, cols, 0, rows, x.data(), cols, T, cols, want.data(), rows);
        }
        EXPECT_EQ(y, want) << "cols=" << cols << " rows=" << rows << " T=" << T;
        MatMul(w.w, x.data(), T, exact.data(), MatMulMode::kExact, nullptr);
        for (int64_t i = 0; i < T * rows; ++i) ASSERT_NEAR(y[i], exact[i], 0.01f * std::sqrt(cols / 96.0)) << i;
      }
    }
  }
}

// MatMulShared (one quantization, one parallel region) equals separate MatMul calls.
TEST(MatMulFastTest, SharedInputEqualsSeparateCalls) {
  ThreadPool pool(2);
  const int64_t cols = 64;
  auto a = testing::MakeWeight(TensorType::kQ4, 40, cols, 1);
  auto b = testing::MakeWeight(TensorType::kQ8, 9, cols, 2);
  auto c = testing::MakeWeight(TensorType::kBF16, 16, cols, 3);
  auto d = testing::MakeWeight(TensorType::kQ8, 24, cols, 4);
  const InterleavedWeight ax = Interleave(a), dx = Interleave(d);
  for (MatMulMode mode : {MatMulMode::kExact, MatMulMode::kFast}) {
    for (int64_t T : {1, 6}) {
      auto x = testing::RandomVector(T * cols, 5 + T);
      std::vector<float> ya(T * 40), yb(T * 9), yc(T * 16), yd(T * 24), ra(T * 40), rb(T * 9), rc(T * 16),
          rd(T * 24);
      const MatMulOut outs[] = {{&ax.w, ya.data()}, {&b.w, yb.data()}, {&c.w, yc.data()}, {&dx.w, yd.data()}};
      MatMulShared(outs, x.data(), T, mode, &pool);
      MatMul(ax.w, x.data(), T, ra.data(), mode, nullptr);
      MatMul(b.w, x.data(), T, rb.data(), mode, nullptr);
      MatMul(c.w, x.data(), T, rc.data(), mode, nullptr);
      MatMul(dx.w, x.data(), T, rd.data(), mode, nullptr);
      EXPECT_EQ(ya, ra) << MatMulModeName(mode);
      EXPECT_EQ(yb, rb) << MatMulModeName(mode);
      EXPECT_EQ(yc, rc) << MatMulModeName(mode);
      EXPECT_EQ(yd, rd) << MatMulModeName(mode);
    }
  }
}

// MatMulGeGlu equals the two products followed by GeGlu, bit for bit: both modes, GEMV and
// GEMM, serial and threaded, interleaved q4 and float weights, rows not a multiple of 8, and
// enough tokens (T = 2100) that the rows come in several tiles of the up product (serially, 32
// rows and a last one of 8: row ranges of an interleaved up weight start inside it).
TEST(MatMulFastTest, FusedGeGluEqualsProductsThenGeGlu) {
  ThreadPool pool(2);
  const int64_t cols = 64;
  for (int64_t rows : {40, 13}) {
    auto g = testing::MakeWeight(TensorType::kQ4, rows, cols, 11);
    auto ub = testing::MakeWeight(TensorType::kBF16, rows, cols, 12);
    auto uq = testing::MakeWeight(TensorType::kQ4, rows, cols, 13);
    std::vector<InterleavedWeight> gx, ux;
    if (rows % 8 == 0) {
      gx.push_back(Interleave(g));
      ux.push_back(Interleave(uq));
    }
    const Weight& gw = gx.empty() ? g.w : gx[0].w;
    for (const Weight* uw : {&ub.w, ux.empty() ? &uq.w : &ux[0].w}) {
      for (MatMulMode mode : {MatMulMode::kExact, MatMulMode::kFast}) {
        for (int64_t T : {1, 6, 2100}) {
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
            auto x = testing::RandomVector(T * cols, 7 + T);
            std::vector<float> gate(T * rows), want(T * rows), wu(T * rows);
            MatMulGeGlu(gw, *uw, x.data(), T, gate.data(), mode, p);
            MatMul(gw, x.data(), T, want.data(), mode, nullptr);
            MatMul(*uw, x.data(), T, wu.data(), mode, nullptr);
            GeGlu(want.data(), wu.data(), T * rows, want.data());
            EXPECT_EQ(gate, want) << MatMulModeName(mode) << " rows=" << rows << " T=" << T << " up "
                                  << TensorTypeName(uw->type) << (p ? " threaded" : " serial");
          }
        }
      }
    }
  }
}

// Clamped inputs and outputs (a clipped linear) equal clamping around an unclamped product, bit
// for bit: every storage type and layout, every mode (the input clamped as it is quantized, as
// it is rounded to bf16, or into a copy for the float products), GEMV and GEMM, serial and
// threaded; through MatMul, MatMulShared (one output clamped, one not) and MatMulGeGlu (up's
// input under gate's clamp and under its own).
TEST(MatMulFastTest, ClampedInputAndOutputEqualClampingAroundTheProduct) {
  ThreadPool pool(2);
  const int64_t cols = 64, rows = 24;
  const ClampRange in{-0.7f, 0.9f}, out{-1.5f, 1.1f}, up_out{-0.8f, 2.0f}, up_own_in{-1.2f, 0.4f};
  std::vector<testing::OwnedWeight> owned;
  std::vector<InterleavedWeight> inter;
  std::vector<const Weight*> ws;
  for (TensorType type : kAllTypes) owned.push_back(testing::MakeWeight(type, rows, cols, 20 + owned.size()));
  for (const testing::OwnedWeight& o : owned) ws.push_back(&o.w);
  inter.push_back(Interleave(owned[3]));  // q8x8
  inter.push_back(Interleave(owned[4]));  // q4x8
  ws.push_back(&inter[0].w);
  ws.push_back(&inter[1].w);
  for (MatMulMode mode : {MatMulMode::kExact, MatMulMode::kFast, MatMulMode::kFastBf16}) {
    for (int64_t T : {1, 5, 40}) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        const std::vector<float> x = testing::RandomVector(T * cols, 30 + T);
        std::vector<float> xc(T * cols);
        Clamp(x.data(), T * cols, in, xc.data());
        for (const Weight* w : ws) {
          const std::string what = std::string(MatMulModeName(mode)) + " " + TensorTypeName(w->type) + " layout " +
                                   std::to_string(static_cast<int>(w->layout)) + " T=" + std::to_string(T) +
                                   (p ? " threaded" : " serial");
          std::vector<float> want(T * rows), got(T * rows);
          MatMul(*w, xc.data(), T, want.data(), mode, nullptr);
          Clamp(want.data(), T * rows, out, want.data());
          MatMul(*w, MatMulInput(x.data(), in), T, got.data(), mode, p, out);
          EXPECT_EQ(got, want) << what;
          // Shared: this output clamped, a second (the q8 weight) not.
          std::vector<float> shared(T * rows), plain(T * rows), want_plain(T * rows);
          const MatMulOut outs[] = {{w, shared.data(), out}, {ws[3], plain.data()}};
          MatMulShared(outs, MatMulInput(x.data(), in), T, mode, p);
          MatMul(*ws[3], xc.data(), T, want_plain.data(), mode, nullptr);
          EXPECT_EQ(shared, want) << what << " (shared)";
          EXPECT_EQ(plain, want_plain) << what << " (shared, unclamped output)";
          // GeGLU: gate = this weight, up = the bf16 weight, each output clamped; up's input
          // under gate's clamp, then under one of its own.
          for (const ClampRange up_in : {in, up_own_in}) {
            std::vector<float> fused(T * rows), up(T * rows), up_x(T * cols), want_glu = want;
            MatMulGeGlu(*w, *ws[2], MatMulInput(x.data(), in), T, fused.data(), mode, p, out, up_out, up_in);
            Clamp(x.data(), T * cols, up_in, up_x.data());
            MatMul(*ws[2], up_x.data(), T, up.data(), mode, nullptr);
            Clamp(up.data(), T * rows, up_out, up.data());
            GeGlu(want_glu.data(), up.data(), T * rows, want_glu.data());
            EXPECT_EQ(fused, want_glu) << what << " (GeGLU, up input clamp " << up_in.lo << ")";
          }
        }
      }
    }
  }
}

TEST(MatMulTest, ClampKeepsNaNAndClampsInPlace) {
  std::vector<float> x = {-3.0f, -1.0f, 0.5f, 2.0f, std::nanf(""), -INFINITY, INFINITY};
  Clamp(x.data(), static_cast<int64_t>(x.size()), {-1.0f, 1.0f}, x.data());
  EXPECT_EQ(x[0], -1.0f);
  EXPECT_EQ(x[1], -1.0f);
  EXPECT_EQ(x[2], 0.5f);
  EXPECT_EQ(x[3], 1.0f);
  EXPECT_TRUE(std::isnan(x[4]));
  EXPECT_EQ(x[5], -1.0f);
  EXPECT_EQ(x[6], 1.0f);
  EXPECT_FALSE(ClampRange{}.active());
  EXPECT_TRUE((ClampRange{-INFINITY, 3.0f}.active()));
  EXPECT_TRUE((ClampRange{0.0f, INFINITY}.active()));
}

// RowRange views rows [r0, r0 + n) of a weight in place, row-major or in groups of 8.
TEST(MatMulTest, RowRangeIsTheRowsOfTheWeight) {
  const int64_t cols = 64;
  auto w = testing::MakeWeight(TensorType::kQ8, 32, cols, 5);
  const InterleavedWeight wx = Interleave(w);
  for (const Weight* src : {static_cast<const Weight*>(&w.w), &wx.w}) {
    const Weight v = RowRange(*src, 8, 16);
    EXPECT_EQ(v.rows, 16);
    EXPECT_EQ(v.cols, cols);
    std::vector<float> a(cols), b(cols);
    for (int64_t r = 0; r < 16; ++r) {
      DequantizeWeightRow(v, r, a.data());
      DequantizeWeightRow(*src, 8 + r, b.data());
      EXPECT_EQ(a, b) << r;
    }
  }
}

// MatMulGeluGated equals the product, GeluTanhInPlace and the multiplication by the gate tensor
// (read with its own row stride), bit for bit: both modes, GEMV and GEMM, serial and threaded.
TEST(MatMulFastTest, FusedGeluGatedEqualsProductThenGate) {
  ThreadPool pool(3);
  const int64_t cols = 96, ldm = 50;
  for (TensorType type : {TensorType::kQ4, TensorType::kQ8, TensorType::kF32}) {
    for (int64_t rows : {48, 21}) {
      auto w = testing::MakeWeight(type, rows, cols, 21 + rows);
      std::vector<InterleavedWeight> wx;
      if (IsQuantized(type) && rows % 8 == 0) wx.push_back(Interleave(w));
      const Weight& ww = wx.empty() ? w.w : wx[0].w;
      for (MatMulMode mode : {MatMulMode::kExact, MatMulMode::kFast}) {
        for (int64_t T : {1, 5, 19}) {
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
            auto x = testing::RandomVector(T * cols, 3 + T);
            auto m = testing::RandomVector(T * (rows + ldm), 4 + T);  // row t at t·(rows + ldm)
            std::vector<float> y(T * rows), want(T * rows);
            MatMulGeluGated(ww, x.data(), T, m.data(), rows + ldm, y.data(), mode, p);
            MatMul(ww, x.data(), T, want.data(), mode, nullptr);
            GeluTanhInPlace(want.data(), T * rows);
            for (int64_t t = 0; t < T; ++t) {
              for (int64_t r = 0; r < rows; ++r) want[t * rows + r] *= m[t * (rows + ldm) + r];
            }
            EXPECT_EQ(y, want) << TensorTypeName(type) << " " << MatMulModeName(mode) << " rows=" << rows
                               << " T=" << T << (p ? " threaded" : " serial");
          }
        }
      }
    }
  }
}

// Activations quantized ahead (MatMulInput.xq, as RmsNormQuantize makes them) give the bits
// of the products quantizing x themselves; float weights keep reading x.
TEST(MatMulFastTest, PrequantizedInputEqualsQuantizingInside) {
  ThreadPool pool(2);
  const int64_t cols = 128;
  auto a = testing::MakeWeight(TensorType::kQ4, 40, cols, 31);
  auto b = testing::MakeWeight(TensorType::kF16, 24, cols, 32);
  const InterleavedWeight ax = Interleave(a);
  const kernels::KernelTable& k = kernels::ActiveKernels();
  for (int64_t T : {1, 7, 40}) {
    auto x = testing::RandomVector(T * cols, 33 + T);
    std::vector<kernels::ActBlock> xq(T * cols / kQBlock);
    for (int64_t t = 0; t < T; ++t) k.quantize_act(x.data() + t * cols, xq.data() + t * cols / kQBlock, cols);
    const MatMulInput in(x.data(), xq.data());
    std::vector<float> ya(T * 40), yb(T * 24), ra(T * 40), rb(T * 24), g(T * 40), rg(T * 40);
    const MatMulOut outs[] = {{&ax.w, ya.data()}, {&b.w, yb.data()}};
    MatMulShared(outs, in, T, MatMulMode::kFast, &pool);
    MatMul(ax.w, x.data(), T, ra.data(), MatMulMode::kFast, nullptr);
    MatMul(b.w, x.data(), T, rb.data(), MatMulMode::kFast, nullptr);
    EXPECT_EQ(ya, ra) << T;
    EXPECT_EQ(yb, rb) << T;
    MatMulGeGlu(ax.w, a.w, in, T, g.data(), MatMulMode::kFast, &pool);
    MatMulGeGlu(ax.w, a.w, x.data(), T, rg.data(), MatMulMode::kFast, nullptr);
    EXPECT_EQ(g, rg) << T;
  }
}

TEST(MatMulTest, DotHandlesTails) {
  for (int64_t n : {0, 1, 7, 8, 9, 31, 33}) {
    auto a = testing::RandomVector(n, 1), b = testing::RandomVector(n, 2);
    double ref = 0;
    for (int64_t i = 0; i < n; ++i) ref += double(a[i]) * b[i];
    EXPECT_NEAR(DotF32(a.data(), b.data(), n), ref, 1e-5) << n;
  }
}

TEST(EmbeddingTest, GatherRowsDequantizesEveryType) {
  for (TensorType type : kAllTypes) {
    const int64_t rows = 10, cols = 64;
    auto w = testing::MakeWeight(type, rows, cols, 3);
    const int32_t ids[4] = {9, 0, 9, 4};
    std::vector<float> out(4 * cols);
    GatherRows(w.w, ids, 4, out.data());
    for (int i = 0; i < 4; ++i) {
      for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(out[i * cols + c], w.ref[ids[i] * cols + c]);
    }
  }
}

// An interleaved q4 / q8 table gathers the same rows as its row-major twin.
TEST(EmbeddingTest, GatherRowsReadsInterleaved) {
  for (TensorType type : {TensorType::kQ4, TensorType::kQ8}) {
    const int64_t rows = 24, cols = 96;
    auto w = testing::MakeWeight(type, rows, cols, 4);
    const InterleavedWeight q = Interleave(w);
    const int32_t ids[5] = {23, 0, 7, 8, 15};
    std::vector<float> out(5 * cols);
    GatherRows(q.w, ids, 5, out.data());
    for (int i = 0; i < 5; ++i) {
      for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(out[i * cols + c], w.ref[ids[i] * cols + c]) << TensorTypeName(type);
    }
  }
}

// Gathering from a file mapping (dropping the pages after each row) reads the same values,
// also when rows are gathered again after their pages were dropped.
TEST(EmbeddingTest, GatherRowsFromFileMappingEqualsGatherRows) {
  const int64_t rows = 4096, cols = 256;  // 576 KiB of q4: several pages and windows
  auto w = testing::MakeWeight(TensorType::kQ4, rows, cols, 6);
  const std::string path = ::testing::TempDir() + "/gather." + std::to_string(::getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(w.bytes.data(), 1, w.bytes.size(), f), w.bytes.size());
  std::fclose(f);
  auto map = MappedFile::Open(path);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  Weight mapped = w.w;
  mapped.data = (*map)->data();
  const int32_t ids[6] = {4095, 0, 1000, 1001, 0, 4095};
  std::vector<float> got(6 * cols), want(6 * cols);
  for (int rep = 0; rep < 2; ++rep) {
    GatherRowsFromFileMapping(mapped, ids, 6, got.data());
    GatherRows(w.w, ids, 6, want.data());
    EXPECT_EQ(got, want) << rep;
  }
  std::remove(path.c_str());
}

// Q4 nibble order matters: element j of a block is the low nibble of byte j, element j+16
// the high nibble (GGUF Q4_0), checked on a hand-made block.
TEST(EmbeddingTest, Q4BlockLayoutByHand) {
  BlockQ4 b;
  b.d = F32ToF16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((j & 15) | ((15 - j) << 4));
  Weight w{TensorType::kQ4, TensorLayout::kRowMajor, 1, 32, sizeof(BlockQ4), reinterpret_cast<uint8_t*>(&b)};
  std::vector<float> out(32);
  const int32_t id = 0;
  GatherRows(w, &id, 1, out.data());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], (j - 8) * 0.5f);
    EXPECT_EQ(out[j + 16], (15 - j - 8) * 0.5f);
  }
}

}  // namespace matmul_test
}  // namespace gemlet::ops
