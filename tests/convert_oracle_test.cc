// Converts every oracle checkpoint (../shared/oracle) and checks the .gemlet against the source:
// --plan keep is bit-exact (bf16/f32 values, Q8_0/Q4_0 blocks), the configs derived from the
// safetensors and the GGUF files agree, the vocabulary equals tokenizer.json's, the default
// plan's q4 blocks equal QuantizeRowQ4Ref of the source values, and the q8 and default plans of
// the safetensors hold the blocks llama.cpp's quantizer wrote into model-q8_0/q4_0.gguf.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/half.h"
#include "format/gemlet_file.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"
#include "model/gemma4_config.h"
#include "model/gemma4_tensors.h"
#include "model/gemma4_vision_tensors.h"
#include "tools/convert/convert.h"
#include "tools/convert/quant_plan.h"

namespace gemlet {
namespace convert_oracle_test {

namespace fs = std::filesystem;

const std::string kOracle = std::string(GEMLET_SHARED_DIR) + "/oracle/";

std::string TempDir() {
  const std::string d = ::testing::TempDir() + "/convert_oracle." + std::to_string(::getpid());
  fs::create_directories(d);
  return d;
}

std::unique_ptr<GemletFile> ConvertAndOpen(const std::string& src, const std::string& plan,
                                           const std::string& out_name,
                                           convert::ConvertReport* report = nullptr) {
  convert::ConvertOptions o;
  o.src = src;
  o.out = TempDir() + "/" + out_name;
  o.plan = plan;
  o.progress = false;
  o.threads = 2;
  auto r = convert::Convert(o);
  EXPECT_TRUE(r.ok()) << src << ": " << r.status().ToString();
  if (!r.ok()) return nullptr;
  if (report) *report = *r;
  auto f = GemletFile::Open(o.out);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

// A stored tensor's bytes in row-major order (q4 / q8 matrices are stored interleaved as
// kQ4x8 / kQ8x8: same values, other byte order; docs/file-format.md §6).
const uint8_t* RowMajor(const TensorView* t, std::vector<uint8_t>* buf) {
  return kernels::RowMajorBytes(t->data, t->type, t->layout, t->rows(), t->cols(), buf);
}

std::vector<float> ToF32(TensorType type, const uint8_t* data, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  kernels::DequantizeRowRef(type, data, out.data(), n);
  return out;
}

struct Source {
  const char* variant;
  const char* file;       // "" = the folder (model.safetensors)
  const char* gguf_type;  // expected stored type of 2-D weights in keep: "bf16", "f32", "q8", "q4"
};

class ConvertKeep : public ::testing::TestWithParam<Source> {};

// --plan keep: each tensor's bytes equal the source's bytes (the same values, the same blocks).
TEST_P(ConvertKeep, BitExact) {
  const Source s = GetParam();
  const std::string folder = kOracle + s.variant;
  const bool gguf = std::strlen(s.file) > 0;
  const std::string src = gguf ? folder + "/" + s.file : folder;
  convert::ConvertReport report;
  auto g =
      ConvertAndOpen(src, "keep", std::string(s.variant) + "-" + (gguf ? s.file : "st") + ".gemlet", &report);
  ASSERT_NE(g, nullptr);
  auto cfg = model::Gemma4Config::FromJson(g->metadata()["config"]);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto specs = model::ExpectedTensors(*cfg);
  if (g->metadata().contains("vision")) {  // the stub vision tower converted beside the text model
    auto vcfg = model::Gemma4VisionConfig::FromJson(g->metadata()["vision"]);
    ASSERT_TRUE(vcfg.ok()) << vcfg.status().ToString();
    for (const auto& v : model::ExpectedVisionTensors(*vcfg)) {
      if (g->Find(v.name)) specs.push_back(v);  // absent clip bounds are not written
    }
  }
  ASSERT_EQ(g->tensors().size(), specs.size());
  ASSERT_EQ(report.tensors.size(), specs.size());

  std::unique_ptr<SafetensorsFile> st;
  std::unique_ptr<GgufFile> gf;
  if (gguf) {
    auto r = GgufFile::Open(src);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    gf = std::move(*r);
  } else {
    auto r = SafetensorsFile::Open(folder + "/model.safetensors");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    st = std::move(*r);
  }
  int quantized = 0;
  for (const auto& spec : specs) {
    SCOPED_TRACE(spec.name);
    const TensorView* t = g->Find(spec.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->shape, spec.shape);
    const uint8_t* want = nullptr;
    uint64_t want_bytes = 0;
    std::string want_type;
    if (gguf) {
      const GgufTensorInfo* gt = gf->FindTensor(spec.gguf_name);
      ASSERT_NE(gt, nullptr);
      want = gt->data;
      want_bytes = gt->nbytes;
      want_type = gt->type_name() == "Q8_0"   ? "q8"
                  : gt->type_name() == "Q4_0" ? "q4"
                  : gt->type_name() == "BF16" ? "bf16"
                  : gt->type_name() == "F32"  ? "f32"
                                              : "?";
    } else {
      const SafetensorsTensor* tt = st->Find(spec.hf_name);
      ASSERT_NE(tt, nullptr);
      want = tt->data;
      want_bytes = tt->nbytes;
      want_type = "bf16";
    }
    EXPECT_EQ(TensorTypeName(t->type), want_type);
    ASSERT_EQ(t->nbytes, want_bytes);
    std::vector<uint8_t> buf;
    EXPECT_EQ(std::memcmp(RowMajor(t, &buf), want, want_bytes), 0);
    // q4 / q8 matrices are interleaved for the kernels, except the gathered-only PLE table.
    const bool interleaved = t->rows() % 8 == 0 && t->shape.size() >= 2 && spec.cls != model::TensorClass::kPleTable;
    EXPECT_EQ(t->layout, interleaved && t->type == TensorType::kQ4   ? TensorLayout::kQ4x8
                         : interleaved && t->type == TensorType::kQ8 ? TensorLayout::kQ8x8
                                                                     : TensorLayout::kRowMajor)
        << spec.name;
    quantized += IsQuantized(t->type);
  }
  if (std::string(s.gguf_type) == "q8" || std::string(s.gguf_type) == "q4") {
    EXPECT_GT(quantized, 0);
  }
  for (const auto& ct : report.tensors) EXPECT_FALSE(ct.requantized) << ct.name;
  // Provenance and plan.
  const auto& prov = g->metadata()["provenance"];
  EXPECT_EQ(prov["source_format"], gguf ? "gguf" : "safetensors");
  EXPECT_EQ(prov["source_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(g->metadata()["quant_plan"]["name"], "keep");
}

INSTANTIATE_TEST_SUITE_P(Oracle, ConvertKeep,
                         ::testing::Values(Source{"tiny-e2b", "", "bf16"},
                                           Source{"tiny-e2b", "model-bf16.gguf", "bf16"},
                                           Source{"tiny-e2b", "model-f32.gguf", "f32"},
                                           Source{"tiny-e2b", "model-q8_0.gguf", "q8"},
                                           Source{"tiny-e2b", "model-q4_0.gguf", "q4"},
                                           Source{"tiny-e4b", "", "bf16"},
                                           Source{"tiny-e4b", "model-bf16.gguf", "bf16"},
                                           Source{"tiny-e4b", "model-q8_0.gguf", "q8"},
                                           Source{"tiny-e4b", "model-q4_0.gguf", "q4"}),
                         [](const ::testing::TestParamInfo<Source>& info) {
                           std::string n = std::string(info.param.variant) + "_" +
                                           (std::strlen(info.param.file) ? info.param.file : "safetensors");
                           for (char& c : n) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// The provenance hash is the sha256 that cases.json lists for the source file.
TEST(ConvertOracle, ProvenanceHashMatchesCasesJson) {
  const std::string folder = kOracle + "tiny-e2b";
  auto g = ConvertAndOpen(folder + "/model-q8_0.gguf", "keep", "hash.gemlet");
  ASSERT_NE(g, nullptr);
  auto cases = ReadFileToString(folder + "/cases.json");
  ASSERT_TRUE(cases.ok());
  const auto j = nlohmann::json::parse(*cases);
  EXPECT_EQ(g->metadata()["provenance"]["source_sha256"], j["files"]["model-q8_0.gguf"]["sha256"]);
}

// The same checkpoint through safetensors and through every GGUF gives the same config, the same
// tokenizer ids and (for float sources) the same values.
TEST(ConvertOracle, SafetensorsAndGgufAgree) {
  for (const char* variant : {"tiny-e2b", "tiny-e4b"}) {
    SCOPED_TRACE(variant);
    const std::string folder = kOracle + variant;
    auto st = ConvertAndOpen(folder, "keep", std::string(variant) + "-agree-st.gemlet");
    auto gg =
        ConvertAndOpen(folder + "/model-bf16.gguf", "keep", std::string(variant) + "-agree-gguf.gemlet");
    ASSERT_NE(st, nullptr);
    ASSERT_NE(gg, nullptr);
    EXPECT_EQ(st->metadata()["config"], gg->metadata()["config"]);
    // The HF config read directly gives the same canonical JSON.
    auto cj = ReadFileToString(folder + "/config.json");
    ASSERT_TRUE(cj.ok());
    auto direct = model::Gemma4Config::FromJson(nlohmann::json::parse(*cj)["text_config"]);
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(st->metadata()["config"], direct->ToJson());
    for (const char* key : {"bos_id", "eos_id", "pad_id", "unk_id", "eog_ids", "add_bos"}) {
      EXPECT_EQ(st->metadata()["tokenizer"][key], gg->metadata()["tokenizer"][key]) << key;
    }
    EXPECT_EQ(gg->metadata()["tokenizer"]["eog_ids"], nlohmann::json::array({1, 106, 50}));
    // Values: the BF16 GGUF stores norms as F32 upcasts of the same bf16 values.
    for (const TensorView& t : st->tensors()) {
      if (t.name.rfind("v.", 0) == 0 || t.name.rfind("mm.", 0) == 0) continue;  // the vision tower: HF only
      const TensorView* u = gg->Find(t.name);
      ASSERT_NE(u, nullptr) << t.name;
      ASSERT_EQ(t.numel(), u->numel());
      EXPECT_EQ(ToF32(t.type, t.data, t.numel()), ToF32(u->type, u->data, u->numel())) << t.name;
    }
  }
  // tiny-e2b's F32 GGUF holds the same values too.
  auto st = ConvertAndOpen(kOracle + "tiny-e2b", "keep", "e2b-agree-st2.gemlet");
  auto f32 = ConvertAndOpen(kOracle + "tiny-e2b/model-f32.gguf", "keep", "e2b-agree-f32.gemlet");
  ASSERT_NE(st, nullptr);
  ASSERT_NE(f32, nullptr);
  for (const TensorView& t : st->tensors()) {
    if (t.name.rfind("v.", 0) == 0 || t.name.rfind("mm.", 0) == 0) continue;  // the vision tower: HF only
    const TensorView* u = f32->Find(t.name);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->type, TensorType::kF32);
    EXPECT_EQ(ToF32(t.type, t.data, t.numel()), ToF32(u->type, u->data, u->numel())) << t.name;
  }
}

// The vocabulary of the converted GGUF and safetensors checkpoints equals tokenizer.json's.
TEST(ConvertOracle, VocabEqualsTokenizerJson) {
  for (const char* variant : {"tiny-e2b", "tiny-e4b"}) {
    SCOPED_TRACE(variant);
    const std::string folder = kOracle + variant;
    auto text = ReadFileToString(folder + "/tokenizer.json");
    ASSERT_TRUE(text.ok());
    const auto tj = nlohmann::json::parse(*text);
    std::vector<std::string> pieces(tj["model"]["vocab"].size());
    for (auto it = tj["model"]["vocab"].begin(); it != tj["model"]["vocab"].end(); ++it) {
      pieces.at(it.value().get<size_t>()) = it.key();
    }
    std::vector<std::pair<int32_t, int32_t>> merges;
    for (const auto& m : tj["model"]["merges"]) {
      merges.emplace_back(tj["model"]["vocab"][m[0].get<std::string>()].get<int32_t>(),
                          tj["model"]["vocab"][m[1].get<std::string>()].get<int32_t>());
    }
    for (const std::string& src : {folder + "/model-q4_0.gguf", folder}) {
      auto g = ConvertAndOpen(src, "keep", std::string(variant) + "-vocab.gemlet");
      ASSERT_NE(g, nullptr);
      if (!g->has_vocab() && src == folder) {
        ADD_FAILURE() << "the safetensors conversion has no vocabulary (format/tokenizer_json.h missing?)";
        continue;
      }
      const Vocab vocab = g->ReadVocab();
      EXPECT_EQ(vocab.pieces, pieces) << src;
      EXPECT_EQ(vocab.merges, merges) << src;
      EXPECT_EQ(vocab.types[2], TokenType::kControl) << src;  // <bos>
    }
  }
}

// The default plan: every matrix's q4 blocks equal QuantizeRowQ4Ref of the source values
// (per_layer_model_proj: q8, QuantizeRowQ8Ref); norms and scalars exact in f32.
TEST(ConvertOracle, DefaultPlanQ4MatchesReference) {
  for (const char* variant : {"tiny-e2b", "tiny-e4b"}) {
    SCOPED_TRACE(variant);
    const std::string folder = kOracle + variant;
    auto keep = ConvertAndOpen(folder, "keep", std::string(variant) + "-ref.gemlet");
    auto def = ConvertAndOpen(folder, "default", std::string(variant) + "-default.gemlet");
    ASSERT_NE(keep, nullptr);
    ASSERT_NE(def, nullptr);
    auto cfg = model::Gemma4Config::FromJson(def->metadata()["config"]);
    ASSERT_TRUE(cfg.ok());
    int q4 = 0;
    for (const auto& spec : model::ExpectedTensors(*cfg)) {
      SCOPED_TRACE(spec.name);
      const TensorView* k = keep->Find(spec.name);
      const TensorView* d = def->Find(spec.name);
      ASSERT_TRUE(k && d);
      const std::vector<float> x = ToF32(k->type, k->data, k->numel());
      switch (spec.cls) {
        case model::TensorClass::kAttention:
        case model::TensorClass::kFeedForward:
        case model::TensorClass::kTokenEmbedding:
        case model::TensorClass::kPleTable:
        case model::TensorClass::kPleGate:
        case model::TensorClass::kPleProj: {
          ASSERT_EQ(d->type, TensorType::kQ4);
          std::vector<BlockQ4> want(x.size() / kQBlock);
          kernels::QuantizeRowQ4Ref(x.data(), want.data(), static_cast<int64_t>(x.size()));
          ASSERT_EQ(d->nbytes, want.size() * sizeof(BlockQ4));
          std::vector<uint8_t> buf;
          EXPECT_EQ(std::memcmp(RowMajor(d, &buf), want.data(), d->nbytes), 0);
          ++q4;
          break;
        }
        case model::TensorClass::kPleModelProj: {
          ASSERT_EQ(d->type, TensorType::kQ8);
          std::vector<BlockQ8> want(x.size() / kQBlock);
          kernels::QuantizeRowQ8Ref(x.data(), want.data(), static_cast<int64_t>(x.size()));
          ASSERT_EQ(d->nbytes, want.size() * sizeof(BlockQ8));
          std::vector<uint8_t> buf;
          EXPECT_EQ(std::memcmp(RowMajor(d, &buf), want.data(), d->nbytes), 0);
          break;
        }
        case model::TensorClass::kNorm:
        case model::TensorClass::kScalar:
          ASSERT_EQ(d->type, TensorType::kF32);
          EXPECT_EQ(ToF32(d->type, d->data, d->numel()), x);
          break;
        case model::TensorClass::kDrafterProj:  // drafter and tower classes: not in ExpectedTensors
        case model::TensorClass::kCentroids:
        case model::TensorClass::kTokenOrder:
        case model::TensorClass::kVisionMatrix:
        case model::TensorClass::kVisionPosTable:
        case model::TensorClass::kVisionProj:
        case model::TensorClass::kAudioMatrix:
        case model::TensorClass::kAudioConv:
        case model::TensorClass::kAudioProj:
          ADD_FAILURE() << "a drafter or tower class in the text tensor table";
          break;
      }
    }
    EXPECT_GT(q4, 10);
    EXPECT_EQ(def->metadata()["quant_plan"]["classes"]["attn"], "q4");
    EXPECT_EQ(def->metadata()["quant_plan"]["classes"]["ple_gate"], "q4");
    EXPECT_EQ(def->metadata()["quant_plan"]["classes"]["ple_model_proj"], "q8");
  }
}

// q8 plan from the Q4_0 GGUF: every q8 row is QuantizeRowQ8Ref of the dequantized Q4_0 values
// (requantized), and 1-D tensors stay f32.
TEST(ConvertOracle, Q8PlanFromQ4Gguf) {
  const std::string src = kOracle + "tiny-e2b/model-q4_0.gguf";
  convert::ConvertReport report;
  auto q8 = ConvertAndOpen(src, "q8", "q8-from-q4.gemlet", &report);
  auto keep = ConvertAndOpen(src, "keep", "keep-q4.gemlet");
  ASSERT_NE(q8, nullptr);
  ASSERT_NE(keep, nullptr);
  int requantized = 0;
  for (const auto& ct : report.tensors) requantized += ct.requantized;
  EXPECT_GT(requantized, 10);
  for (const TensorView& t : q8->tensors()) {
    const TensorView* k = keep->Find(t.name);
    ASSERT_NE(k, nullptr);
    // The q8 plan stores every matrix as q8 and every 1-D tensor as f32.
    EXPECT_EQ(t.type, t.shape.size() == 1 ? TensorType::kF32 : TensorType::kQ8) << t.name;
    if (t.type != TensorType::kQ8) continue;
    std::vector<uint8_t> buf;
    const std::vector<float> x = ToF32(k->type, RowMajor(k, &buf), k->numel());
    std::vector<BlockQ8> want(x.size() / kQBlock);
    kernels::QuantizeRowQ8Ref(x.data(), want.data(), static_cast<int64_t>(x.size()));
    std::vector<uint8_t> got_buf;  // q8 matrices are stored interleaved (kQ8x8) where they can be
    EXPECT_EQ(std::memcmp(RowMajor(&t, &got_buf), want.data(), t.nbytes), 0) << t.name;
  }
}

// The plans users get, against llama.cpp's quantizer: model-q8_0.gguf and model-q4_0.gguf were
// made by llama.cpp's quantizer (--pure) from the F32 conversion of the same checkpoint, so the
// q8 plan, the q4 plan and the default plan (q4 but for per_layer_model_proj) of the safetensors
// must hold the same blocks (fp16 scale and quants, byte for byte) wherever llama.cpp
// quantized. llama.cpp leaves per_layer_model_proj in F32 (its quantizer never quantizes that
// tensor); gemlet's plans quantize it, so it is checked for its plan type only.
struct PlanVsLlama {
  const char* variant;
  const char* plan;
  const char* gguf;
};

void PrintTo(const PlanVsLlama& p, std::ostream* os) { *os << p.variant << " --plan " << p.plan << " vs " << p.gguf; }

class PlanBlocks : public ::testing::TestWithParam<PlanVsLlama> {};

TEST_P(PlanBlocks, EqualLlamaCppQuantizer) {
  const PlanVsLlama p = GetParam();
  const std::string folder = kOracle + p.variant;
  auto g = ConvertAndOpen(folder, p.plan, std::string(p.variant) + "-" + p.plan + "-vs-llama.gemlet");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->metadata()["quant_plan"]["name"], p.plan);
  auto lr = GgufFile::Open(folder + "/" + p.gguf);
  ASSERT_TRUE(lr.ok()) << lr.status().ToString();
  const GgufFile& llama = **lr;
  auto cfg = model::Gemma4Config::FromJson(g->metadata()["config"]);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const bool q8 = std::string(p.plan) == "q8";
  const TensorType want_type = q8 ? TensorType::kQ8 : TensorType::kQ4;
  auto plan = convert::MakeQuantPlan(p.plan, {});
  ASSERT_TRUE(plan.ok());
  const std::string llama_type = q8 ? "Q8_0" : "Q4_0";
  int blocks_equal = 0, llama_quantized = 0;
  for (const auto& spec : model::ExpectedTensors(*cfg)) {
    SCOPED_TRACE(spec.name);
    const TensorView* t = g->Find(spec.name);
    const GgufTensorInfo* lt = llama.FindTensor(spec.gguf_name);
    ASSERT_NE(t, nullptr);
    ASSERT_NE(lt, nullptr);
    if (lt->type_name() == llama_type) {
      ++llama_quantized;
      ASSERT_EQ(t->type, want_type);
      ASSERT_EQ(t->nbytes, lt->nbytes);
      std::vector<uint8_t> buf;
      const uint8_t* got = RowMajor(t, &buf);
      // The first differing block, for the message.
      const size_t block = q8 ? sizeof(BlockQ8) : sizeof(BlockQ4);
      size_t first = 0;
      while (first < t->nbytes && std::memcmp(got + first, lt->data + first, block) == 0) first += block;
      EXPECT_EQ(first, t->nbytes) << "block " << first / block << " of " << t->nbytes / block << " differs";
      blocks_equal += first == t->nbytes;
      continue;
    }
    ASSERT_EQ(lt->type_name(), "F32");
    if (spec.shape.size() == 1) {
      ASSERT_EQ(t->type, TensorType::kF32);
      EXPECT_EQ(ToF32(t->type, t->data, t->numel()),
                ToF32(TensorType::kF32, lt->data, static_cast<int64_t>(lt->nbytes / 4)));
    } else {
      EXPECT_EQ(spec.gguf_name, "per_layer_model_proj.weight");
      EXPECT_EQ(t->type, convert::PlanType(*plan, spec.cls, TensorType::kBF16));
    }
  }
  // Every 2-D weight but per_layer_model_proj: attention, FFN, the embeddings, the PLE gates.
  EXPECT_GT(llama_quantized, 5 * cfg->num_layers);
  EXPECT_EQ(blocks_equal, llama_quantized);
}

INSTANTIATE_TEST_SUITE_P(Oracle, PlanBlocks,
                         ::testing::Values(PlanVsLlama{"tiny-e2b", "q8", "model-q8_0.gguf"},
                                           PlanVsLlama{"tiny-e2b", "q4", "model-q4_0.gguf"},
                                           PlanVsLlama{"tiny-e2b", "default", "model-q4_0.gguf"},
                                           PlanVsLlama{"tiny-e4b", "q8", "model-q8_0.gguf"},
                                           PlanVsLlama{"tiny-e4b", "q4", "model-q4_0.gguf"},
                                           PlanVsLlama{"tiny-e4b", "default", "model-q4_0.gguf"}),
                         [](const ::testing::TestParamInfo<PlanVsLlama>& info) {
                           return std::string(info.param.variant == std::string("tiny-e2b") ? "e2b_" : "e4b_") +
                                  info.param.plan;
                         });

}  // namespace convert_oracle_test
}  // namespace gemlet
