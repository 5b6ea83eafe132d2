#include "tools/convert/synth_assistant.h"

#include <cmath>
#include <filesystem>
#include <random>

#include "base/clock.h"
#include "base/mapped_file.h"
#include "format/safetensors_writer.h"
#include "model/gemma4_drafter_tensors.h"

namespace gemlet::convert {

namespace fs = std::filesystem;
using model::AttnType;
using model::Gemma4DrafterConfig;

Result<Gemma4DrafterConfig> SynthAssistantConfig(const std::string& preset) {
  Gemma4DrafterConfig c;
  c.num_layers = 4;
  c.layer_types = {AttnType::kSliding, AttnType::kSliding, AttnType::kSliding, AttnType::kFull};
  c.num_kv_heads = 1;
  c.use_ordered_embeddings = true;
  if (preset == "tiny") {  // ../shared/oracle/tiny-e2b-assistant
    c.backbone_hidden_size = 64;
    c.vocab_size = 512;
    c.hidden_size = 32;
    c.num_heads = 2;
    c.head_dim = 32;
    c.global_head_dim = 64;
    c.intermediate_size = 64;
    c.sliding_window = 16;
    c.num_centroids = 16;
    c.centroid_top_k = 4;
  } else if (preset == "e2b") {  // spec-multimodal §3.2
    c.backbone_hidden_size = 1536;
    c.vocab_size = 262144;
    c.hidden_size = 256;
    c.num_heads = 4;
    c.head_dim = 256;
    c.global_head_dim = 512;
    c.intermediate_size = 2048;
    c.sliding_window = 512;
    c.num_centroids = 2048;
    c.centroid_top_k = 32;
  } else {
    return InvalidArgument("unknown assistant preset '" + preset + "' (expected tiny or e2b)");
  }
  RETURN_IF_ERROR(c.Validate());
  return c;
}

std::vector<SynthTensor> SynthAssistantTensors(const Gemma4DrafterConfig& c) {
  std::vector<SynthTensor> out;
  for (const model::TensorSpec& s : model::DrafterTensors(c)) {
    if (s.cls == model::TensorClass::kTokenOrder) continue;
    SynthTensor t{s.hf_name, s.shape};
    switch (s.cls) {
      case model::TensorClass::kTokenEmbedding:
        t.b = 0.8f / std::sqrt(static_cast<float>(c.hidden_size));
        break;
      case model::TensorClass::kCentroids:
        t.b = 0.8f;
        break;
      case model::TensorClass::kNorm: {
        float center = 1.0f;
        if (s.name.find("attn_q_norm") != std::string::npos) center = std::pow(static_cast<float>(s.shape[0]), -0.25f);
        if (s.name == std::string(model::kDrafterPrefix) + "output_norm") center = 5.0f;
        t.a = center;
        t.b = 0.1f * center;
        break;
      }
      case model::TensorClass::kScalar:
        t.dist = SynthTensor::Dist::kUniform;
        t.a = 0.5f;
        t.b = 1.5f;
        break;
      default:  // matrices: N(0, 1/fan_in); pre_projection × 0.3 (its input has an RMS of ~3.6)
        t.b = 1.0f / std::sqrt(static_cast<float>(s.shape[1]));
        if (s.name == std::string(model::kDrafterPrefix) + "pre_proj") t.b *= 0.3f;
        break;
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<SynthReport> SynthesizeAssistant(const SynthOptions& o) {
  const auto t0 = SteadyClock::now();
  if (o.out_dir.empty()) return InvalidArgument("no output folder given");
  ASSIGN_OR_RETURN(Gemma4DrafterConfig cfg, SynthAssistantConfig(o.preset));
  const fs::path out(o.out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) return IoError(o.out_dir + ": cannot create folder: " + ec.message());
  nlohmann::json config = cfg.ToJson();
  config["architectures"] = {"Gemma4AssistantForCausalLM"};
  config["dtype"] = "bfloat16";
  RETURN_IF_ERROR(WriteStringToFile((out / "config.json").string(), config.dump(2) + "\n"));

  const std::vector<SynthTensor> tensors = SynthAssistantTensors(cfg);
  std::vector<SafetensorsTensorInfo> infos;
  uint64_t total = 0;
  for (const SynthTensor& t : tensors) {
    infos.push_back({t.hf_name, "BF16", t.shape});
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    total += 2 * n;
  }
  infos.push_back({"masked_embedding.token_ordering", "I64", {cfg.vocab_size}});
  total += 8 * static_cast<uint64_t>(cfg.vocab_size);
  ASSIGN_OR_RETURN(auto writer, SafetensorsWriter::Create((out / "model.safetensors").string(), infos));
  constexpr uint64_t kBlock = uint64_t{1} << 20;
  std::vector<uint16_t> buf(kBlock);
  uint64_t done = 0;
  for (const SynthTensor& t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    for (uint64_t begin = 0; begin < numel; begin += kBlock) {
      const uint64_t n = std::min(kBlock, numel - begin);
      SynthFillBf16(t, o.seed, begin, n, buf.data());
      RETURN_IF_ERROR(writer->Append(buf.data(), n * 2));
      done += n * 2;
      if (o.progress) o.progress(done, total);
    }
  }
  // A random permutation (Fisher–Yates over mt19937_64, whose output the standard fixes).
  std::vector<int64_t> order(cfg.vocab_size);
  for (int64_t i = 0; i < cfg.vocab_size; ++i) order[i] = i;
  std::mt19937_64 rng(o.seed ^ 0x6a09e667f3bcc908ull);
  for (int64_t i = cfg.vocab_size - 1; i > 0; --i) std::swap(order[i], order[rng() % static_cast<uint64_t>(i + 1)]);
  RETURN_IF_ERROR(writer->Append(order.data(), order.size() * 8));
  RETURN_IF_ERROR(writer->Finish());
  SynthReport report;
  report.files = {"config.json", "model.safetensors"};
  report.weight_bytes = writer->file_bytes();
  report.tensors = static_cast<int64_t>(infos.size());
  report.seconds = SecondsSince(t0);
  return report;
}

}  // namespace gemlet::convert
