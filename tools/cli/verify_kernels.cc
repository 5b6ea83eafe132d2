// The kernel part of `gemlet run --verify` (verify.h): one tier's table against the scalar
// twins (bit for bit) or, for the scalar tier, against a float64 reference.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "base/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/quant.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/repack.h"
#include "tools/cli/verify.h"

namespace gemlet::cli {

using kernels::ActBlock;
using kernels::KernelTable;

namespace {

// ---- random data ----

std::vector<float> RandomFloats(std::mt19937& rng, int64_t n) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  if (n > 3) v[n / 2] = 0.0f;  // a zero and a large value in every vector
  if (n > 5) v[n - 2] = 40.0f;
  return v;
}

std::vector<BlockQ4> RandomQ4(std::mt19937& rng, int64_t blocks) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> sc(0.001f, 0.05f);
  std::vector<BlockQ4> w(blocks);
  for (auto& b : w) {
    b.d = F32ToF16(byte(rng) & 1 ? sc(rng) : -sc(rng));
    for (auto& q : b.qs) q = static_cast<uint8_t>(byte(rng));
  }
  return w;
}

std::vector<BlockQ8> RandomQ8(std::mt19937& rng, int64_t blocks) {
  std::uniform_int_distribution<int> byte(-128, 127);
  std::uniform_real_distribution<float> sc(0.0005f, 0.01f);
  std::vector<BlockQ8> w(blocks);
  for (auto& b : w) {
    b.d = F32ToF16(sc(rng));
    for (auto& q : b.qs) q = static_cast<int8_t>(byte(rng));
  }
  return w;
}

// Float weights of `type` ([rows, K] row-major) and their f32 values.
std::vector<uint8_t> RandomFloatWeights(std::mt19937& rng, TensorType type, int64_t n, std::vector<float>* values) {
  *values = RandomFloats(rng, n);
  std::vector<uint8_t> raw;
  if (type == TensorType::kF32) {
    raw.resize(n * 4);
    std::memcpy(raw.data(), values->data(), n * 4);
    return raw;
  }
  if (type == TensorType::kQ8) {  // n a multiple of 32; values become the dequantized blocks
    raw.resize(n / kQBlock * sizeof(BlockQ8));
    kernels::QuantizeRowQ8Ref(values->data(), reinterpret_cast<BlockQ8*>(raw.data()), n);
    kernels::DequantizeRowRef(TensorType::kQ8, raw.data(), values->data(), n);
    return raw;
  }
  raw.resize(n * 2);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = type == TensorType::kF16 ? F32ToF16((*values)[i]) : F32ToBf16((*values)[i]);
    (*values)[i] = type == TensorType::kF16 ? F16ToF32(h) : Bf16ToF32(h);
    std::memcpy(raw.data() + 2 * i, &h, 2);
  }
  return raw;
}

// ---- comparison ----

// Collects the first mismatch of a tier. Bit-exact against a twin; against the float64
// reference within tol·(Σ|terms|) + 1e-6.
class Checker {
 public:
  explicit Checker(bool exact) : exact_(exact) {}
  bool failed() const { return !first_.empty(); }
  const std::string& first() const { return first_; }
  int64_t cases() const { return cases_; }
  double max_rel() const { return max_rel_; }

  // want: twin outputs or references; mag: Σ|terms| per value (reference mode only).
  void Compare(const std::string& what, const std::vector<float>& want, const std::vector<float>& got,
               const std::vector<double>& mag = {}) {
    ++cases_;
    if (failed()) return;
    for (size_t i = 0; i < want.size(); ++i) {
      bool ok;
      if (exact_) {
        ok = std::memcmp(&want[i], &got[i], 4) == 0;
      } else {
        const double m = mag.empty() ? std::fabs(want[i]) : mag[i];
        const double err = std::fabs(static_cast<double>(want[i]) - got[i]);
        ok = std::isfinite(got[i]) && err <= 2e-5 * m + 1e-6;
        if (m > 0) max_rel_ = std::max(max_rel_, err / m);
      }
      if (!ok) {
        std::ostringstream s;
        s << what << ": value " << i << " is " << got[i] << ", " << (exact_ ? "scalar twin " : "reference ")
          << want[i];
        first_ = s.str();
        return;
      }
    }
  }
  void Count() { ++cases_; }
  void Fail(const std::string& what) {
    ++cases_;
    if (!failed()) first_ = what;
  }

