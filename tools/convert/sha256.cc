#include "tools/convert/sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__) && (!defined(__clang__) || defined(__ARM_FEATURE_SHA2))
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace gemlet::convert {

namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// Hardware SHA-256 (x86 SHA extensions, Armv8 SHA2 instructions): the same compression function,
// four rounds per step, the message schedule in 4-word groups M_j (j >= 4):
//   M_j = W[t-16] + σ0(W[t-15]) + W[t-7] + σ1(W[t-2]) for the four t of group j.
// Each returns false if the CPU lacks the instructions.
#if defined(__x86_64__)
__attribute__((target("sha,sse4.1"))) void BlocksShaNi(uint32_t h[8], const uint8_t* p, size_t n) {
  const __m128i kBswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);     // CDAB
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);  // EFGH
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                                                        // ABEF
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);                                                             // CDGH
  for (; n > 0; --n, p += 64) {
    const __m128i abef = s0, cdgh = s1;
    __m128i m[4];
    for (int j = 0; j < 16; ++j) {
      if (j < 4) {
        m[j] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * j)), kBswap);
      } else {
        __m128i t = _mm_sha256msg1_epu32(m[j % 4], m[(j - 3) % 4]);
        t = _mm_add_epi32(t, _mm_alignr_epi8(m[(j - 1) % 4], m[(j - 2) % 4], 4));
        m[j % 4] = _mm_sha256msg2_epu32(t, m[(j - 1) % 4]);
      }
      __m128i msg = _mm_add_epi32(m[j % 4], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * j)));
      s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(msg, 0x0E));
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);                                                 // FEBA
  s1 = _mm_shuffle_epi32(s1, 0xB1);                                                  // DCHG
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(tmp, s1, 0xF0));   // DCBA
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(s1, tmp, 8));  // HGFE
}

bool HasHardwareSha() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool sha = (b >> 29) & 1;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return sha && ((c >> 19) & 1) && ((c >> 9) & 1);  // SSE4.1, SSSE3
}
bool HardwareBlocks(uint32_t h[8], const uint8_t* p, size_t n) {
  static const bool ok = HasHardwareSha();
  if (!ok || Sha256::force_portable) return false;
  BlocksShaNi(h, p, n);
  return true;
}
#elif defined(__aarch64__) && (!defined(__clang__) || defined(__ARM_FEATURE_SHA2))
// GCC enables the SHA2 intrinsics per function; clang (14) only for a whole build with +sha2.
__attribute__((target("+crypto"))) void BlocksArmSha2(uint32_t h[8], const uint8_t* p, size_t n) {
  uint32x4_t s0 = vld1q_u32(h), s1 = vld1q_u32(h + 4);
  for (; n > 0; --n, p += 64) {
    const uint32x4_t abcd = s0, efgh = s1;
    uint32x4_t m[4];
    for (int j = 0; j < 16; ++j) {
      if (j < 4) {
        m[j] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * j)));
      } else {
        m[j % 4] = vsha256su1q_u32(vsha256su0q_u32(m[j % 4], m[(j - 3) % 4]), m[(j - 2) % 4], m[(j - 1) % 4]);
      }
      const uint32x4_t msg = vaddq_u32(m[j % 4], vld1q_u32(kK + 4 * j));
      const uint32x4_t prev = s0;
      s0 = vsha256hq_u32(s0, s1, msg);
      s1 = vsha256h2q_u32(s1, prev, msg);
    }
    s0 = vaddq_u32(s0, abcd);
    s1 = vaddq_u32(s1, efgh);
  }
  vst1q_u32(h, s0);
  vst1q_u32(h + 4, s1);
}
bool HardwareBlocks(uint32_t h[8], const uint8_t* p, size_t n) {
  static const bool ok = (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
  if (!ok || Sha256::force_portable) return false;
  BlocksArmSha2(h, p, n);
  return true;
}
#else
bool HardwareBlocks(uint32_t*, const uint8_t*, size_t) { return false; }
#endif

}  // namespace

bool Sha256::force_portable = false;

bool Sha256::HardwareAccelerated() {
  uint32_t h[8] = {};
  static const uint8_t block[64] = {};
  return HardwareBlocks(h, block, 1);
}

void Sha256::Reset() {
  static constexpr uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::memcpy(h_, kInit, sizeof(h_));
  buf_len_ = 0;
  total_ = 0;
}

void Sha256::Block(const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) | (uint32_t{p[4 * i + 2]} << 8) |
           uint32_t{p[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t s1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    const uint32_t ch = (e & f) ^ (~e & g);
    const uint32_t t1 = h + s1 + ch + kK[i] + w[i];
    const uint32_t s0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}

void Sha256::Update(const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_ += n;
  if (buf_len_ > 0) {
    const size_t take = std::min(n, 64 - buf_len_);
    std::memcpy(buf_ + buf_len_, p, take);
    buf_len_ += take;
    p += take;
    n -= take;
    if (buf_len_ < 64) return;
    if (!HardwareBlocks(h_, buf_, 1)) Block(buf_);
    buf_len_ = 0;
  }
  if (n >= 64 && HardwareBlocks(h_, p, n / 64)) {
    p += n / 64 * 64;
    n %= 64;
  }
  for (; n >= 64; n -= 64, p += 64) Block(p);
  std::memcpy(buf_, p, n);
  buf_len_ = n;
}

std::array<uint8_t, 32> Sha256::Finish() {
  const uint64_t bits = total_ * 8;
  const uint8_t pad = 0x80;
  Update(&pad, 1);
  const uint8_t zero[64] = {};
  Update(zero, (buf_len_ <= 56 ? 56 - buf_len_ : 120 - buf_len_));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  Update(len, 8);
  std::array<uint8_t, 32> out;
  for (int i = 0; i < 8; ++i) {
    out[4 * i] = static_cast<uint8_t>(h_[i] >> 24);
    out[4 * i + 1] = static_cast<uint8_t>(h_[i] >> 16);
    out[4 * i + 2] = static_cast<uint8_t>(h_[i] >> 8);
    out[4 * i + 3] = static_cast<uint8_t>(h_[i]);
  }
  return out;
}

std::string Sha256::FinishHex() {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : Finish()) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data.data(), data.size());
  return h.FinishHex();
}

Result<std::string> Sha256File(const std::string& path, const std::atomic<bool>* cancel) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path + ": cannot open: " + std::strerror(errno));
  Sha256 h;
  std::vector<uint8_t> buf(4 << 20);
  uint64_t off = 0;
  for (;;) {
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      ::close(fd);
      return Cancelled(path + ": hashing cancelled");
    }
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return IoError(path + ": read failed: " + std::strerror(e));
    }
    if (n == 0) break;
    h.Update(buf.data(), static_cast<size_t>(n));
    off += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return h.FinishHex();
}

}  // namespace gemlet::convert
