// Binding a .gemlet to the model (type/shape checks with clear errors) and the forward pass
// on a small random model through a minimal in-test KV store: decode and chunked prefill
// equal one prefill, rows are computed only where asked, bad ids fail before any work.
#include "model/gemma4_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <vector>

#include "base/half.h"
#include "format/gemlet_writer.h"
#include "model/gemma4_forward.h"
#include "model/gemma4_tensors.h"
#include "model/model_test_util.h"

namespace gemlet::model {
namespace gemma4_model_test {

// Writes a random model; `edit` may change a tensor's name or shape before it is written
// (return false to drop the tensor).
std::string WriteModel(const Gemma4Config& c, const std::string& name,
                       const std::function<bool(TensorSpec&)>& edit = nullptr, bool with_config = true) {
  const std::string path = ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid()) + ".gemlet";
  auto w = GemletWriter::Create(path);
  EXPECT_TRUE(w.ok());
  std::mt19937 rng(5);
  for (TensorSpec s : ExpectedTensors(c)) {
    if (edit && !edit(s)) continue;
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    const int64_t fan_in = s.shape.back();
    std::normal_distribution<float> dist(0.0f, s.cls == TensorClass::kNorm || s.cls == TensorClass::kScalar
                                                   ? 0.1f
                                                   : 1.0f / std::sqrt(static_cast<float>(fan_in)));
    std::vector<uint16_t> v(n);  // bf16, like a real checkpoint
    for (auto& x : v) {
      float f = dist(rng);
      if (s.cls == TensorClass::kNorm || s.cls == TensorClass::kScalar) f += 1.0f;
      x = F32ToBf16(f);
    }
    EXPECT_TRUE((*w)->AddTensor(s.name, TensorType::kBF16, s.shape, v.data(), v.size() * 2).ok());
  }
  nlohmann::json meta = nlohmann::json::object();
  meta["config"] = c.ToJson();
  if (!with_config) meta["config"].erase("hidden_size");
  (*w)->SetMetadata(meta);
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

// Writes the model and opens it; the file is unlinked at once (the mapping keeps it alive).
Result<std::unique_ptr<GemletFile>> OpenModel(const Gemma4Config& c, const std::string& name,
                                              const std::function<bool(TensorSpec&)>& edit = nullptr,
                                              bool with_config = true) {
  const std::string path = WriteModel(c, name, edit, with_config);
  auto f = GemletFile::Open(path);
  ::unlink(path.c_str());
  return f;
}

using SimpleStore = ContiguousStore;

TEST(Gemma4ModelTest, BindsEveryTensor) {
  const auto c = TinyConfig();
  auto f = OpenModel(c, "bind_ok");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto m = Gemma4Model::Bind(**f);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->token_embd().rows, 512);
  EXPECT_EQ((*m)->token_embd().cols, 64);
  EXPECT_EQ((*m)->token_embd().type, TensorType::kBF16);
  EXPECT_EQ((*m)->per_layer_token_embd().cols, 7 * 32);
  EXPECT_TRUE((*m)->layer(2).attn_k.valid());
  EXPECT_FALSE((*m)->layer(4).attn_k.valid()) << "KV-shared layers have no K projection";
  EXPECT_TRUE((*m)->layer(4).k_norm.empty());
  EXPECT_EQ((*m)->layer(5).ffn_gate.rows, 64) << "double-wide MLP";
  EXPECT_EQ((*m)->layer(3).q_norm.size(), 64u);
  EXPECT_GT((*m)->layer(0).layer_scalar, 0.5f);
  // Full layers: 8 of 32 pairs rotate (proportional RoPE), sliding: all 16.
  const auto& rf = (*m)->rope_full();
  ASSERT_EQ(rf.size(), 32u);
  EXPECT_GT(rf[7], 0.0);
  EXPECT_EQ(rf[8], 0.0);
  EXPECT_EQ((*m)->rope_sliding().size(), 16u);
  // A decode step reads every matrix (here: all stored tensors but the per-layer-embedding
  // table and the norms / scalars) once, one row of each embedding table, and the norms as
  // bound (f32).
  const ops::Weight& ple = (*m)->per_layer_token_embd();
  uint64_t norm_floats = (*m)->output_norm().size() + (*m)->per_layer_proj_norm().size(), stored_small = 0;
  for (const auto& spec : ExpectedTensors(c)) {
    if (spec.cls == TensorClass::kNorm || spec.cls == TensorClass::kScalar) {
      stored_small += (*f)->Find(spec.name)->nbytes;
    }
  }
  for (int64_t l = 0; l < 7; ++l) {
    const Gemma4Layer& L = (*m)->layer(l);
    norm_floats += L.attn_norm.size() + L.q_norm.size() + L.k_norm.size() + L.post_attention_norm.size() +
                   L.ffn_norm.size() + L.post_ffw_norm.size() + L.post_norm.size();
  }
  EXPECT_EQ((*m)->decode_bytes_per_token(), (*m)->weight_bytes() - stored_small - ple.row_bytes * ple.rows +
                                                ple.row_bytes + (*m)->token_embd().row_bytes + 4 * norm_floats);
}

// The multiply-adds per token, from the config's shapes alone: per layer q and o (H·hd·D
// each), K and V where the layer computes them (Hkv·hd·D each), gate, up and down (3·I·D, I
// doubled on the double-wide layers), the PLE gate and projection (2·P·D); beside them the
// PLE model projection (L·P·D) and, for a decode step, the LM head (V·D). A prompt row runs
// the layers before the first KV-shared one.
TEST(Gemma4ModelTest, MacsPerTokenFollowTheShapes) {
  const auto c = TinyConfig();
  auto f = OpenModel(c, "macs");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto m = Gemma4Model::Bind(**f);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const uint64_t D = c.hidden_size, P = c.hidden_size_per_layer_input;
  auto layer = [&](int64_t l) {
    const uint64_t hd = c.head_dim_of(l);
    uint64_t n = 2 * c.num_heads * hd * D + 3 * c.ffn_dim(l) * D + 2 * P * D;
    if (c.has_kv(l)) n += 2 * c.num_kv_heads * hd * D;
    return n;
  };
  uint64_t prompt = c.num_layers * P * D, decode = prompt + c.vocab_size * D;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    decode += layer(l);
    if (l < c.first_kv_shared()) prompt += layer(l);
  }
  EXPECT_EQ((*m)->decode_macs_per_token(), decode);
  EXPECT_EQ((*m)->prompt_macs_per_token(), prompt);
  EXPECT_LT(prompt, decode);
}

