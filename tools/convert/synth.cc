#include "tools/convert/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <vector>

#include "base/clock.h"
#include "base/half.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "format/safetensors_writer.h"
#include "model/gemma4_tensors.h"
#include "tools/convert/synth_tokenizer.h"
#include "tools/convert/synth_towers.h"

namespace gemlet::convert {

namespace fs = std::filesystem;
using model::AttnType;
using model::Gemma4Config;

namespace {

// splitmix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::vector<AttnType> Pattern(int64_t layers, int64_t period) {
  std::vector<AttnType> t;
  for (int64_t l = 0; l < layers; ++l)
    t.push_back((l + 1) % period == 0 ? AttnType::kFull : AttnType::kSliding);
  return t;
}

// The k_proj, v_proj and k_norm that the real archive keeps for a KV-shared layer (unused).
void AddUnusedSharedKv(const Gemma4Config& c, int64_t l, std::vector<SynthTensor>* out) {
  const std::string h = std::string(model::kHfTextPrefix) + "layers." + std::to_string(l) + ".self_attn.";
  const int64_t hd = c.head_dim_of(l), D = c.hidden_size;
  const float inv = 1.0f / std::sqrt(static_cast<float>(D));
  out->push_back({h + "k_proj.weight", {c.kv_dim(l), D}, SynthTensor::Dist::kNormal, 0.0f, inv});
  out->push_back({h + "v_proj.weight", {c.kv_dim(l), D}, SynthTensor::Dist::kNormal, 0.0f, inv});
  const float qk = std::pow(static_cast<float>(hd), -0.25f);
  out->push_back({h + "k_norm.weight", {hd}, SynthTensor::Dist::kNormal, qk, 0.1f * qk});
}

uint64_t Numel(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::string ShardName(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

Status WriteJson(const fs::path& path, const nlohmann::json& j) {
  return WriteStringToFile(path.string(), j.dump(2) + "\n");
}

// config.json: the top level of the real Gemma4ForConditionalGeneration release (as in
// ../shared/oracle/tiny-e2b/config.json) around text_config = Gemma4Config::ToJson(), with HF's
// vision_config and audio_config for the towers there are (null otherwise).
nlohmann::json ConfigJson(const Gemma4Config& cfg, const SynthOptions& o, const model::Gemma4VisionConfig* vision,
                          const model::Gemma4AudioConfig* audio) {
  nlohmann::json text = cfg.ToJson();
  text["architectures"] = nullptr;
  text["attention_dropout"] = 0.0;
  text["dtype"] = "bfloat16";
  text["initializer_range"] = 0.02;
  text["moe_intermediate_size"] = nullptr;
  text["num_experts"] = nullptr;
  text["num_global_key_value_heads"] = nullptr;
  text["top_k_experts"] = nullptr;
  text["use_bidirectional_attention"] = nullptr;
  text["use_cache"] = true;
  nlohmann::json j;
  j["architectures"] = {"Gemma4ForConditionalGeneration"};
  j["audio_config"] = audio ? SynthAudioConfigJson(*audio) : nlohmann::json();
  j["audio_token_id"] = 258881;
  j["boa_token_id"] = 256000;
  j["boi_token_id"] = 255999;
  j["dtype"] = "bfloat16";
  j["eoa_token_id"] = 258883;
  j["eoa_token_index"] = 258883;
  j["eoi_token_id"] = 258882;
  j["eos_token_id"] = {1, 106};
  j["image_token_id"] = 258880;
  j["initializer_range"] = 0.02;
  j["model_type"] = "gemma4";
  j["text_config"] = std::move(text);
  j["tie_word_embeddings"] = true;
  j["transformers_version"] = "5.5.0";
  j["video_token_id"] = 258884;
  j["vision_config"] = vision ? SynthVisionConfigJson(*vision) : nlohmann::json();
  j["vision_soft_tokens_per_image"] = 280;
  // Not an HF key: says where the weights came from (they are random).
  j["gemlet_synth"] = {
      {"preset", o.preset}, {"seed", o.seed}, {"generator", "gemlet " GEMLET_VERSION}, {"weights", "random"}};
  return j;
}

nlohmann::json GenerationConfigJson() {
  return {{"bos_token_id", 2},
          {"do_sample", true},
          {"eos_token_id", {1, 106, 50}},
          {"pad_token_id", 0},
          {"temperature", 1.0},
          {"top_k", 64},
          {"top_p", 0.95},
          {"transformers_version", "5.5.0"}};
}

// Writes the tokenizer files; returns V.
Result<int64_t> WriteTokenizer(const SynthOptions& o, int64_t preset_vocab, std::vector<std::string>* files) {
  const fs::path out(o.out_dir);
  if (o.tokenizer.empty()) {
    ASSIGN_OR_RETURN(nlohmann::json tok, SyntheticTokenizerJson(preset_vocab));
    RETURN_IF_ERROR(WriteStringToFile((out / "tokenizer.json").string(), tok.dump() + "\n"));
    RETURN_IF_ERROR(WriteJson(out / "tokenizer_config.json", SyntheticTokenizerConfigJson()));
    files->push_back("tokenizer.json");
    files->push_back("tokenizer_config.json");
    return preset_vocab;
  }
  fs::path src(o.tokenizer);
  std::error_code ec;
  if (fs::is_directory(src, ec)) src /= "tokenizer.json";
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(src.string()));
  nlohmann::json tok = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (tok.is_discarded()) return InvalidArgument(src.string() + ": not valid JSON");
  auto size = TokenizerJsonVocabSize(tok);
  if (!size.ok()) return size.status().WithContext(src.string());
  RETURN_IF_ERROR(WriteStringToFile((out / "tokenizer.json").string(), text));
  files->push_back("tokenizer.json");
  for (const char* extra : {"tokenizer_config.json", "chat_template.jinja"}) {
    const fs::path p = src.parent_path() / extra;
    if (!fs::is_regular_file(p, ec)) continue;
    ASSIGN_OR_RETURN(std::string body, ReadFileToString(p.string()));
    RETURN_IF_ERROR(WriteStringToFile((out / extra).string(), body));
    files->push_back(extra);
  }
  return *size;
}

// Removes weights an earlier run left in `dir` (a different shard count would otherwise leave
// stale model-*.safetensors files that a folder loader could pick up).
Status RemoveStaleWeights(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const bool weights =
        name.rfind("model", 0) == 0 && (ends_with(".safetensors") || ends_with(".safetensors.tmp"));
    if (weights || name == "model.safetensors.index.json") {
      fs::remove(e.path(), ec);
      if (ec) return IoError(e.path().string() + ": cannot remove stale file: " + ec.message());
    }
  }
  if (ec) return IoError(dir.string() + ": cannot list: " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<Gemma4Config> SynthPresetConfig(const std::string& preset) {
  Gemma4Config c;
  if (preset == "tiny") {
    c.vocab_size = 512;
    c.hidden_size = 64;
    c.num_layers = 7;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = 32;
    c.global_head_dim = 64;
    c.intermediate_size = 128;
    c.hidden_size_per_layer_input = 32;
    c.sliding_window = 16;
    c.num_kv_shared_layers = 3;
    c.use_double_wide_mlp = true;
    c.layer_types = Pattern(7, 4);       // full at 3 ...
    c.layer_types[6] = AttnType::kFull;  // ... and 6, like tiny-e2b
  } else if (preset == "e2b") {          // spec §1.1
    c.vocab_size = 262144;
    c.hidden_size = 1536;
    c.num_layers = 35;
    c.num_heads = 8;
    c.num_kv_heads = 1;
    c.head_dim = 256;
    c.global_head_dim = 512;
    c.intermediate_size = 6144;
    c.hidden_size_per_layer_input = 256;
    c.sliding_window = 512;
    c.num_kv_shared_layers = 20;
    c.use_double_wide_mlp = true;
    c.layer_types = Pattern(35, 5);  // ([sliding]*4 + [full]) * 7
  } else if (preset == "e4b") {
    c.vocab_size = 262144;
    c.hidden_size = 2560;
    c.num_layers = 42;
    c.num_heads = 8;
    c.num_kv_heads = 2;
    c.head_dim = 256;
    c.global_head_dim = 512;
    c.intermediate_size = 10240;
    c.hidden_size_per_layer_input = 256;
    c.sliding_window = 512;
    c.num_kv_shared_layers = 18;
    c.use_double_wide_mlp = false;
    c.layer_types = Pattern(42, 6);  // ([sliding]*5 + [full]) * 7
  } else {
    return InvalidArgument("unknown preset '" + preset + "' (expected tiny, e2b or e4b)");
  }
  c.vocab_size_per_layer_input = c.vocab_size;
  RETURN_IF_ERROR(c.Validate());
  return c;
}

std::vector<SynthTensor> SynthTensors(const Gemma4Config& cfg) {
  std::vector<SynthTensor> out;
  const float D = static_cast<float>(cfg.hidden_size);
  const float P = static_cast<float>(cfg.hidden_size_per_layer_input);
  int64_t last_layer = -1;
  for (const model::TensorSpec& s : model::ExpectedTensors(cfg)) {
    // The unused K/V tensors of a KV-shared layer follow the rest of that layer's tensors.
    if (s.layer != last_layer && last_layer >= 0 && !cfg.has_kv(last_layer)) {
      AddUnusedSharedKv(cfg, last_layer, &out);
    }
    last_layer = s.layer;
    SynthTensor t{s.hf_name, s.shape, SynthTensor::Dist::kNormal, 0.0f, 1.0f};
    switch (s.cls) {
      case model::TensorClass::kTokenEmbedding:
        t.b = 0.8f / std::sqrt(D);
        break;
      case model::TensorClass::kPleTable:
        t.b = 1.0f / std::sqrt(P);
        break;
      case model::TensorClass::kPleModelProj:
      case model::TensorClass::kAttention:
      case model::TensorClass::kFeedForward:
      case model::TensorClass::kPleGate:
      case model::TensorClass::kPleProj:
      case model::TensorClass::kDrafterProj:  // (drafter classes: not in a text model)
      case model::TensorClass::kCentroids:
      case model::TensorClass::kTokenOrder:
        t.b = 1.0f / std::sqrt(static_cast<float>(s.shape[1]));  // N(0, 1/fan_in)
        break;
      case model::TensorClass::kNorm: {
        float center = 1.0f;
        const bool qk = s.name.find("attn_q_norm") != std::string::npos ||
                        s.name.find("attn_k_norm") != std::string::npos;
        if (qk) center = std::pow(static_cast<float>(s.shape[0]), -0.25f);
        if (s.name == "output_norm") center = 5.0f;
        t.a = center;
        t.b = 0.1f * center;
        break;
      }
      case model::TensorClass::kScalar:
        t.dist = SynthTensor::Dist::kUniform;
        t.a = 0.5f;
        t.b = 1.5f;
        break;
      case model::TensorClass::kVisionMatrix:  // the towers' classes: SynthVisionTensors,
      case model::TensorClass::kVisionPosTable:  // SynthAudioTensors
      case model::TensorClass::kVisionProj:
      case model::TensorClass::kAudioMatrix:
      case model::TensorClass::kAudioConv:
      case model::TensorClass::kAudioProj:
        break;
    }
    out.push_back(std::move(t));
  }
  if (last_layer >= 0 && !cfg.has_kv(last_layer)) AddUnusedSharedKv(cfg, last_layer, &out);
  return out;
}

void SynthFillBf16(const SynthTensor& t, uint64_t seed, uint64_t begin, uint64_t n, uint16_t* out) {
  const uint64_t key = Mix64(seed ^ Mix64(Fnv1a(t.hf_name)));
  uint64_t ctr = key + (begin + 1) * kGolden;
  if (t.dist == SynthTensor::Dist::kUniform) {
    const float span = t.b - t.a;
    for (uint64_t i = 0; i < n; ++i, ctr += kGolden) {
      const float u = static_cast<float>(Mix64(ctr) >> 40) * (1.0f / 16777216.0f);  // [0, 1)
      out[i] = F32ToBf16(t.a + span * u);
    }
    return;
  }
  // Irwin–Hall: the sum of four 16-bit uniforms has mean 2 and variance 1/3.
  constexpr float kUnit = 1.7320508075688772f / 65536.0f;  // √3 / 2^16
  const float scale = t.b * kUnit;
  for (uint64_t i = 0; i < n; ++i, ctr += kGolden) {
    const uint64_t r = Mix64(ctr);
    const int32_t sum = static_cast<int32_t>(r & 0xffff) + static_cast<int32_t>((r >> 16) & 0xffff) +
                        static_cast<int32_t>((r >> 32) & 0xffff) + static_cast<int32_t>(r >> 48);
    // (sum + 2) / 2^16 is the sum of four uniforms on (0, 1) centred at their bin midpoints.
    out[i] = F32ToBf16(t.a + scale * static_cast<float>(sum - 131070));
  }
}

std::vector<std::vector<size_t>> PlanShards(const std::vector<uint64_t>& bytes, uint64_t max_bytes) {
  std::vector<std::vector<size_t>> shards;
  uint64_t cur = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (shards.empty() || (cur > 0 && cur + bytes[i] > max_bytes)) {
      shards.emplace_back();
      cur = 0;
    }
    shards.back().push_back(i);
    cur += bytes[i];
  }
  return shards;
}

Result<SynthPlan> PlanSynth(const SynthOptions& o, int64_t vocab) {
  SynthPlan plan;
  ASSIGN_OR_RETURN(plan.config, SynthPresetConfig(o.preset));
  Gemma4Config& cfg = plan.config;
  if (vocab > 0) cfg.vocab_size = cfg.vocab_size_per_layer_input = vocab;
  RETURN_IF_ERROR(cfg.Validate());
  model::Gemma4VisionConfig vision;
  model::Gemma4AudioConfig audio;
  plan.vision = o.vision && SynthVisionConfig(o.preset, cfg.hidden_size, &vision);
  plan.audio = o.audio && SynthAudioConfig(o.preset, cfg.hidden_size, &audio);
  plan.config_json = ConfigJson(cfg, o, plan.vision ? &vision : nullptr, plan.audio ? &audio : nullptr);
  plan.tensors = SynthTensors(cfg);
  auto append = [&](std::vector<SynthTensor> tower) {
    plan.tensors.insert(plan.tensors.end(), std::make_move_iterator(tower.begin()),
                        std::make_move_iterator(tower.end()));
  };
  if (plan.vision) append(SynthVisionTensors(vision));
  if (plan.audio) append(SynthAudioTensors(audio));
  return plan;
}

Result<SynthReport> Synthesize(const SynthOptions& o) {
  const auto t0 = SteadyClock::now();
  if (o.out_dir.empty()) return InvalidArgument("no output folder given");
  ASSIGN_OR_RETURN(Gemma4Config preset, SynthPresetConfig(o.preset));
  const fs::path out(o.out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) return IoError(o.out_dir + ": cannot create folder: " + ec.message());
  RETURN_IF_ERROR(RemoveStaleWeights(out));

  SynthReport report;
  ASSIGN_OR_RETURN(int64_t vocab, WriteTokenizer(o, preset.vocab_size, &report.files));
  ASSIGN_OR_RETURN(SynthPlan plan, PlanSynth(o, vocab));
  report.vision = plan.vision;
  report.audio = plan.audio;
  RETURN_IF_ERROR(WriteJson(out / "config.json", plan.config_json));
  RETURN_IF_ERROR(WriteJson(out / "generation_config.json", GenerationConfigJson()));
  report.files.push_back("config.json");
  report.files.push_back("generation_config.json");

  const std::vector<SynthTensor>& tensors = plan.tensors;
  std::vector<uint64_t> bytes;
  uint64_t total = 0;
  for (const auto& t : tensors) {
    bytes.push_back(Numel(t.shape) * 2);
    total += bytes.back();
  }
  const uint64_t max_shard = total > o.max_shard_bytes ? o.max_shard_bytes : total;
  const auto shards = PlanShards(bytes, std::max<uint64_t>(max_shard, 1));

  // Generation runs on the pool while the previous block is written on another thread.
  ThreadPool pool(o.threads);
  constexpr uint64_t kBlock = uint64_t{1} << 22;  // values per block (8 MiB of BF16)
  std::vector<uint16_t> buf[2] = {std::vector<uint16_t>(kBlock), std::vector<uint16_t>(kBlock)};
  int cur = 0;
  uint64_t done = 0;
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = shards.size() == 1 ? "model.safetensors" : ShardName(s, shards.size());
    std::vector<SafetensorsTensorInfo> infos;
    for (size_t i : shards[s]) {
      infos.push_back({tensors[i].hf_name, "BF16", tensors[i].shape});
      weight_map[tensors[i].hf_name] = name;
    }
    ASSIGN_OR_RETURN(auto writer, SafetensorsWriter::Create((out / name).string(), std::move(infos)));
    std::future<Status> pending;
    for (size_t i : shards[s]) {
      const SynthTensor& t = tensors[i];
      const uint64_t numel = Numel(t.shape);
      for (uint64_t begin = 0; begin < numel; begin += kBlock) {
        const uint64_t n = std::min(kBlock, numel - begin);
        uint16_t* dst = buf[cur].data();
        pool.ParallelFor(
            static_cast<int64_t>(n),
            [&](int64_t b, int64_t e) {
              SynthFillBf16(t, o.seed, begin + static_cast<uint64_t>(b), static_cast<uint64_t>(e - b),
                            dst + b);
            },
            int64_t{1} << 16);
        if (pending.valid()) RETURN_IF_ERROR(pending.get());
        SafetensorsWriter* w = writer.get();
        pending = std::async(std::launch::async, [w, dst, n] { return w->Append(dst, n * 2); });
        cur ^= 1;
        done += n * 2;
        if (o.progress) o.progress(done, total);
      }
    }
    if (pending.valid()) RETURN_IF_ERROR(pending.get());
    RETURN_IF_ERROR(writer->Finish());
    report.files.push_back(name);
    report.weight_bytes += writer->file_bytes();
  }
  if (shards.size() > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", std::move(weight_map)}};
    RETURN_IF_ERROR(WriteJson(out / "model.safetensors.index.json", index));
    report.files.push_back("model.safetensors.index.json");
  }
  report.config = plan.config;
  report.tensors = static_cast<int64_t>(tensors.size());
  report.seconds = SecondsSince(t0);
  return report;
}

}  // namespace gemlet::convert
