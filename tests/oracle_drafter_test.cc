// The MTP drafter against ../shared/oracle/tiny-e2b-assistant (its README: conventions and
// tolerances): every case and round of cases.json through the target (tiny-e2b) and the
// drafter, dense and sparse logits and h_next against the float64 goldens, in the exact path
// (f32, f32 KV) and the fast path (float kernels, f16 KV); the bundle (target + drafter in one
// file) and a drafter that does not fit its target (`gemlet draft`: oracle_drafter_cli_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "format/npy.h"
#include "format/gguf.h"
#include "model/gemma4_drafter.h"
#include "model/gemma4_forward.h"
#include "model/tensor_binding.h"
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
// A drafter without the sparse head drafts the dense argmax: its drafts are checked against
// that, and no sparse logits are compared.
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
      if (dr->has_sparse_head()) res.sparse.Add(Diff(sl.data(), sparse.data.data() + s.row * V, V));
      res.h_next.Add(Diff(hn.data(), h_next.data.data() + s.row * B, B));
      if ((dr->has_sparse_head() ? s.draft_gap : s.dense_gap) > gap_min) {
        ++res.drafts_checked;
        res.drafts_equal += out.token == (dr->has_sparse_head() ? s.draft : s.dense_argmax);
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

Result<convert::ConvertReport> ConvertTo(const std::string& src, const std::string& out, const std::string& plan,
                                         std::vector<std::string> overrides = {}, const std::string& assistant = "") {
  convert::ConvertOptions o;
  o.src = src;
  o.out = out;
  o.plan = plan;
  o.overrides = std::move(overrides);
  o.assistant = assistant;
  o.progress = false;
  o.threads = 2;
  return convert::Convert(o);
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
  const std::string bundle = ScratchDir() + "/bundle.gemlet";
  auto rep = ConvertTo(OracleDir() + "tiny-e2b", bundle, "keep", {}, OracleDir() + kAssistant);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  // The embedded drafter is found without --drafter.
  auto e = Open(bundle, "", ops::MatMulMode::kExact);
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
  auto rep = ConvertTo(OracleDir() + "tiny-e4b", ScratchDir() + "/bad-bundle.gemlet", "default", {},
                       OracleDir() + kAssistant);
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.status().message().find("does not fit"), std::string::npos) << rep.status().ToString();
}

// ---- llama.cpp's gemma4-assistant GGUF of the same checkpoint (tests/data/assistant/README.md):
// tiny-assistant-centroids-f32.gguf (the converter with the sparse head kept) and
// tiny-assistant-f32.gguf (the converter as is: no centroids, no token ordering).

const std::string kGgufDir = std::string(GEMLET_SOURCE_DIR) + "/tests/data/assistant/";
const std::string kGgufCentroids = kGgufDir + "tiny-assistant-centroids-f32.gguf";
const std::string kGgufDense = kGgufDir + "tiny-assistant-f32.gguf";

// Every plan gives the GGUF's drafter the HF path's tensors, byte for byte (the F32 GGUF holds
// the BF16 values exactly; the quantizers see the same floats): names, types, shapes, bytes and
// the drafter config. `keep` keeps each source's type (bf16 vs f32): there the values are equal.
TEST(OracleDrafterGguf, CentroidsGgufWritesTheHfTensors) {
  const std::vector<std::string> all_f32 = {"token_embd=f32", "drafter_proj=f32", "attn=f32", "ffn=f32",
                                            "norm=f32",       "scalar=f32",       "centroids=f32"};
  for (const auto& [plan, overrides] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"keep", all_f32}, {"default", {}}, {"q8", {}}, {"q4", {}}, {"keep", {}}}) {
    const std::string tag = plan + (overrides.empty() ? "" : "+f32");
    const std::string hf = ScratchDir() + "/hf-" + tag + ".gemlet", gg = ScratchDir() + "/gguf-" + tag + ".gemlet";
    auto r1 = ConvertTo(OracleDir() + kAssistant, hf, plan, overrides);
    ASSERT_TRUE(r1.ok()) << r1.status().ToString();
    auto r2 = ConvertTo(kGgufCentroids, gg, plan, overrides);
    ASSERT_TRUE(r2.ok()) << r2.status().ToString();
    EXPECT_TRUE(r2->notes.empty()) << r2->notes[0];
    auto a = GemletFile::Open(hf);
    auto b = GemletFile::Open(gg);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*a)->metadata()["drafter"], (*b)->metadata()["drafter"]) << tag;
    EXPECT_EQ((*b)->metadata()["provenance"]["source_format"], "gguf");
    ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size()) << tag;
    const bool same_types = tag != "keep";
    int equal = 0;
    for (const TensorView& ta : (*a)->tensors()) {
      const TensorView* tb = (*b)->Find(ta.name);
      ASSERT_NE(tb, nullptr) << tag << " " << ta.name;
      EXPECT_EQ(ta.shape, tb->shape) << tag << " " << ta.name;
      if (same_types) {
        EXPECT_EQ(ta.type, tb->type) << tag << " " << ta.name;
        EXPECT_EQ(ta.layout, tb->layout) << tag << " " << ta.name;
        const bool bytes = ta.nbytes == tb->nbytes && std::memcmp(ta.data, tb->data, ta.nbytes) == 0;
        EXPECT_TRUE(bytes) << tag << " " << ta.name;
        equal += bytes;
      } else {
        const bool values = model::ToF32(ta) == model::ToF32(*tb);
        EXPECT_TRUE(values) << tag << " " << ta.name;
        equal += values;
      }
    }
    std::printf("[gguf drafter] plan %s: %d of %zu tensors equal to the HF path's (%s)\n", tag.c_str(), equal,
                (*a)->tensors().size(), same_types ? "bytes" : "values; bf16 vs f32");
  }
}

