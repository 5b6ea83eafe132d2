// The K-quant dequantizers against blocks that llama.cpp's own quantizer wrote: the GGUFs in
// tests/data/kquants/ were made by `llama-quantize --pure` (Q4_K, Q5_K, Q6_K) from one small
// f32 GGUF, and the .npy beside them hold gguf-py's dequantization of every tensor (checked
// equal to ggml's dequantize_row_*; tests/data/kquants/README.md says how). Every value must
// match bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_kquants.h"
#include "format/gguf_types.h"
#include "format/npy.h"

namespace gemlet {
namespace gguf_kquants_llama_test {

const std::string kDir = std::string(GEMLET_SOURCE_DIR) + "/tests/data/kquants/";

// Rows of a K-quant tensor dequantized with the project's scalar code.
std::vector<float> Dequantize(const GgufTensorInfo& t) {
  std::vector<float> y(static_cast<size_t>(t.numel()));
  const int64_t cols = t.cols();
  int block_elems = 0, block_bytes = 0;
  EXPECT_TRUE(GgmlTypeSize(t.ggml_type, &block_elems, &block_bytes));
  const size_t row_bytes = static_cast<size_t>(cols / block_elems * block_bytes);
  for (int64_t r = 0; r < t.rows(); ++r) {
    const uint8_t* src = t.data + r * row_bytes;
    float* dst = y.data() + r * cols;
    switch (static_cast<GgmlType>(t.ggml_type)) {
      case GgmlType::kQ4_K:
        DequantizeRowQ4K(reinterpret_cast<const BlockQ4K*>(src), dst, cols);
        break;
      case GgmlType::kQ5_K:
        DequantizeRowQ5K(reinterpret_cast<const BlockQ5K*>(src), dst, cols);
        break;
      case GgmlType::kQ6_K:
        DequantizeRowQ6K(reinterpret_cast<const BlockQ6K*>(src), dst, cols);
        break;
      default:
        ADD_FAILURE() << t.name << " has type " << t.type_name();
        return {};
    }
  }
  return y;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void CheckFile(const std::string& stem, GgmlType type) {
  auto file = GgufFile::Open(kDir + stem + ".gguf");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  // The three 2-D tensors of the source model (rows of 512, 256 and 768 values); --pure keeps
  // every one at the requested type.
  const char* kNames[] = {"blk.0.attn_q.weight", "blk.0.ffn_up.weight", "token_embd.weight"};
  int64_t compared = 0;
  for (const char* name : kNames) {
    SCOPED_TRACE(stem + " " + name);
    const GgufTensorInfo* t = (*file)->FindTensor(name);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->ggml_type, static_cast<uint32_t>(type)) << t->type_name();
    auto want = ReadNpy(kDir + stem + "." + name + ".npy");
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ASSERT_EQ(want->shape, t->shape);
    const std::vector<float> got = Dequantize(*t);
    ASSERT_EQ(got.size(), want->data.size());
    int64_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (Bits(got[i]) != Bits(want->data[i])) {
        if (++mismatches <= 5) {
          ADD_FAILURE() << "value " << i << " (row " << i / t->cols() << ", column "
                        << i % t->cols() << "): " << got[i] << " != llama.cpp's " << want->data[i];
        }
      }
    }
    EXPECT_EQ(mismatches, 0) << "of " << got.size() << " values";
    compared += static_cast<int64_t>(got.size());
  }
  EXPECT_EQ(compared, 16 * 512 + 8 * 256 + 4 * 768);
}

TEST(KQuantsLlama, Q4KMatchesLlamaCpp) { CheckFile("model-q4_k", GgmlType::kQ4_K); }
TEST(KQuantsLlama, Q5KMatchesLlamaCpp) { CheckFile("model-q5_k", GgmlType::kQ5_K); }
TEST(KQuantsLlama, Q6KMatchesLlamaCpp) { CheckFile("model-q6_k", GgmlType::kQ6_K); }

}  // namespace gguf_kquants_llama_test
}  // namespace gemlet