 private:
  bool exact_;
  std::string first_;
  int64_t cases_ = 0;
  double max_rel_ = 0;
};

constexpr float kSentinel = -12345.0f;

// Float64 reference of row r of a quantized product: Σ_j w_j·(q_j·d_x) and Σ|terms|.
void RefQuantRow(TensorType type, const void* row, const ActBlock* x, int64_t K, double* y, double* mag) {
  std::vector<float> w(K);
  kernels::DequantizeRowRef(type, row, w.data(), K);
  double s = 0, m = 0;
  for (int64_t i = 0; i < K; ++i) {
    const double t = static_cast<double>(w[i]) * x[i / kQBlock].q[i % kQBlock] * x[i / kQBlock].d;
    s += t;
    m += std::fabs(t);
  }
  *y = s;
  *mag = m;
}

// ---- the kernels, one by one ----

void CheckQuantizeAct(const KernelTable& k, const KernelTable* twin, std::mt19937& rng, Checker& c) {
  for (int64_t K : {32, 96, 4128}) {
    const auto x = RandomFloats(rng, K);
    std::vector<ActBlock> got(K / kQBlock);
    k.quantize_act(x.data(), got.data(), K);
    const std::string what = "quantize_act K=" + std::to_string(K);
    if (twin) {
      std::vector<ActBlock> want(K / kQBlock);
      twin->quantize_act(x.data(), want.data(), K);
      if (std::memcmp(want.data(), got.data(), want.size() * sizeof(ActBlock)) != 0) {
        c.Fail(what + ": blocks differ from the scalar twin");
      } else {
        c.Count();
      }
      continue;
    }
    for (int64_t b = 0; b < K / kQBlock; ++b) {  // |q·d − x| ≤ d/2, |q| ≤ 127, sum = Σq
      int32_t sum = 0;
      for (int j = 0; j < kQBlock; ++j) {
        const float xv = x[b * kQBlock + j];
        const int q = got[b].q[j];
        sum += q;
        if (q < -127 || q > 127 || std::fabs(q * got[b].d - xv) > 0.5001f * got[b].d + 1e-30f) {
          c.Fail(what + ": block " + std::to_string(b) + " value " + std::to_string(j) + " quantized to " +
                 std::to_string(q) + " with scale " + std::to_string(got[b].d) + " for x = " + std::to_string(xv));
          return;
        }
      }
      if (sum != got[b].sum) {
        c.Fail(what + ": block " + std::to_string(b) + " sum " + std::to_string(got[b].sum) + " != " +
               std::to_string(sum));
        return;
      }
    }
    c.Count();
  }
}

