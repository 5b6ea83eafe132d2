// ForwardBatch: N sequences decoded in one pass give, row for row, exactly the logits of
// decoding each sequence alone with Forward(), whatever else shares the batch.
#include "model/gemma4_forward_batch.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/half.h"
#include "format/gemlet_writer.h"
#include "model/forward_steps.h"
#include "model/gemma4_tensors.h"
#include "ops/activation.h"
#include "ops/norm.h"

namespace gemlet::model {
namespace {

Gemma4Config TinyConfig() {
  std::ifstream in(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/config.json");
  auto c = Gemma4Config::FromJson(nlohmann::json::parse(in)["text_config"]);
  EXPECT_TRUE(c.ok());
  return *c;
}

// A random bf16 model, opened and unlinked (the mapping keeps it alive).
std::unique_ptr<GemletFile> RandomModel(const Gemma4Config& c) {
  const std::string path = ::testing::TempDir() + "/forward_batch." + std::to_string(::getpid()) + ".gemlet";
  auto w = GemletWriter::Create(path);
  EXPECT_TRUE(w.ok());
  std::mt19937 rng(11);
  for (const TensorSpec& s : ExpectedTensors(c)) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    const bool norm = s.cls == TensorClass::kNorm || s.cls == TensorClass::kScalar;
    std::normal_distribution<float> dist(0.0f, norm ? 0.1f : 1.0f / std::sqrt(static_cast<float>(s.shape.back())));
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = F32ToBf16(dist(rng) + (norm ? 1.0f : 0.0f));
    EXPECT_TRUE((*w)->AddTensor(s.name, TensorType::kBF16, s.shape, v.data(), v.size() * 2).ok());
  }
  nlohmann::json meta = nlohmann::json::object();
  meta["config"] = c.ToJson();
  (*w)->SetMetadata(meta);
  EXPECT_TRUE((*w)->Finish().ok());
  auto f = GemletFile::Open(path);
  ::unlink(path.c_str());
  EXPECT_TRUE(f.ok());
  return std::move(f).value();
}

// Contiguous K/V rows per layer, following the KvStore protocol.
class Store : public KvStore {
 public:
  Store(const Gemma4Config& c, int64_t limit) : c_(c), limit_(limit), k_(c.num_layers), v_(c.num_layers) {}
  int64_t size() const override { return n_; }
  Status Reserve(int64_t end) override {
    if (end > limit_) return OutOfRange("store limit " + std::to_string(limit_));
    for (int64_t l = 0; l < c_.num_layers; ++l) {
      k_[l].resize(end * c_.kv_dim(l));
      v_[l].resize(end * c_.kv_dim(l));
    }
    return Status::Ok();
  }
  int Past(int64_t l, ops::KvSegment out[2]) const override {
    if (n_ == 0) return 0;
    out[0] = ops::KvSegment{k_[l].data(), v_[l].data(), c_.kv_dim(l), 0, n_};
    return 1;
  }
  void Commit(int64_t l, const float* k, const float* v, int64_t T) override {
    std::copy(k, k + T * c_.kv_dim(l), k_[l].begin() + n_ * c_.kv_dim(l));
    std::copy(v, v + T * c_.kv_dim(l), v_[l].begin() + n_ * c_.kv_dim(l));
  }
  void Advance(int64_t T) override { n_ += T; }

