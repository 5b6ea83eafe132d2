// A GGUF with K-quant tensors (as Q4_K_M files have: Q6_K embeddings, Q4_K/Q5_K weights) converts:
// K-quants have no gemlet type, so they are dequantized and quantized under the plan's type for
// their class and reported as requantized; the stored blocks equal the reference quantizer
// applied to the dequantized values, row for row.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "format/gguf_kquants.h"
#include "format/gguf_test_util.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"
#include "model/gemma4_config.h"
#include "model/gemma4_tensors.h"
#include "tools/convert/convert.h"

namespace gemlet {
namespace convert_kquant_test {

namespace fs = std::filesystem;

// A 2-layer gemma4 model (sliding, full) whose 256-wide rows can hold K-quant super-blocks.
model::Gemma4Config Config() {
  model::Gemma4Config c;
  c.vocab_size = c.vocab_size_per_layer_input = 8;
  c.hidden_size = 256;
  c.num_layers = 2;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 32;
  c.global_head_dim = 64;
  c.intermediate_size = 256;
  c.hidden_size_per_layer_input = 32;
  c.sliding_window = 16;
  c.layer_types = {model::AttnType::kSliding, model::AttnType::kFull};
  return c;
}

uint32_t Lcg(uint32_t& s) { return s = s * 1664525u + 1013904223u; }

// Blocks with small, finite f16 scales and pseudo-random quants.
std::string KBlocks(uint32_t type, int64_t n_blocks, uint32_t seed) {
  const int bytes = type == 12 ? 144 : type == 13 ? 176 : 210;
  std::string s(static_cast<size_t>(n_blocks * bytes), '\0');
  for (char& c : s) c = static_cast<char>(Lcg(seed) >> 24);
  for (int64_t b = 0; b < n_blocks; ++b) {
    char* p = &s[static_cast<size_t>(b * bytes)];
    const uint16_t d = F32ToF16(0.01f), dmin = F32ToF16(0.02f);
    if (type == 14) {
      std::memcpy(p + 208, &d, 2);  // BlockQ6K::d is last
    } else {
      std::memcpy(p, &d, 2);
      std::memcpy(p + 2, &dmin, 2);
    }
  }
  return s;
}

std::string F32s(int64_t n, uint32_t seed) {
  std::string s(static_cast<size_t>(n * 4), '\0');
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(static_cast<int32_t>(Lcg(seed) >> 8) - (1 << 23)) / (1 << 23);
    std::memcpy(&s[static_cast<size_t>(i * 4)], &v, 4);
  }
  return s;
}

std::string WriteGguf(const std::string& path) {
  const model::Gemma4Config c = Config();
  testing::GgufBuilder b;
  b.Str("general.architecture", "gemma4")
      .U32("gemma4.block_count", 2)
      .U32("gemma4.context_length", 131072)
      .U32("gemma4.embedding_length", 256)
      .U32("gemma4.feed_forward_length", 256)
      .U32("gemma4.attention.head_count", 2)
      .U32("gemma4.attention.head_count_kv", 1)
      .F32("gemma4.rope.freq_base", 1e6f)
      .F32("gemma4.rope.freq_base_swa", 1e4f)
      .F32("gemma4.attention.layer_norm_rms_epsilon", 1e-6f)
      .U32("gemma4.attention.key_length", 64)
      .U32("gemma4.attention.value_length", 64)
      .U32("gemma4.attention.key_length_swa", 32)
      .U32("gemma4.attention.value_length_swa", 32)
      .F32("gemma4.final_logit_softcapping", 30.0f)
      .U32("gemma4.attention.sliding_window", 16)
      .U32("gemma4.embedding_length_per_layer_input", 32)
      .Bools("gemma4.attention.sliding_window_pattern", {true, false})
      .U32("gemma4.rope.dimension_count", 64)
      .U32("gemma4.rope.dimension_count_swa", 32)
      .Str("tokenizer.ggml.model", "gemma4")
      .Strings("tokenizer.ggml.tokens", {"<pad>", "<eos>", "<bos>", "<unk>", "a", "b", "<turn|>", "ab"})
      .Strings("tokenizer.ggml.merges", {"a b"})
      .U32("tokenizer.ggml.bos_token_id", 2)
      .U32("tokenizer.ggml.eos_token_id", 1);
  std::vector<float> freqs(32, 1e30f);
  for (int i = 0; i < 8; ++i) freqs[i] = 1.0f;
  std::string fr(128, '\0');
  std::memcpy(fr.data(), freqs.data(), 128);
  b.Tensor("rope_freqs.weight", {32}, 0, fr);
  uint32_t seed = 1;
  for (const auto& spec : model::ExpectedTensors(c)) {
    const std::vector<int64_t> ne(spec.shape.rbegin(), spec.shape.rend());
    const int64_t cols = spec.shape.back(), rows = spec.shape.size() == 2 ? spec.shape[0] : 1;
    uint32_t type = 0;  // F32 unless the rows fit super-blocks
    if (cols % 256 == 0) {
      if (spec.cls == model::TensorClass::kTokenEmbedding) type = 14;  // Q6_K
      if (spec.cls == model::TensorClass::kAttention) type = 12;       // Q4_K
      if (spec.cls == model::TensorClass::kFeedForward) type = 13;     // Q5_K
    }
    b.Tensor(spec.gguf_name, ne, type,
             type ? KBlocks(type, rows * cols / 256, seed++) : F32s(rows * cols, seed++));
  }
  EXPECT_TRUE(WriteStringToFile(path, b.Build()).ok());
  return path;
}

std::vector<float> Dequant(const GgufTensorInfo& t) {
  std::vector<float> x(static_cast<size_t>(t.numel()));
  switch (t.ggml_type) {
    case 12:
      DequantizeRowQ4K(reinterpret_cast<const BlockQ4K*>(t.data), x.data(), t.numel());
      break;
    case 13:
      DequantizeRowQ5K(reinterpret_cast<const BlockQ5K*>(t.data), x.data(), t.numel());
      break;
    case 14:
      DequantizeRowQ6K(reinterpret_cast<const BlockQ6K*>(t.data), x.data(), t.numel());
      break;
    default:
      std::memcpy(x.data(), t.data, x.size() * 4);
  }
  return x;
}

TEST(ConvertKQuant, RequantizedUnderThePlan) {
  const std::string dir = ::testing::TempDir() + "/convert_kquant." + std::to_string(::getpid());
  fs::create_directories(dir);
  const std::string src = WriteGguf(dir + "/k.gguf");
  auto gguf = GgufFile::Open(src);
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  for (const char* plan : {"keep", "q8"}) {
    SCOPED_TRACE(plan);
    convert::ConvertOptions o;
    o.src = src;
    o.out = dir + "/" + plan + ".gemlet";
    o.plan = plan;
    o.progress = false;
    auto r = convert::Convert(o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto g = GemletFile::Open(o.out);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    int k_quants = 0;
    for (const auto& spec : model::ExpectedTensors(Config())) {
      const GgufTensorInfo* s = (*gguf)->FindTensor(spec.gguf_name);
      const TensorView* t = (*g)->Find(spec.name);
      ASSERT_TRUE(s && t) << spec.name;
      const auto it = std::find_if(r->tensors.begin(), r->tensors.end(),
                                   [&](const auto& ct) { return ct.name == spec.name; });
      ASSERT_NE(it, r->tensors.end());
      const bool is_k = s->ggml_type >= 12 && s->ggml_type <= 14;
      EXPECT_EQ(it->requantized, is_k) << spec.name;
      EXPECT_EQ(it->source_type, s->type_name());
      const std::vector<float> x = Dequant(*s);
      if (!is_k && std::string(plan) == "keep") {
        ASSERT_EQ(t->type, TensorType::kF32) << spec.name;
        EXPECT_EQ(std::memcmp(t->data, x.data(), t->nbytes), 0) << spec.name;
        continue;
      }
      if (t->type == TensorType::kQ4 || t->type == TensorType::kQ8) {
        std::vector<uint8_t> want(t->nbytes);
        if (t->type == TensorType::kQ4) {
          kernels::QuantizeRowQ4Ref(x.data(), reinterpret_cast<BlockQ4*>(want.data()),
                                    static_cast<int64_t>(x.size()));
        } else {
          kernels::QuantizeRowQ8Ref(x.data(), reinterpret_cast<BlockQ8*>(want.data()),
                                    static_cast<int64_t>(x.size()));
        }
        std::vector<uint8_t> buf;  // q4 / q8 matrices may be stored interleaved (kQ4x8 / kQ8x8)
        EXPECT_EQ(std::memcmp(kernels::RowMajorBytes(t->data, t->type, t->layout, t->rows(), t->cols(), &buf),
                              want.data(), want.size()),
                  0)
            << spec.name;
      }
      if (is_k) {
        ++k_quants;
        // keep: the default plan's type (q4 for embeddings, attention and MLP); q8: q8.
        EXPECT_EQ(t->type, std::string(plan) == "keep" ? TensorType::kQ4 : TensorType::kQ8) << spec.name;
      }
    }
    EXPECT_EQ(k_quants, 1 + 6 + 6);  // token_embd; q, k, v and gate, up, down of both layers
  }
}

}  // namespace convert_kquant_test
}  // namespace gemlet
