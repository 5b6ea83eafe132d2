// The batched forward pass: a row's outputs do not depend on what shares its batch.
#include "model/gemma4_forward.h"

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
#include "model/model_test_util.h"
#include "ops/activation.h"
#include "ops/embedding.h"
#include "ops/norm.h"

namespace gemlet::model {
namespace gemma4_forward_test {

// A random bf16 model, opened and unlinked (the mapping keeps it alive).
std::unique_ptr<GemletFile> RandomModel(const Gemma4Config& c) {
  const std::string path = ::testing::TempDir() + "/forward." + std::to_string(::getpid()) + ".gemlet";
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

using Store = ContiguousStore;

// Logits [V] and final hidden state [D] of one row.
struct RowOut {
  std::vector<float> logits, hidden;
};

// A sequence's token stream fed one token per forward pass, alone: the outputs after every
// token. The reference the batched runs must reproduce bit for bit.
std::vector<RowOut> Alone(const Gemma4Model& m, const std::vector<int32_t>& tokens, TensorType type,
                          const ForwardOptions& opt) {
  const Gemma4Config& c = m.config();
  Store store(c, 128, type);
  ForwardScratch scratch;
  std::vector<RowOut> out;
  for (int32_t t : tokens) {
    RowOut r{std::vector<float>(c.vocab_size), std::vector<float>(c.hidden_size)};
    const BatchSequence seq{&store, 1};
    const int64_t row0 = 0;
    Batch b{.tokens = std::span<const int32_t>(&t, 1), .seqs = std::span<const BatchSequence>(&seq, 1),
            .out_rows = std::span<const int64_t>(&row0, 1), .logits = r.logits.data(), .hidden = r.hidden.data()};
    EXPECT_TRUE(Forward(m, b, &scratch, opt).ok());
    out.push_back(std::move(r));
  }
  return out;
}

// One part of a batch in a schedule: the next `n` tokens of sequence `seq`, with or without
// outputs for its rows.
struct Part {
  int seq;
  int64_t n;
  bool outputs = true;
};

// Runs `schedule` (a list of batches) over the sequences' token streams in one set of stores
// and one scratch, and checks every output row against `ref` (Alone) bit for bit.
void RunSchedule(const Gemma4Model& m, const std::vector<std::vector<int32_t>>& streams,
                 const std::vector<TensorType>& types, const std::vector<std::vector<RowOut>>& ref,
                 const std::vector<std::vector<Part>>& schedule, const ForwardOptions& opt, const std::string& what) {
  const Gemma4Config& c = m.config();
  const int64_t V = c.vocab_size, D = c.hidden_size;
  std::vector<std::unique_ptr<Store>> stores;
  for (size_t i = 0; i < streams.size(); ++i) stores.push_back(std::make_unique<Store>(c, 128, types[i]));
  std::vector<int64_t> fed(streams.size(), 0);
  ForwardScratch scratch;
  for (size_t step = 0; step < schedule.size(); ++step) {
    std::vector<int32_t> tokens;
    std::vector<BatchSequence> seqs;
    std::vector<int64_t> out_rows;
    std::vector<std::pair<int, int64_t>> out_of;  // (sequence, position) of each output row
    for (const Part& p : schedule[step]) {
      seqs.push_back({stores[p.seq].get(), p.n});
      for (int64_t t = 0; t < p.n; ++t) {
        if (p.outputs) {
          out_rows.push_back(static_cast<int64_t>(tokens.size()));
          out_of.emplace_back(p.seq, fed[p.seq] + t);
        }
        tokens.push_back(streams[p.seq][fed[p.seq] + t]);
      }
      fed[p.seq] += p.n;
    }
    std::vector<float> logits(out_rows.size() * V), hidden(out_rows.size() * D);
    Batch b{.tokens = tokens, .seqs = seqs, .out_rows = out_rows, .logits = logits.data(), .hidden = hidden.data()};
    ASSERT_TRUE(Forward(m, b, &scratch, opt).ok()) << what << " step " << step;
    for (size_t i = 0; i < out_of.size(); ++i) {
      const RowOut& want = ref[out_of[i].first][out_of[i].second];
      ASSERT_TRUE(std::equal(want.logits.begin(), want.logits.end(), logits.begin() + i * V))
          << what << ": logits of sequence " << out_of[i].first << " position " << out_of[i].second;
      ASSERT_TRUE(std::equal(want.hidden.begin(), want.hidden.end(), hidden.begin() + i * D))
          << what << ": hidden state of sequence " << out_of[i].first << " position " << out_of[i].second;
    }
  }
  for (size_t i = 0; i < streams.size(); ++i) EXPECT_EQ(stores[i]->size(), fed[i]) << what;
}

// A row's outputs are the same, bit for bit, whatever shares its batch: alone; beside other
// sequences at other positions; beside a prefill chunk (with and without outputs); as one of
// K rows of its own sequence (a verify); in sequences whose stores keep f32, f16 and q8 rows
// side by side (a q8 store's keys are scored by int8 dot products, from the store and from
// the batch's own rows alike). Sequence lengths pass the 16-token sliding window.
TEST(ForwardTest, RowOutputsIndependentOfBatchComposition) {
  const auto c = TinyConfig();
  auto file = RandomModel(c);
  auto m = Gemma4Model::Bind(*file);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const int64_t V = c.vocab_size;
  std::vector<std::vector<int32_t>> streams(3);
  const int64_t lengths[3] = {30, 24, 40};
  for (int i = 0; i < 3; ++i) {
    for (int64_t t = 0; t < lengths[i]; ++t) streams[i].push_back(static_cast<int32_t>((t * 31 + i * 7 + 2) % V));
  }
  const std::vector<TensorType> types = {TensorType::kF32, TensorType::kF16, TensorType::kQ8};
  ThreadPool pool(2);
  for (const ops::MatMulMode mode : {ops::MatMulMode::kExact, ops::MatMulMode::kFast}) {
    const ForwardOptions opt{mode, &pool};
    std::vector<std::vector<RowOut>> ref;
    for (int i = 0; i < 3; ++i) ref.push_back(Alone(**m, streams[i], types[i], opt));
    const std::string name = ops::MatMulModeName(mode);
    // Prefill chunks of each sequence alone, then decode steps side by side.
    RunSchedule(**m, streams, types, ref,
                {{{0, 20}}, {{1, 3}}, {{2, 17}},
                 {{0, 1}, {1, 1}, {2, 1}}, {{1, 1}, {2, 1}}, {{0, 1}, {1, 1}, {2, 1}}},
                opt, name + " chunks then decode");
    // Decode steps beside another sequence's prefill chunk, with and without its outputs.
    RunSchedule(**m, streams, types, ref,
                {{{0, 18}}, {{0, 1}, {2, 9}}, {{0, 1}, {1, 5}, {2, 9, false}}, {{1, 1}, {0, 1}, {2, 1}},
                 {{2, 12}, {0, 1, false}}, {{0, 1}, {2, 1}}},
                opt, name + " beside prefill");
    // K rows of one sequence in one pass (a verify of drafted tokens), beside decode steps.
    RunSchedule(**m, streams, types, ref,
                {{{0, 14}, {1, 10}}, {{0, 5}, {1, 1}}, {{1, 4}, {0, 1}}, {{0, 4}, {1, 1}, {2, 20}}, {{0, 6}}},
                opt, name + " verify rows");
  }
}

// Given input embeddings replace the token's own: the scaled embedding E[id]·√D given for a
// row reproduces that token's outputs exactly; a different embedding changes them.
TEST(ForwardTest, EmbeddingRows) {
  const auto c = TinyConfig();
  auto file = RandomModel(c);
  auto m = Gemma4Model::Bind(*file);
  ASSERT_TRUE(m.ok());
  const int64_t V = c.vocab_size, D = c.hidden_size;
  const std::vector<int32_t> tokens = {2, 17, 99, 5, 300};
  auto run = [&](const std::vector<int64_t>& embed_rows, const std::vector<float>& emb) {
    Store store(c, 16);
    ForwardScratch scratch;
    const BatchSequence seq{&store, 5};
    const std::vector<int64_t> out = {3, 4};
    std::vector<float> logits(2 * V);
    Batch b{.tokens = tokens, .embed_rows = embed_rows, .embeddings = emb.data(),
            .seqs = std::span<const BatchSequence>(&seq, 1), .out_rows = out, .logits = logits.data()};
    EXPECT_TRUE(Forward(**m, b, &scratch, {}).ok());
    return logits;
  };
  const auto plain = run({}, {});
  std::vector<float> emb(2 * D);
  const int32_t ids[2] = {17, 5};
  ops::GatherRows((*m)->token_embd(), ids, 2, emb.data());
  ops::Scale(emb.data(), 2 * D, static_cast<float>(std::sqrt(static_cast<double>(D))));
  EXPECT_EQ(run({1, 3}, emb), plain);
  for (auto& e : emb) e *= 0.5f;
  EXPECT_NE(run({1, 3}, emb), plain);
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

TEST(ForwardTest, ErrorsBeforeAnyWork) {
  const auto c = TinyConfig();
  auto file = RandomModel(c);
  auto m = Gemma4Model::Bind(*file);
  ASSERT_TRUE(m.ok());
  Store a(c, 8), b(c, 1);
  ForwardScratch scratch;
  std::vector<float> out(2 * c.vocab_size);
  const int32_t one[2] = {5, 6};
  const BatchSequence seqs[2] = {{&a, 1}, {&b, 1}};
  const int64_t rows[2] = {0, 1};
  Batch batch{.tokens = one, .seqs = seqs, .out_rows = rows, .logits = out.data()};
  ASSERT_TRUE(Forward(**m, batch, &scratch, {}).ok());
  EXPECT_EQ(a.size(), 1);
  EXPECT_EQ(b.size(), 1);
  // b is full now: the step fails and neither store moves.
  Status st = Forward(**m, batch, &scratch, {});
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find("batch sequence 1"), std::string::npos) << st.message();
  EXPECT_EQ(a.size(), 1);
  const int32_t bad[2] = {5, static_cast<int32_t>(c.vocab_size)};
  batch.tokens = bad;
  st = Forward(**m, batch, &scratch, {});
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("batch row 1"), std::string::npos) << st.message();
  EXPECT_EQ(a.size(), 1);
}

}  // namespace gemma4_forward_test
}  // namespace gemlet::model
