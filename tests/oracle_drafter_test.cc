// The MTP drafter against ../shared/oracle/tiny-e2b-assistant (its README: conventions and
// tolerances): every case and round of cases.json through the target (tiny-e2b) and the
// drafter, dense and sparse logits and h_next against the float64 goldens, in the exact path
// (f32, f32 KV) and the fast path (float kernels, f16 KV); the bundle (target + drafter in one
// file) and a drafter that does not fit its target (`gemlet draft`: oracle_drafter_cli_test.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/npy.h"
#include "model/gemma4_drafter.h"
#include "model/gemma4_forward.h"
#include "runtime/engine.h"
#include "runtime/kv_cache.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_drafter_test {

constexpr char kAssistant[] = "tiny-e2b-assistant";

struct Step {
  int64_t row;
  int32_t input_token, draft, dense_argmax;
  double draft_gap, dense_gap;
};
struct Round {
  std::vector<int32_t> sequence;
  std::vector<Step> steps;
};

const std::vector<Round>& Rounds() {
  static const std::vector<Round> rounds = [] {
    std::vector<Round> out;
    const auto& j = OracleCases(kAssistant);
    for (const auto& c : j["cases"]) {
      for (const auto& r : c["rounds"]) {
        Round round;
        round.sequence = r["sequence"].get<std::vector<int32_t>>();
        for (const auto& s : r["steps"]) {
          round.steps.push_back({s["row"].get<int64_t>(), s["input_token"].get<int32_t>(), s["draft"].get<int32_t>(),
                                 s["dense_argmax"].get<int32_t>(), s["draft_gap"].get<double>(),
                                 s["dense_gap"].get<double>()});
        }
        out.push_back(std::move(round));
      }
    }
    return out;
  }();
  return rounds;
}

const NpyArray& Array(const std::string& name) {
  static std::map<std::string, NpyArray> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto a = ReadNpy(OracleDir() + kAssistant + "/" + name);
    GEMLET_CHECK_MSG(a.ok(), "the drafter oracle's arrays are readable");
    it = cache.emplace(name, std::move(*a)).first;
  }
  return it->second;
}

// max |Δ| and mean |Δ| of n values.
Stats Diff(const float* got, const float* gold, int64_t n) {
  Stats s;
  s.rows = 1;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - gold[i]);
    s.max_abs = std::max(s.max_abs, std::isnan(d) ? 1e30 : d);
    s.sum_abs += d;
    ++s.values;
  }
  return s;
}

struct RoundResults {
  Stats dense, sparse, h_next, h_target;
  int drafts_checked = 0, drafts_equal = 0, dense_checked = 0, dense_equal = 0;
};