TEST(Gemma4ModelTest, ErrorsNameTheTensorAndShapes) {
  const auto c = TinyConfig();
  {
    auto f = OpenModel(c, "bind_missing", [](TensorSpec& s) { return s.name != "blk.5.ffn_up"; });
    ASSERT_TRUE(f.ok());
    auto m = Gemma4Model::Bind(**f);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), ErrorCode::kNotFound);
    EXPECT_NE(m.status().message().find("blk.5.ffn_up"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("bind_missing"), std::string::npos) << m.status().message();
  }
  {
    auto f = OpenModel(c, "bind_shape", [](TensorSpec& s) {
      if (s.name == "blk.1.attn_q") s.shape = {32, 64};
      return true;
    });
    ASSERT_TRUE(f.ok());
    auto m = Gemma4Model::Bind(**f);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("blk.1.attn_q"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("[32, 64]"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("[64, 64]"), std::string::npos) << m.status().message();
  }
  {
    auto f = OpenModel(c, "bind_badconfig", nullptr, /*with_config=*/false);
    ASSERT_TRUE(f.ok());
    auto m = Gemma4Model::Bind(**f);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("hidden_size"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("bind_badconfig"), std::string::npos) << m.status().message();
  }
}

TEST(Gemma4ModelTest, DecodeAndChunksEqualPrefillAndOnlyAskedRows) {
  const auto c = TinyConfig();
  auto f = OpenModel(c, "forward");
  ASSERT_TRUE(f.ok());
  auto m = Gemma4Model::Bind(**f);
  ASSERT_TRUE(m.ok());
  const int64_t V = c.vocab_size;
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back((i * 37 + 2) % 512);
  const int64_t T = static_cast<int64_t>(tokens.size());
  ThreadPool pool(2);

  auto run = [&](int64_t chunk, ThreadPool* p) {
    SimpleStore store(c, 64);
    ForwardScratch scratch;
    std::vector<float> all(T * V);
    for (int64_t b = 0; b < T; b += chunk) {
      const int64_t n = std::min(chunk, T - b);
      std::vector<int64_t> rows(n);
      for (int64_t i = 0; i < n; ++i) rows[i] = i;
      Status st = Forward(**m, std::span<const int32_t>(tokens).subspan(b, n), rows, &store, &scratch,
                          ForwardOptions{ops::MatMulMode::kExact, p}, all.data() + b * V);
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
    EXPECT_EQ(store.size(), T);
    return all;
  };
  const auto prefill = run(T, nullptr);
  for (float x : prefill) ASSERT_TRUE(std::isfinite(x) && std::abs(x) < 30.0f);
  EXPECT_EQ(run(1, nullptr), prefill);
  EXPECT_EQ(run(7, &pool), prefill);

  // Only row 5 and the last row: the same values as in the full run.
  SimpleStore store(c, 64);
  ForwardScratch scratch;
  const std::vector<int64_t> rows = {5, T - 1};
  std::vector<float> two(2 * V);
  ASSERT_TRUE(Forward(**m, tokens, rows, &store, &scratch, {}, two.data()).ok());
  EXPECT_TRUE(std::equal(two.begin(), two.begin() + V, prefill.begin() + 5 * V));
  EXPECT_TRUE(std::equal(two.begin() + V, two.end(), prefill.begin() + (T - 1) * V));
  EXPECT_EQ(store.commits_, 4) << "one commit per cached layer (0–3), none for shared layers";
}

TEST(Gemma4ModelTest, BadTokenOrLimitFailsBeforeAnyWork) {
  const auto c = TinyConfig();
  auto f = OpenModel(c, "forward_bad");
  ASSERT_TRUE(f.ok());
  auto m = Gemma4Model::Bind(**f);
  ASSERT_TRUE(m.ok());
  SimpleStore store(c, 4);
  ForwardScratch scratch;
  std::vector<float> logits(512);
  const std::vector<int64_t> last = {1};
  Status st = Forward(**m, std::vector<int32_t>{2, 512}, last, &store, &scratch, {}, logits.data());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("512"), std::string::npos);
  st = Forward(**m, std::vector<int32_t>{2, -3}, last, &store, &scratch, {}, logits.data());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  st = Forward(**m, std::vector<int32_t>{2, 3, 4, 5, 6}, {}, &store, &scratch, {}, nullptr);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(store.size(), 0);
  EXPECT_EQ(store.commits_, 0);
}

}  // namespace gemma4_model_test
}  // namespace gemlet::model