TEST(OracleDrafterGguf, CentroidsGgufExactPathMatchesEveryRound) {
  const std::string out = ScratchDir() + "/gguf-centroids-keep.gemlet";
  auto rep = ConvertTo(kGgufCentroids, out, "keep");
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  auto e = Open(Converted("tiny-e2b", "model.safetensors"), out, ops::MatMulMode::kExact);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->drafter()->has_sparse_head());
  const RoundResults r = RunRounds(*e, TensorType::kF32, 2e-3);
  EXPECT_EQ(r.sparse.rows, 32);
  for (const auto& [what, s] : {std::pair{"dense logits", r.dense}, {"sparse logits", r.sparse}, {"h_next", r.h_next}}) {
    EXPECT_LE(s.max_abs, 1e-3) << what << ": " << s.ToString();
    EXPECT_LE(s.mean_abs(), 1e-4) << what << ": " << s.ToString();
    Report(std::string("tiny-e2b-assistant from GGUF (centroids) exact ") + what, s);
  }
  EXPECT_EQ(r.drafts_checked, 32);
  EXPECT_EQ(r.drafts_equal, r.drafts_checked);
  EXPECT_EQ(r.dense_equal, r.dense_checked);
}

// llama.cpp's converter output as is: the drafter has no sparse head, converts with a note, and
// drafts the dense argmax; its dense logits and h_next are the oracle's.
TEST(OracleDrafterGguf, GgufWithoutCentroidsUsesTheDenseHead) {
  const std::string out = ScratchDir() + "/gguf-dense-keep.gemlet";
  auto rep = ConvertTo(kGgufDense, out, "keep");
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->notes.size(), 1u);
  EXPECT_NE(rep->notes[0].find("no sparse head"), std::string::npos) << rep->notes[0];
  EXPECT_NE(rep->notes[0].find("dense head"), std::string::npos) << rep->notes[0];
  auto g = GemletFile::Open(out);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->metadata()["drafter"]["use_ordered_embeddings"], false);
  EXPECT_EQ((*g)->Find("drafter.centroids"), nullptr);
  EXPECT_EQ((*g)->Find("drafter.token_ordering"), nullptr);
  auto e = Open(Converted("tiny-e2b", "model.safetensors"), out, ops::MatMulMode::kExact);
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->drafter()->has_sparse_head());
  const RoundResults r = RunRounds(*e, TensorType::kF32, 2e-3);
  EXPECT_EQ(r.dense.rows, 32);
  EXPECT_EQ(r.sparse.rows, 0);
  for (const auto& [what, s] : {std::pair{"dense logits", r.dense}, {"h_next", r.h_next}}) {
    EXPECT_LE(s.max_abs, 1e-3) << what << ": " << s.ToString();
    EXPECT_LE(s.mean_abs(), 1e-4) << what << ": " << s.ToString();
    Report(std::string("tiny-e2b-assistant from GGUF (dense head) exact ") + what, s);
  }
  EXPECT_EQ(r.drafts_checked, 32);
  EXPECT_EQ(r.drafts_equal, r.drafts_checked);  // the dense argmax
}