// Every round: the target prefills sequence[:-1] into `kv_type` rows and gives its hidden at
// P − 1; four draft steps from sequence[P] at position P, each fed the previous draft and h_next.
RoundResults RunRounds(const runtime::Engine& e, TensorType kv_type, double gap_min) {
  const model::Gemma4Drafter* dr = e.drafter();
  EXPECT_NE(dr, nullptr);
  RoundResults res;
  if (dr == nullptr) return res;
  const int64_t V = e.config().vocab_size, B = e.config().hidden_size;
  const NpyArray &dense = Array("dense-logits.npy"), &sparse = Array("sparse-logits.npy");
  const NpyArray &h_next = Array("h-next.npy"), &h_in = Array("h-in.npy");
  model::ForwardOptions fo;
  fo.mode = e.mode();
  fo.pool = e.pool();
  for (const Round& r : Rounds()) {
    const int64_t n = static_cast<int64_t>(r.sequence.size());
    runtime::KvCache kv(e.config(), n, kv_type);
    model::ForwardScratch scratch;
    const model::BatchSequence seq{&kv, n - 1};
    const int64_t last = n - 2;
    std::vector<float> h(B), hn(B), dl(V), sl(V);
    model::Batch b;
    b.tokens = std::span<const int32_t>(r.sequence.data(), n - 1);
    b.seqs = std::span<const model::BatchSequence>(&seq, 1);
    b.out_rows = std::span<const int64_t>(&last, 1);
    b.hidden = h.data();
    Status st = model::Forward(e.model(), b, &scratch, fo);
    EXPECT_TRUE(st.ok()) << st.ToString();
    res.h_target.Add(Diff(h.data(), h_in.data.data() + r.steps[0].row * B, B));
    int32_t tok = r.sequence.back();
    model::DraftScratch ds;
    for (const Step& s : r.steps) {
      EXPECT_EQ(tok, s.input_token) << "row " << s.row;
      model::DraftOutput out;
      out.h_next = hn.data();
      out.dense_logits = dl.data();
      out.sparse_logits = sl.data();
      st = model::DraftStep(*dr, e.model(), kv, tok, h.data(), model::DraftHead::kSparse, &ds, fo, &out);
      EXPECT_TRUE(st.ok()) << st.ToString();
      res.dense.Add(Diff(dl.data(), dense.data.data() + s.row * V, V));
      res.sparse.Add(Diff(sl.data(), sparse.data.data() + s.row * V, V));
      res.h_next.Add(Diff(hn.data(), h_next.data.data() + s.row * B, B));
      if (s.draft_gap > gap_min) {
        ++res.drafts_checked;
        res.drafts_equal += out.token == s.draft;
      }
      if (s.dense_gap > gap_min) {
        ++res.dense_checked;
        res.dense_equal += TopGap(dl.data(), V).first == s.dense_argmax;
      }
      tok = s.draft;  // teacher-forced: the golden draft and (below) our own h_next
      h = hn;
    }
  }
  return res;
}

std::string ConvertedDrafter(const std::string& plan) {
  return Converted(kAssistant, "model.safetensors", plan);
}