// gemv/gemm over q4, q8, q4x8 or q8x8 weights. W: the row-major blocks (q4 or q8).
template <typename Block>
void CheckQuant(const KernelTable& k, const KernelTable* twin, std::mt19937& rng, Checker& c, bool interleaved) {
  constexpr bool kQ4 = std::is_same_v<Block, BlockQ4>;
  using BlockX8 = std::conditional_t<kQ4, BlockQ4x8, BlockQ8x8>;
  const TensorType type = kQ4 ? TensorType::kQ4 : TensorType::kQ8;
  const char* name = interleaved ? (kQ4 ? "q4x8" : "q8x8") : (kQ4 ? "q4" : "q8");
  for (int64_t K : {32, 160, 4128}) {
    const int64_t nb = K / kQBlock;
    for (int64_t rows : interleaved ? std::vector<int64_t>{8, 24} : std::vector<int64_t>{1, 7, 13}) {
      std::vector<Block> w;
      if constexpr (kQ4) w = RandomQ4(rng, rows * nb); else w = RandomQ8(rng, rows * nb);
      std::vector<BlockX8> w8;
      if (interleaved) {
        w8.resize(rows / 8 * nb);
        if constexpr (kQ4) {
          GEMLET_CHECK(kernels::RepackQ4x8(w.data(), rows, K, w8.data()).ok());
        } else {
          GEMLET_CHECK(kernels::RepackQ8x8(w.data(), rows, K, w8.data()).ok());
        }
      }
      for (int64_t T : {1, 3, 5, 9}) {
        std::vector<ActBlock> x(T * nb);
        for (int64_t t = 0; t < T; ++t) {
          const auto xf = RandomFloats(rng, K);
          kernels::QuantizeActRef(xf.data(), x.data() + t * nb, K);
        }
        const int64_t step = interleaved ? 8 : 1;
        const int64_t r0 = rows > 2 * step ? step : 0;
        const int64_t r1 = rows;
        const int64_t ldy = rows + 3;
        std::vector<float> got(T * ldy, kSentinel), want(T * ldy, kSentinel);
        std::vector<double> mag(T * ldy, 0.0);
        auto run = [&](const KernelTable& kt, float* y) {
          if constexpr (kQ4) {
            if (T == 1 && interleaved) kt.gemv_q4x8(w8.data(), nb, r0, r1, x.data(), K, y);
            else if (T == 1) kt.gemv_q4(w.data(), nb, r0, r1, x.data(), K, y);
            else if (interleaved) kt.gemm_q4x8(w8.data(), nb, r0, r1, x.data(), nb, T, K, y, ldy);
            else kt.gemm_q4(w.data(), nb, r0, r1, x.data(), nb, T, K, y, ldy);
          } else {
            if (T == 1 && interleaved) kt.gemv_q8x8(w8.data(), nb, r0, r1, x.data(), K, y);
            else if (T == 1) kt.gemv_q8(w.data(), nb, r0, r1, x.data(), K, y);
            else if (interleaved) kt.gemm_q8x8(w8.data(), nb, r0, r1, x.data(), nb, T, K, y, ldy);
            else kt.gemm_q8(w.data(), nb, r0, r1, x.data(), nb, T, K, y, ldy);
          }
        };
        run(k, got.data());
        if (twin) {
          run(*twin, want.data());
        } else {
          for (int64_t t = 0; t < T; ++t) {
            for (int64_t r = r0; r < r1; ++r) {
              double y, m;
              RefQuantRow(type, w.data() + r * nb, x.data() + t * nb, K, &y, &m);
              want[t * ldy + r] = static_cast<float>(y);
              mag[t * ldy + r] = m;
            }
          }
        }
        if (T == 1) {  // gemv writes y[r] only: compare [0, rows) with the sentinel around
          got.resize(rows), want.resize(rows), mag.resize(rows);
        }
        const std::string what = std::string(T == 1 ? "gemv_" : "gemm_") + name + " K=" + std::to_string(K) +
                                 " rows [" + std::to_string(r0) + "," + std::to_string(r1) + ") T=" +
                                 std::to_string(T);
        c.Compare(what, want, got, twin ? std::vector<double>{} : mag);
        if (c.failed()) return;
      }
    }
  }
}

void CheckFloat(const KernelTable& k, const KernelTable* twin, std::mt19937& rng, Checker& c) {
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    for (int64_t K : {1, 15, 16, 17, 100, 515}) {
      const int64_t rows = 5;
      std::vector<float> wv;
      const auto w = RandomFloatWeights(rng, type, rows * K, &wv);
      for (int64_t T : {1, 2, 7}) {
        const auto x = RandomFloats(rng, T * K);
        const int64_t r0 = 1, r1 = rows, ldy = rows + 2;
        std::vector<float> got(T * ldy, kSentinel), want(T * ldy, kSentinel);
        std::vector<double> mag(T * ldy, 0.0);
        auto run = [&](const KernelTable& kt, float* y) {
          if (T == 1) kt.gemv_f(type, w.data(), K, r0, r1, x.data(), K, y);
          else kt.gemm_f(type, w.data(), K, r0, r1, x.data(), K, T, K, y, ldy, r1 - r0);  // as attention prefetches
        };
        run(k, got.data());
        if (twin) {
          run(*twin, want.data());
        } else {
          for (int64_t t = 0; t < T; ++t) {
            for (int64_t r = r0; r < r1; ++r) {
              double s = 0, m = 0;
              for (int64_t i = 0; i < K; ++i) {
                const double p = static_cast<double>(wv[r * K + i]) * x[t * K + i];
                s += p;
                m += std::fabs(p);
              }
              want[t * ldy + r] = static_cast<float>(s);
              mag[t * ldy + r] = m;
            }
          }
        }
        if (T == 1) got.resize(rows), want.resize(rows), mag.resize(rows);
        const std::string what = std::string(T == 1 ? "gemv_f " : "gemm_f ") + TensorTypeName(type) +
                                 " K=" + std::to_string(K) + " T=" + std::to_string(T);
        c.Compare(what, want, got, twin ? std::vector<double>{} : mag);
        if (c.failed()) return;
      }
    }
  }
}

