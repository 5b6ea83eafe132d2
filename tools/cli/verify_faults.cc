// The fault hook of `gemlet run --verify` (verify.h, GEMLET_VERIFY_INJECT_FAULT): wrappers that
// call the original kernel, kept here, and then spoil one output value.
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tools/cli/verify.h"

namespace gemlet::cli {

using kernels::ActBlock;
using kernels::KernelTable;

namespace {

KernelTable g_orig;

void BadQuantizeAct(const float* x, ActBlock* out, int64_t K) {
  g_orig.quantize_act(x, out, K);
  if (K >= kQBlock) out[0].d *= 1.5f;
}
void BadGemvQ4(const BlockQ4* w, int64_t s, int64_t r0, int64_t r1, const ActBlock* x, int64_t K, float* y) {
  g_orig.gemv_q4(w, s, r0, r1, x, K, y);
  if (r1 > r0) y[r0] += 1.0f;
}
void BadGemmQ4(const BlockQ4* w, int64_t s, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs, int64_t T,
               int64_t K, float* y, int64_t ldy) {
  g_orig.gemm_q4(w, s, r0, r1, x, xs, T, K, y, ldy);
  if (r1 > r0 && T > 0) y[(T - 1) * ldy + r0] += 1.0f;
}
void BadGemvQ8(const BlockQ8* w, int64_t s, int64_t r0, int64_t r1, const ActBlock* x, int64_t K, float* y) {
  g_orig.gemv_q8(w, s, r0, r1, x, K, y);
  if (r1 > r0) y[r0] += 1.0f;
}
void BadGemmQ8(const BlockQ8* w, int64_t s, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs, int64_t T,
               int64_t K, float* y, int64_t ldy) {
  g_orig.gemm_q8(w, s, r0, r1, x, xs, T, K, y, ldy);
  if (r1 > r0 && T > 0) y[(T - 1) * ldy + r0] += 1.0f;
}
// The interleaved ones (q4x8, q8x8): kKernel is the table member they wrap.
template <typename BlockX8, auto kKernel>
void BadGemvX8(const BlockX8* w, int64_t s, int64_t r0, int64_t r1, const ActBlock* x, int64_t K, float* y) {
  (g_orig.*kKernel)(w, s, r0, r1, x, K, y);
  if (r1 > r0) y[r1 - 1] += 1.0f;
}
template <typename BlockX8, auto kKernel>
void BadGemmX8(const BlockX8* w, int64_t s, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs, int64_t T,
               int64_t K, float* y, int64_t ldy) {
  (g_orig.*kKernel)(w, s, r0, r1, x, xs, T, K, y, ldy);
  if (r1 > r0 && T > 0) y[(T - 1) * ldy + r1 - 1] += 1.0f;
}
void BadGemvF(TensorType t, const void* w, int64_t s, int64_t r0, int64_t r1, const float* x, int64_t K, float* y) {
  g_orig.gemv_f(t, w, s, r0, r1, x, K, y);
  if (r1 > r0) y[r0] += 1.0f;
}
void BadGemmF(TensorType t, const void* w, int64_t s, int64_t r0, int64_t r1, const float* x, int64_t xs, int64_t T,
              int64_t K, float* y, int64_t ldy, int64_t prefetch) {
  g_orig.gemm_f(t, w, s, r0, r1, x, xs, T, K, y, ldy, prefetch);
  if (r1 > r0 && T > 0) y[r0] += 1.0f;
}

void BadGemmAccF(TensorType t, const float* a, int64_t lda, int64_t M, const void* b, int64_t bs, int64_t N,
                 int64_t D, float* y, int64_t ldy, int64_t prefetch) {
  g_orig.gemm_acc_f(t, a, lda, M, b, bs, N, D, y, ldy, prefetch);
  if (M > 0 && D > 0) y[(M - 1) * ldy + D - 1] += 1.0f;
}

void BadF16ToF32(const uint16_t* x, float* y, int64_t n) {
  g_orig.f16_to_f32(x, y, n);
  if (n > 0) y[n - 1] += 1.0f;
}
void BadF32ToF16(const float* x, uint16_t* y, int64_t n) {
  g_orig.f32_to_f16(x, y, n);
  if (n > 0) y[n - 1] ^= 1;
}

void BadGemmBf16(const uint16_t* w, int64_t s, int64_t r0, int64_t r1, const uint16_t* x, int64_t xs, int64_t T,
                 int64_t K, float* y, int64_t ldy) {
  g_orig.gemm_bf16(w, s, r0, r1, x, xs, T, K, y, ldy);
  if (r1 > r0 && T > 0) y[r0] += 1.0f;
}
void BadGemmAccBf16(const uint16_t* a, int64_t lda, int64_t M, const uint16_t* b, int64_t bs, int64_t N, int64_t D,
                    float* y, int64_t ldy) {
  g_orig.gemm_acc_bf16(a, lda, M, b, bs, N, D, y, ldy);
  if (M > 0 && D > 0) y[(M - 1) * ldy + D - 1] += 1.0f;
}
void BadF32ToBf16(const float* x, uint16_t* y, int64_t n) {
  g_orig.f32_to_bf16(x, y, n);
  if (n > 0) y[n - 1] ^= 1;
}
void BadOnlineSoftmaxBf16(const float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr,
                          uint16_t* p, int64_t ldp) {
  g_orig.online_softmax_bf16(s, lds, R, n, m, l, corr, p, ldp);
  if (R > 0 && n > 0) p[(R - 1) * ldp + n - 1] ^= 1;
}

}  // namespace

KernelTable WithFault(const KernelTable& table, const std::string& name) {
  g_orig = table;
  KernelTable k = table;
  if (name == "quantize_act") k.quantize_act = BadQuantizeAct;
  if (name == "gemv_q4") k.gemv_q4 = BadGemvQ4;
  if (name == "gemm_q4") k.gemm_q4 = BadGemmQ4;
  if (name == "gemv_q8") k.gemv_q8 = BadGemvQ8;
  if (name == "gemm_q8") k.gemm_q8 = BadGemmQ8;
  if (name == "gemv_q4x8") k.gemv_q4x8 = BadGemvX8<BlockQ4x8, &KernelTable::gemv_q4x8>;
  if (name == "gemm_q4x8") k.gemm_q4x8 = BadGemmX8<BlockQ4x8, &KernelTable::gemm_q4x8>;
  if (name == "gemv_q8x8") k.gemv_q8x8 = BadGemvX8<BlockQ8x8, &KernelTable::gemv_q8x8>;
  if (name == "gemm_q8x8") k.gemm_q8x8 = BadGemmX8<BlockQ8x8, &KernelTable::gemm_q8x8>;
  if (name == "gemv_f") k.gemv_f = BadGemvF;
  if (name == "gemm_f") k.gemm_f = BadGemmF;
  if (name == "gemm_acc_f") k.gemm_acc_f = BadGemmAccF;
  if (name == "f16_to_f32") k.f16_to_f32 = BadF16ToF32;
  if (name == "f32_to_f16") k.f32_to_f16 = BadF32ToF16;
  // Only tables that have them (kernels.h: null elsewhere).
  if (name == "gemm_bf16" && k.gemm_bf16) k.gemm_bf16 = BadGemmBf16;
  if (name == "f32_to_bf16" && k.f32_to_bf16) k.f32_to_bf16 = BadF32ToBf16;
  if (name == "gemm_acc_bf16" && k.gemm_acc_bf16) k.gemm_acc_bf16 = BadGemmAccBf16;
  if (name == "online_softmax_bf16" && k.online_softmax_bf16) k.online_softmax_bf16 = BadOnlineSoftmaxBf16;
  return k;
}

const std::vector<std::string>& VerifyKernelNames() {
  static const std::vector<std::string> names = {"quantize_act", "gemv_q4",    "gemm_q4",    "gemv_q8",
                                                 "gemm_q8",      "gemv_q4x8",  "gemm_q4x8",  "gemv_q8x8",
                                                 "gemm_q8x8",    "gemv_f",     "gemm_f",     "gemm_acc_f",
                                                 "f16_to_f32",   "f32_to_f16", "gemm_bf16",  "f32_to_bf16",
                                                 "gemm_acc_bf16", "online_softmax_bf16"};
  return names;
}

}  // namespace gemlet::cli