std::unique_ptr<runtime::Engine> Open(const std::string& target, const std::string& drafter, ops::MatMulMode mode) {
  runtime::EngineOptions eo;
  eo.threads = 2;
  eo.mode = mode;
  eo.drafter_path = drafter;
  auto e = runtime::Engine::Open(target, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

TEST(OracleDrafter, ExactPathMatchesEveryRound) {
  const std::string target = Converted("tiny-e2b", "model.safetensors");
  const std::string drafter = ConvertedDrafter("keep");
  ASSERT_FALSE(target.empty());
  ASSERT_FALSE(drafter.empty());
  auto e = Open(target, drafter, ops::MatMulMode::kExact);
  ASSERT_NE(e, nullptr);
  const RoundResults r = RunRounds(*e, TensorType::kF32, 2e-3);
  EXPECT_EQ(r.dense.rows, 32);
  for (const auto& [what, s] : {std::pair{"dense logits", r.dense}, {"sparse logits", r.sparse},
                                {"h_next", r.h_next}, {"target hidden at P-1", r.h_target}}) {
    EXPECT_LE(s.max_abs, 1e-3) << what << ": " << s.ToString();
    EXPECT_LE(s.mean_abs(), 1e-4) << what << ": " << s.ToString();
    Report(std::string("tiny-e2b-assistant exact ") + what, s);
  }
  EXPECT_EQ(r.drafts_checked, 32);
  EXPECT_EQ(r.drafts_equal, r.drafts_checked);
  EXPECT_EQ(r.dense_equal, r.dense_checked);
}

// The fast path: the float kernels over the bf16 weights and an f16 KV cache (the engine's
// fast-path default), within the README's approximate tier.
TEST(OracleDrafter, FastPathWithinApproximateTier) {
  auto e = Open(Converted("tiny-e2b", "model.safetensors"), ConvertedDrafter("keep"), ops::MatMulMode::kFast);
  ASSERT_NE(e, nullptr);
  const RoundResults r = RunRounds(*e, TensorType::kF16, 0.05);
  for (const auto& [what, s] : {std::pair{"dense logits", r.dense}, {"sparse logits", r.sparse}, {"h_next", r.h_next}}) {
    EXPECT_LE(s.max_abs, 0.1) << what << ": " << s.ToString();
    Report(std::string("tiny-e2b-assistant fast (bf16, f16 KV) ") + what, s);
  }
  EXPECT_EQ(r.drafts_equal, r.drafts_checked);
  EXPECT_EQ(r.dense_equal, r.dense_checked);
}

// The quantized plans (int8 activations): weight quantization moves the logits far more than
// the tier (as ref-q4_0 vs ref does for the text model, ../shared/oracle/README.md), so these
// are reported. q8 (measured: 20 of 20) keeps the dense argmax wherever the golden gap is
// above 0.5, as the text model's q8 disagreements all come at gaps below 0.16.
TEST(OracleDrafter, QuantizedPlansReported) {
  for (const char* plan : {"q8", "default"}) {
    auto e = Open(Converted("tiny-e2b", "model.safetensors", plan), ConvertedDrafter(plan), ops::MatMulMode::kFast);
    ASSERT_NE(e, nullptr);
    const RoundResults r = RunRounds(*e, TensorType::kF16, 0.5);
    Report(std::string("tiny-e2b-assistant plan ") + plan + " dense logits", r.dense);
    Report(std::string("tiny-e2b-assistant plan ") + plan + " sparse logits", r.sparse);
    Report(std::string("tiny-e2b-assistant plan ") + plan + " h_next", r.h_next);
    std::printf("[oracle] plan %s: drafts equal %d/%d, dense argmax equal %d/%d (golden gap > 0.5)\n", plan,
                r.drafts_equal, r.drafts_checked, r.dense_equal, r.dense_checked);
    EXPECT_EQ(r.dense.rows, 32);
    if (std::string(plan) == "q8") {
      EXPECT_EQ(r.dense_equal, r.dense_checked);
    }
  }
}

TEST(OracleDrafter, BundleCarriesTheDrafter) {
  convert::ConvertOptions o;
  o.src = OracleDir() + "tiny-e2b";
  o.assistant = OracleDir() + kAssistant;
  o.out = ScratchDir() + "/bundle.gemlet";
  o.plan = "keep";
  o.progress = false;
  o.threads = 2;
  auto rep = convert::Convert(o);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  // The embedded drafter is found without --drafter.
  auto e = Open(o.out, "", ops::MatMulMode::kExact);
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->drafter(), nullptr);
  const RoundResults r = RunRounds(*e, TensorType::kF32, 2e-3);
  EXPECT_LE(r.sparse.max_abs, 1e-3) << r.sparse.ToString();
  EXPECT_EQ(r.drafts_equal, r.drafts_checked);

}

TEST(OracleDrafter, RefusesATargetItDoesNotFit) {
  // tiny-e4b's hidden size is 96, the drafter's backbone 64.
  runtime::EngineOptions eo;
  eo.threads = 1;
  eo.drafter_path = ConvertedDrafter("keep");
  auto e = runtime::Engine::Open(Converted("tiny-e4b", "model.safetensors"), eo);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("does not fit"), std::string::npos) << e.status().ToString();
  EXPECT_NE(e.status().message().find("hidden size is 64 in the drafter, 96 in the target"), std::string::npos)
      << e.status().ToString();
  // A drafter file given as the model.
  auto d = runtime::Engine::Open(ConvertedDrafter("keep"), runtime::EngineOptions{});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("is an MTP drafter, not a model"), std::string::npos) << d.status().ToString();
  convert::ConvertOptions o;
  o.src = OracleDir() + "tiny-e4b";
  o.assistant = OracleDir() + kAssistant;
  o.out = ScratchDir() + "/bad-bundle.gemlet";
  o.progress = false;
  auto rep = convert::Convert(o);
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.status().message().find("does not fit"), std::string::npos) << rep.status().ToString();
}

}  // namespace oracle_drafter_test
}  // namespace gemlet::oracle