 private:
  Gemma4Config c_;
  int64_t limit_, n_ = 0;
  std::vector<std::vector<float>> k_, v_;
};

TEST(ForwardBatchTest, RowsEqualSingleSequenceDecode) {
  const auto c = TinyConfig();
  auto file = RandomModel(c);
  auto m = Gemma4Model::Bind(*file);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const int64_t V = c.vocab_size;
  ThreadPool pool(2);
  const ForwardOptions opt{ops::MatMulMode::kExact, &pool};

  // Four sequences with different prompt lengths (two beyond the 16-token sliding window).
  const std::vector<int64_t> lengths = {1, 5, 20, 37};
  const int64_t S = static_cast<int64_t>(lengths.size());
  std::vector<std::vector<int32_t>> prompts(S);
  for (int64_t i = 0; i < S; ++i) {
    for (int64_t t = 0; t < lengths[i]; ++t) prompts[i].push_back(static_cast<int32_t>((t * 31 + i * 7 + 2) % V));
  }
  const int steps = 6;
  auto next_token = [&](int64_t seq, int step) { return static_cast<int32_t>((seq * 101 + step * 13 + 5) % V); };

  // Alone: prefill, then decode token by token with Forward.
  std::vector<std::vector<float>> alone(S);
  for (int64_t i = 0; i < S; ++i) {
    Store store(c, 64);
    ForwardScratch scratch;
    std::vector<float> lg(V);
    const std::vector<int64_t> last = {lengths[i] - 1};
    ASSERT_TRUE(Forward(**m, prompts[i], last, &store, &scratch, opt, lg.data()).ok());
    const std::vector<int64_t> row0 = {0};
    for (int step = 0; step < steps; ++step) {
      const int32_t tok = next_token(i, step);
      ASSERT_TRUE(Forward(**m, std::span<const int32_t>(&tok, 1), row0, &store, &scratch, opt, lg.data()).ok());
      alone[i].insert(alone[i].end(), lg.begin(), lg.end());
    }
  }

  // Batched: the same sequences decoded together; sequence 3 joins late and 0 leaves early,
  // so batch composition changes from step to step.
  std::vector<std::unique_ptr<Store>> stores;
  ForwardScratch prefill_scratch, batch_scratch;
  std::vector<float> lg(V);
  for (int64_t i = 0; i < S; ++i) {
    stores.push_back(std::make_unique<Store>(c, 64));
    const std::vector<int64_t> last = {lengths[i] - 1};
    ASSERT_TRUE(Forward(**m, prompts[i], last, stores[i].get(), &prefill_scratch, opt, lg.data()).ok());
  }
  std::vector<int> done(S, 0);
  for (int round = 0; round < steps + 2; ++round) {
    std::vector<int64_t> seqs;
    for (int64_t i = 0; i < S; ++i) {
      const bool active = done[i] < steps && !(i == 3 && round < 2) && !(i == 0 && round >= 3 && done[0] >= 3);
      if (active) seqs.push_back(i);
    }
    if (round >= 3 && done[0] < steps && seqs.empty()) seqs.push_back(0);
    if (seqs.empty()) continue;
    std::vector<int32_t> toks;
    std::vector<KvStore*> kvs;
    for (int64_t i : seqs) {
      toks.push_back(next_token(i, done[i]));
      kvs.push_back(stores[i].get());
    }
    std::vector<float> out(seqs.size() * V);
    ASSERT_TRUE(ForwardBatch(**m, toks, kvs, &batch_scratch, opt, out.data()).ok());
    for (size_t r = 0; r < seqs.size(); ++r) {
      const int64_t i = seqs[r];
      const float* want = alone[i].data() + done[i] * V;
      for (int64_t v = 0; v < V; ++v) {
        ASSERT_EQ(out[r * V + v], want[v]) << "sequence " << i << " step " << done[i] << " logit " << v;
      }
      done[i]++;
    }
  }
  // Whatever did not finish in the mixed rounds finishes alone in the batch path too.
  for (int64_t i = 0; i < S; ++i) {
    while (done[i] < steps) {
      const int32_t tok = next_token(i, done[i]);
      KvStore* kv = stores[i].get();
      std::vector<float> out(V);
      ASSERT_TRUE(ForwardBatch(**m, std::span<const int32_t>(&tok, 1), std::span<KvStore* const>(&kv, 1),
                               &batch_scratch, opt, out.data())
                      .ok());
      ASSERT_TRUE(std::equal(out.begin(), out.end(), alone[i].begin() + done[i] * V));
      done[i]++;
    }
  }
}

// The fused per-layer-input pass (forward_steps.h) gives the bits of the separate passes it
// replaced: scale by D^−½, RMSNorm, scale the token rows by √P, add, scale by 2^−½.
TEST(ForwardStepsTest, CombinePerLayerInputsEqualsSeparatePasses) {
  const Gemma4Config c = TinyConfig();
  auto file = RandomModel(c);
  auto m = Gemma4Model::Bind(*file);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const int64_t LP = c.num_layers * c.hidden_size_per_layer_input, P = c.hidden_size_per_layer_input;
  ThreadPool pool(2);
  for (int64_t n : {1, 3, 9}) {
    std::mt19937 rng(n);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    std::vector<float> ple(n * LP), tok(n * LP);
    for (auto& x : ple) x = dist(rng);
    for (auto& x : tok) x = dist(rng);
    std::vector<float> want = ple, t2 = tok;
    ops::Scale(want.data(), n * LP, static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.hidden_size))));
    ops::RmsNorm(want.data(), (*m)->per_layer_proj_norm().data(), n * c.num_layers, P,
                 static_cast<float>(c.rms_norm_eps), want.data());
    ops::Scale(t2.data(), n * LP, static_cast<float>(std::sqrt(static_cast<double>(P))));
    const float inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
    for (int64_t i = 0; i < n * LP; ++i) want[i] = (want[i] + t2[i]) * inv_sqrt2;
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> got = ple;
      CombinePerLayerInputs(**m, n, got.data(), tok.data(), p);
      EXPECT_EQ(got, want) << n;
    }
  }
}

TEST(ForwardBatchTest, ErrorsBeforeAnyWork) {
  const auto c = TinyConfig();
  auto file = RandomModel(c);
  auto m = Gemma4Model::Bind(*file);
  ASSERT_TRUE(m.ok());
  Store a(c, 8), b(c, 1);
  ForwardScratch scratch;
  std::vector<float> out(2 * c.vocab_size);
  const int32_t one[2] = {5, 6};
  std::vector<KvStore*> kvs = {&a, &b};
  ASSERT_TRUE(ForwardBatch(**m, one, kvs, &scratch, {}, out.data()).ok());
  EXPECT_EQ(a.size(), 1);
  EXPECT_EQ(b.size(), 1);
  // b is full now: the step fails and neither store moves.
  Status st = ForwardBatch(**m, one, kvs, &scratch, {}, out.data());
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find("batch row 1"), std::string::npos) << st.message();
  EXPECT_EQ(a.size(), 1);
  const int32_t bad[2] = {5, static_cast<int32_t>(c.vocab_size)};
  EXPECT_EQ(ForwardBatch(**m, bad, kvs, &scratch, {}, out.data()).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace gemlet::model