// Attention's P·V, y += A·B over f32, f16 and q8 rows of B (gemm_acc_f; q8 whole blocks), with
// SIMD tails in D and row-block tails in M: against the scalar twin bit for bit, or (scalar
// tier) float64.
void CheckGemmAcc(const KernelTable& k, const KernelTable* twin, std::mt19937& rng, Checker& c) {
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ8}) {
    for (int64_t D : {1, 17, 33, 256}) {
      if (type == TensorType::kQ8 && D % kQBlock != 0) continue;
      for (int64_t M : {1, 5, 9}) {
        const int64_t N = 37;
        std::vector<float> bv;
        const auto b = RandomFloatWeights(rng, type, N * D, &bv);
        const auto a = RandomFloats(rng, M * N);
        const auto y0 = RandomFloats(rng, M * D);
        std::vector<float> got = y0, want = y0;
        std::vector<double> mag(M * D, 0.0);
        k.gemm_acc_f(type, a.data(), N, M, b.data(), D, N, D, got.data(), D, N);
        if (twin) {
          twin->gemm_acc_f(type, a.data(), N, M, b.data(), D, N, D, want.data(), D, N);
        } else {
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t d = 0; d < D; ++d) {
              double sum = y0[m * D + d], mg = std::fabs(sum);
              for (int64_t n = 0; n < N; ++n) {
                const double p = static_cast<double>(a[m * N + n]) * bv[n * D + d];
                sum += p;
                mg += std::fabs(p);
              }
              want[m * D + d] = static_cast<float>(sum);
              mag[m * D + d] = mg;
            }
          }
        }
        const std::string what = std::string("gemm_acc_f ") + TensorTypeName(type) + " D=" + std::to_string(D) +
                                 " M=" + std::to_string(M);
        c.Compare(what, want, got, twin ? std::vector<double>{} : mag);
        if (c.failed()) return;
      }
    }
  }
}

