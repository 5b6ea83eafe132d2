#include "tools/convert/synth_assistant.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "format/gemlet_file.h"
#include "model/gemma4_drafter.h"
#include "model/gemma4_drafter_tensors.h"
#include "model/gemma4_forward.h"
#include "model/gemma4_model.h"
#include "model/model_test_util.h"
#include "tools/convert/convert.h"

namespace gemlet::convert {
namespace synth_assistant_test {

namespace fs = std::filesystem;

TEST(SynthAssistant, PresetsFitTheirTargets) {
  for (const char* preset : {"tiny", "e2b"}) {
    auto d = SynthAssistantConfig(preset);
    auto t = SynthPresetConfig(preset);
    ASSERT_TRUE(d.ok() && t.ok());
    EXPECT_TRUE(d->CheckFits(*t).ok()) << preset << ": " << d->CheckFits(*t).ToString();
  }
  auto e2b = SynthAssistantConfig("e2b");
  int64_t params = 0;
  for (const auto& s : model::DrafterTensors(*e2b)) {
    int64_t n = 1;
    for (int64_t x : s.shape) n *= x;
    if (s.cls != model::TensorClass::kTokenOrder) params += n;
  }
  // spec-multimodal §3.2: about 77.7 M parameters, 10.6 M of them beside the embedding (the
  // 2048 × 256 centroids included).
  EXPECT_NEAR(static_cast<double>(params), 77.7e6, 0.1e6);
  EXPECT_NEAR(static_cast<double>(params - 262144 * 256), 10.6e6, 0.1e6);
  EXPECT_FALSE(SynthAssistantConfig("e4b").ok());
}

// The tiny assistant, converted, drafts on the tiny synthetic target: finite logits, a
// candidate as the draft, the fill value below every candidate.
TEST(SynthAssistant, TinyConvertsAndDrafts) {
  const std::string dir = ::testing::TempDir() + "/synth_assistant." + std::to_string(::getpid());
  fs::remove_all(dir);
  SynthOptions so;
  so.preset = "tiny";
  so.out_dir = dir + "/target";
  so.threads = 1;
  ASSERT_TRUE(Synthesize(so).ok());
  so.out_dir = dir + "/assistant";
  auto rep = SynthesizeAssistant(so);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->tensors, 50);
  for (const char* which : {"target", "assistant"}) {
    ConvertOptions co;
    co.src = dir + "/" + which;
    co.out = dir + "/" + which + ".gemlet";
    co.progress = false;
    co.threads = 1;
    auto r = Convert(co);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  auto tf = GemletFile::Open(dir + "/target.gemlet");
  auto df = GemletFile::Open(dir + "/assistant.gemlet");
  ASSERT_TRUE(tf.ok() && df.ok());
  auto target = model::Gemma4Model::Bind(**tf);
  auto drafter = model::Gemma4Drafter::Bind(**df);
  ASSERT_TRUE(target.ok() && drafter.ok());
  ASSERT_TRUE((*drafter)->CheckFits(**target).ok());
  const model::Gemma4Config& c = (*target)->config();
  model::ContiguousStore kv(c, 64);
  model::ForwardScratch scratch;
  model::ForwardOptions fo;
  fo.mode = ops::MatMulMode::kFast;
  const std::vector<int32_t> prompt = {2, 105, 437, 107, 346, 358, 226, 255, 480, 480, 480, 162, 255, 137, 501, 376,
                                       198, 392, 181, 493};
  std::vector<float> h(c.hidden_size);
  const model::BatchSequence seq{&kv, static_cast<int64_t>(prompt.size())};
  const int64_t last = static_cast<int64_t>(prompt.size()) - 1;
  model::Batch b;
  b.tokens = prompt;
  b.seqs = std::span<const model::BatchSequence>(&seq, 1);
  b.out_rows = std::span<const int64_t>(&last, 1);
  b.hidden = h.data();
  ASSERT_TRUE(model::Forward(**target, b, &scratch, fo).ok());
  std::vector<float> sparse(c.vocab_size), dense(c.vocab_size), hn(c.hidden_size);
  model::DraftScratch ds;
  model::DraftOutput out;
  out.sparse_logits = sparse.data();
  out.dense_logits = dense.data();
  out.h_next = hn.data();
  ASSERT_TRUE(model::DraftStep(**drafter, **target, kv, 55, h.data(), model::DraftHead::kSparse, &ds, fo, &out).ok());
  ASSERT_GE(out.token, 0);
  float lo = 1e30f;
  int candidates = 0;
  for (int64_t i = 0; i < c.vocab_size; ++i) lo = std::min(lo, sparse[i]);
  for (int64_t i = 0; i < c.vocab_size; ++i) {
    ASSERT_TRUE(std::isfinite(sparse[i]) && std::isfinite(dense[i]));
    if (sparse[i] != lo) ++candidates;
  }
  EXPECT_EQ(candidates, 128) << "4 clusters of 32 candidates, the rest at min(candidates) - 1";
  EXPECT_GT(sparse[out.token], lo);
  for (float x : hn) ASSERT_TRUE(std::isfinite(x));
  fs::remove_all(dir);
}

}  // namespace synth_assistant_test
}  // namespace gemlet::convert