// A u32 metadata value of a copy of a GGUF file, replaced (the key must occur once).
std::string WithU32(const std::string& src, const std::string& key, uint32_t value) {
  std::string s = ReadFileToString(src).value();
  const size_t k = s.find(key);
  EXPECT_NE(k, std::string::npos) << key;
  EXPECT_EQ(s.find(key, k + 1), std::string::npos) << key;
  uint32_t type;
  std::memcpy(&type, s.data() + k + key.size(), 4);
  EXPECT_EQ(type, static_cast<uint32_t>(GgufValueType::kU32)) << key;
  std::memcpy(s.data() + k + key.size() + 4, &value, 4);
  return s;
}

TEST(OracleDrafterGguf, AssistantGgufIntoATarget) {
  // Into the safetensors target and into llama.cpp's GGUF of the same target.
  for (const std::string& target : {OracleDir() + "tiny-e2b", OracleDir() + "tiny-e2b/model-f32.gguf"}) {
    for (const std::string& assistant : {kGgufCentroids, kGgufDense}) {
      const std::string out = ScratchDir() + "/gguf-bundle.gemlet";
      auto rep = ConvertTo(target, out, "keep", {}, assistant);
      ASSERT_TRUE(rep.ok()) << rep.status().ToString();
      const auto dense_notes = std::count_if(rep->notes.begin(), rep->notes.end(), [](const std::string& n) {
        return n.find("no sparse head") != std::string::npos;
      });  // (the safetensors target also notes its audio stub)
      EXPECT_EQ(dense_notes, assistant == kGgufDense ? 1 : 0) << target << " " << assistant;
      auto e = Open(out, "", ops::MatMulMode::kExact);
      ASSERT_NE(e, nullptr);
      ASSERT_NE(e->drafter(), nullptr);
      EXPECT_EQ(e->drafter()->has_sparse_head(), assistant == kGgufCentroids);
      const RoundResults r = RunRounds(*e, TensorType::kF32, 2e-3);
      EXPECT_LE(r.dense.max_abs, 1e-3) << target << " " << assistant << " " << r.dense.ToString();
      EXPECT_LE(r.h_next.max_abs, 1e-3) << target << " " << assistant << " " << r.h_next.ToString();
      if (assistant == kGgufCentroids) {
        EXPECT_LE(r.sparse.max_abs, 1e-3) << r.sparse.ToString();
      }
      EXPECT_EQ(r.drafts_equal, r.drafts_checked) << target << " " << assistant;
    }
  }
  // Misfits, each one line: the KV heads doctored to 2 (no drafter tensor depends on them: the
  // fit check finds it); the hidden size the drafter was made for doctored to 96 (its
  // projections then contradict it); a target it was not made for.
  const std::string doctored = ScratchDir() + "/doctored.gguf";
  ASSERT_TRUE(WriteStringToFile(doctored, WithU32(kGgufDense, "gemma4-assistant.attention.head_count_kv", 2)).ok());
  auto bad = ConvertTo(OracleDir() + "tiny-e2b", ScratchDir() + "/misfit.gemlet", "keep", {}, doctored);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--assistant " + doctored + ": the drafter does not fit the target model: "
                                        "the KV head count is 2 in the drafter, 1 in the target"),
            std::string::npos)
      << bad.status().ToString();
  EXPECT_EQ(bad.status().message().find('\n'), std::string::npos);
  ASSERT_TRUE(WriteStringToFile(doctored, WithU32(kGgufDense, "gemma4-assistant.embedding_length_out", 96)).ok());
  bad = ConvertTo(OracleDir() + "tiny-e2b", ScratchDir() + "/misfit.gemlet", "keep", {}, doctored);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(doctored + ": tensor nextn.pre_projection.weight has shape [32, 128] but the "
                                        "config needs [32, 192]"),
            std::string::npos)
      << bad.status().ToString();
  auto e4b = ConvertTo(OracleDir() + "tiny-e4b", ScratchDir() + "/misfit.gemlet", "keep", {}, kGgufCentroids);
  ASSERT_FALSE(e4b.ok());
  EXPECT_NE(e4b.status().message().find("hidden size is 64 in the drafter, 96 in the target"), std::string::npos)
      << e4b.status().ToString();
}

}  // namespace oracle_drafter_test
}  // namespace gemlet::oracle