// The KV cache's f16 conversions: every f16 value widened, and f32 values at and around the
// f16 rounding boundaries, subnormals, overflow, infinities and NaN narrowed — against the
// scalar twin bit for bit, or (scalar tier) against base/half.h, their specification.
void CheckConvert(const KernelTable& k, const KernelTable* twin, std::mt19937& rng, Checker& c) {
  std::vector<uint16_t> h(65536 + 7);  // every f16 bit pattern, then a ragged tail
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i * 40503u);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> got(h.size()), want(h.size());
  k.f16_to_f32(h.data(), got.data(), static_cast<int64_t>(h.size()));
  for (size_t i = 0; i < h.size(); ++i) want[i] = F16ToF32(h[i]);
  if (twin) twin->f16_to_f32(h.data(), want.data(), static_cast<int64_t>(h.size()));
  bool ok = true;
  for (size_t i = 0; i < h.size() && ok; ++i) ok = std::memcmp(&got[i], &want[i], 4) == 0;
  if (!ok) {
    c.Fail("f16_to_f32: differs from " + std::string(twin ? "the scalar twin" : "base/half.h"));
    return;
  }
  c.Count();

  std::vector<float> f;
  for (uint32_t e = 0; e < 65536; e += 7) {  // f16 values and the f32 values between them
    const float v = F16ToF32(static_cast<uint16_t>(e));
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int d : {-1, 0, 1, 0x1000, 0xfff, 0x1001}) {
      const uint32_t b = bits + static_cast<uint32_t>(d);
      float x;
      std::memcpy(&x, &b, 4);
      f.push_back(x);
    }
  }
  for (float x : {65504.0f, 65519.99f, 65520.0f, 1e30f, -1e30f, 5.96e-8f, 2.98e-8f, 1e-10f,
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    f.push_back(x);
  }
  std::uniform_int_distribution<uint32_t> bits_dist;
  for (int i = 0; i < 4099; ++i) {
    const uint32_t b = bits_dist(rng);
    float x;
    std::memcpy(&x, &b, 4);
    f.push_back(x);
  }
  std::vector<uint16_t> hg(f.size()), hw(f.size());
  k.f32_to_f16(f.data(), hg.data(), static_cast<int64_t>(f.size()));
  for (size_t i = 0; i < f.size(); ++i) hw[i] = F32ToF16(f[i]);
  if (twin) twin->f32_to_f16(f.data(), hw.data(), static_cast<int64_t>(f.size()));
  for (size_t i = 0; i < f.size(); ++i) {
    if (hg[i] != hw[i]) {
      std::ostringstream s;
      s << "f32_to_f16: " << f[i] << " narrowed to 0x" << std::hex << hg[i] << ", "
        << (twin ? "scalar twin " : "base/half.h ") << "0x" << hw[i];
      c.Fail(s.str());
      return;
    }
  }
  c.Count();
}

// The bf16 dot products, on the tiers that have them: the rounding of random and boundary f32
// values, products with tails in K and in the row panels and token tiles, the accumulating
// product with column and row tails, and the softmax that rounds its weights (row tails, odd
// n), against the scalar twins (kernels/ref) bit for bit.
void CheckBf16(const KernelTable& k, std::mt19937& rng, Checker& c) {
  if (k.gemm_bf16 == nullptr || k.f32_to_bf16 == nullptr || k.gemm_acc_bf16 == nullptr ||
      k.online_softmax_bf16 == nullptr) {
    return;
  }
  std::vector<float> f = RandomFloats(rng, 4099);
  std::uniform_int_distribution<uint32_t> bits_dist;
  for (int i = 0; i < 1024; ++i) f.push_back(std::bit_cast<float>(bits_dist(rng)));
  for (float x : {1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 3.4e38f, -3.4e38f, 1e-40f, -1e-45f, 0.0f, -0.0f,
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    f.push_back(x);
  }
  std::vector<uint16_t> hg(f.size()), hw(f.size());
  k.f32_to_bf16(f.data(), hg.data(), static_cast<int64_t>(f.size()));
  kernels::F32ToBf16Ref(f.data(), hw.data(), static_cast<int64_t>(f.size()));
  for (size_t i = 0; i < f.size(); ++i) {
    if (hg[i] != hw[i]) {
      std::ostringstream s;
      s << "f32_to_bf16: " << f[i] << " rounded to 0x" << std::hex << hg[i] << ", scalar twin 0x" << hw[i];
      c.Fail(s.str());
      return;
    }
  }
  c.Count();
  for (int64_t K : {1, 31, 64, 100, 1024}) {
    for (int64_t T : {1, 3, 4, 9, 13}) {
      const int64_t R = T == 13 ? 40 : 7;
      std::vector<uint16_t> w(R * K), x(T * K);
      const std::vector<float> wf = RandomFloats(rng, R * K), xf = RandomFloats(rng, T * K);
      kernels::F32ToBf16Ref(wf.data(), w.data(), R * K);
      kernels::F32ToBf16Ref(xf.data(), x.data(), T * K);
      std::vector<float> got(T * R, kSentinel), want(T * R, kSentinel);
      k.gemm_bf16(w.data(), K, 0, R, x.data(), K, T, K, got.data(), R);
      kernels::GemmBf16Ref(w.data(), K, 0, R, x.data(), K, T, K, want.data(), R);
      c.Compare("gemm_bf16 K=" + std::to_string(K) + " T=" + std::to_string(T), want, got);
      if (c.failed()) return;
    }
  }
  for (int64_t D : {1, 17, 64, 100}) {
    for (int64_t M : {1, 5, 9}) {
      const int64_t N = 38;
      std::vector<uint16_t> a(M * N), b(N * D);
      const std::vector<float> af = RandomFloats(rng, M * N), bf = RandomFloats(rng, N * D);
      kernels::F32ToBf16Ref(af.data(), a.data(), M * N);
      kernels::F32ToBf16Ref(bf.data(), b.data(), N * D);
      const std::vector<float> y0 = RandomFloats(rng, M * D);
      std::vector<float> got = y0, want = y0;
      k.gemm_acc_bf16(a.data(), N, M, b.data(), 2 * D, N, D, got.data(), D);
      kernels::GemmAccBf16Ref(a.data(), N, M, b.data(), 2 * D, N, D, want.data(), D);
      c.Compare("gemm_acc_bf16 D=" + std::to_string(D) + " M=" + std::to_string(M), want, got);
      if (c.failed()) return;
    }
  }
  for (int64_t n : {7, 16, 37, 128}) {
    const int64_t R = 5, ldp = n + 1;
    const std::vector<float> sc = RandomFloats(rng, R * n);
    std::vector<float> mg(R, -std::numeric_limits<float>::infinity()), lg(R, 0.0f), cg(R), mw = mg, lw = lg, cw(R);
    std::vector<uint16_t> pg(R * ldp), pw(R * ldp);
    k.online_softmax_bf16(sc.data(), n, R, n, mg.data(), lg.data(), cg.data(), pg.data(), ldp);
    kernels::OnlineSoftmaxBf16Ref(sc.data(), n, R, n, mw.data(), lw.data(), cw.data(), pw.data(), ldp);
    std::vector<float> got(pg.size()), want(pw.size());
    for (size_t i = 0; i < pg.size(); ++i) {
      got[i] = Bf16ToF32(pg[i]);
      want[i] = Bf16ToF32(pw[i]);
    }
    got.insert(got.end(), lg.begin(), lg.end());
    want.insert(want.end(), lw.begin(), lw.end());
    c.Compare("online_softmax_bf16 n=" + std::to_string(n), want, got);
    if (c.failed()) return;
  }
}

}  // namespace

