// Scalar dequantizers of the ggml K-quant super-blocks that GGUF files use for some tensors
// (Q4_K_M files store token_embd / per_layer_token_embd as Q6_K). Written from the block
// definitions of ggml-common.h; 256 values per super-block. The converter turns them into f32
// and quantizes again under its plan (K-quants are not a gemlet storage type).
#pragma once

#include <cstdint>

namespace gemlet {

constexpr int kQK_K = 256;  // values per K-quant super-block

#pragma pack(push, 1)
// x = d·sc[j]·q − dmin·m[j] for sub-block j of 32 values; 6-bit sc/m packed in `scales`.
struct BlockQ4K {
  uint16_t d;             // f16 super-block scale of the scales
  uint16_t dmin;          // f16 super-block scale of the mins
  uint8_t scales[12];     // 8 × (6-bit scale, 6-bit min)
  uint8_t qs[kQK_K / 2];  // 4-bit quants: byte l of group g holds values 64g+l (lo), 64g+32+l (hi)
};
// As Q4_K with a fifth bit per value in qh.
struct BlockQ5K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];  // bit 2g of qh[l]: high bit of value 64g+l; bit 2g+1: of 64g+32+l
  uint8_t qs[kQK_K / 2];
};
// x = d·scales[i/16]·(q − 32), q 6 bits: low 4 in ql, high 2 in qh.
struct BlockQ6K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
#pragma pack(pop)
static_assert(sizeof(BlockQ4K) == 144);
static_assert(sizeof(BlockQ5K) == 176);
static_assert(sizeof(BlockQ6K) == 210);

// n is a multiple of 256.
void DequantizeRowQ4K(const BlockQ4K* x, float* y, int64_t n);
void DequantizeRowQ5K(const BlockQ5K* x, float* y, int64_t n);
void DequantizeRowQ6K(const BlockQ6K* x, float* y, int64_t n);

}  // namespace gemlet