VerifyCheck VerifyKernelTier(kernels::Tier tier, const std::string& inject_fault) {
  VerifyCheck check;
  const KernelTable* table = kernels::KernelsForTier(tier);
  const bool scalar = tier == kernels::Tier::kScalar;
  check.name = std::string("kernels ") + kernels::TierName(tier) + (scalar ? " vs float64 reference" : " vs scalar twins");
  if (table == nullptr) {
    check.detail = "this CPU does not run the tier";
    return check;
  }
  const KernelTable k = WithFault(*table, inject_fault);
  const KernelTable* twin = scalar ? nullptr : &kernels::ScalarKernels();
  Checker c(/*exact=*/!scalar);
  std::mt19937 rng(20260709u + static_cast<unsigned>(tier));
  CheckQuantizeAct(k, twin, rng, c);
  if (!c.failed()) CheckQuant<BlockQ4>(k, twin, rng, c, /*interleaved=*/false);
  if (!c.failed()) CheckQuant<BlockQ8>(k, twin, rng, c, false);
  if (!c.failed()) CheckQuant<BlockQ4>(k, twin, rng, c, /*interleaved=*/true);
  if (!c.failed()) CheckQuant<BlockQ8>(k, twin, rng, c, /*interleaved=*/true);
  if (!c.failed()) CheckFloat(k, twin, rng, c);
  if (!c.failed()) CheckGemmAcc(k, twin, rng, c);
  if (!c.failed()) CheckConvert(k, twin, rng, c);
  if (!c.failed()) CheckBf16(k, rng, c);
  check.pass = !c.failed();
  std::ostringstream s;
  if (c.failed()) {
    s << c.first();
  } else if (scalar) {
    s << c.cases() << " cases, max relative error " << c.max_rel();
  } else {
    s << c.cases() << " cases, bit-identical";
  }
  check.detail = s.str();
  return check;
}

}  // namespace gemlet::cli
