// `gemlet synth`: writes a random-weight Gemma 4 checkpoint in the Hugging Face layout
// (config.json, generation_config.json, BF16 safetensors, tokenizer files), deterministic from
// the seed. Real Gemma 4 weights cannot be downloaded on the project's machines; speed and
// memory do not depend on the weight values, so full-size random checkpoints serve the
// benchmarks, and the tiny preset serves the tests and the demo.
//
// Weight recipe (../shared/oracle/README.md, "Variants"), chosen so every activation stays
// finite through the whole network: linear layers N(0, 1/fan_in); embed_tokens std 0.8/√D
// (the √D-scaled rows have RMS 0.8); the PLE table N(0, 1/P); norm weights 1 + 0.1·N(0,1),
// q/k norms head_dim^(−1/4)·(1 + 0.1·N), the final norm 5·(1 + 0.1·N) (logit std ≈ 4 for any D);
// layer_scalar U(0.5, 1.5). "N" is an Irwin–Hall sum of four uniforms, scaled to unit variance
// (bounded at ±3.46σ, which also keeps every value tame).
// The vision and audio towers (e2b and e4b, unless SynthOptions::vision / ::audio is off) and
// their recipe: synth_towers.h.
//
// Every value is a pure function of (seed, HF tensor name, element index) through a
// counter-based generator (splitmix64), so the output is identical for any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include <nlohmann/json.hpp>

#include "model/gemma4_config.h"

namespace gemlet::convert {

// "tiny", "e2b", "e4b". e2b/e4b are ../shared/spec/gemma4-text.md §1.1 exactly; tiny is shaped
// like ../shared/oracle/tiny-e2b (7 layers, full at 3 and 6, 3 KV-shared, double-wide MLP,
// window 16, D 64, heads 2/1, head dims 32/64, P 32, vocab 512) with intermediate 128.
Result<model::Gemma4Config> SynthPresetConfig(const std::string& preset);

struct SynthOptions {
  std::string preset = "tiny";
  std::string out_dir;
  uint64_t seed = 0;
  // A tokenizer.json (or a folder holding one) to copy; its vocabulary size becomes V.
  // Empty: a synthetic 512-piece Gemma-4-shaped tokenizer (padded with <unusedN> to V).
  std::string tokenizer;
  int threads = 0;  // 0 = all cores
  // Write the preset's vision / audio tower too (if it has one: SynthVisionConfig,
  // SynthAudioConfig in synth_towers.h).
  bool vision = true;
  bool audio = true;
  // A checkpoint larger than this is split into model-0000i-of-0000n.safetensors shards with
  // model.safetensors.index.json; no shard exceeds it except one holding a single larger
  // tensor (a tensor cannot be split: the E2B PLE table alone is 4.7 GB).
  uint64_t max_shard_bytes = 4'000'000'000ull;
  // Called now and then with (bytes written, total bytes).
  std::function<void(uint64_t, uint64_t)> progress;
};

struct SynthReport {
  model::Gemma4Config config;
  bool vision = false;             // the checkpoint has a vision tower
  bool audio = false;              // ... an audio tower
  std::vector<std::string> files;  // every file written, relative to out_dir
  uint64_t weight_bytes = 0;       // sum of the safetensors files
  int64_t tensors = 0;
  double seconds = 0;
};

Result<SynthReport> Synthesize(const SynthOptions& options);

// ---- pieces, exposed for tests ----

// One tensor of the checkpoint and how its values are drawn.
struct SynthTensor {
  std::string hf_name;
  std::vector<int64_t> shape;
  enum class Dist { kNormal, kUniform } dist = Dist::kNormal;
  float a = 0, b = 1;  // kNormal: mean a, std b; kUniform: [a, b)
};

// Every text tensor of `cfg` in file order, including the unused k_proj/v_proj/k_norm of the
// KV-shared layers that the real checkpoint also carries.
std::vector<SynthTensor> SynthTensors(const model::Gemma4Config& cfg);

// What Synthesize writes besides the tokenizer, decided before any weight is: config.json and
// every tensor in file order (the text model's, then the towers').
struct SynthPlan {
  model::Gemma4Config config;
  bool vision = false;
  bool audio = false;
  nlohmann::json config_json;
  std::vector<SynthTensor> tensors;
};
// The plan for options.preset with a vocabulary of `vocab` ids (0: the preset's).
Result<SynthPlan> PlanSynth(const SynthOptions& options, int64_t vocab);

// Fills out[0, n) with BF16 values [begin, begin + n) of tensor `t` (flattened row-major).
void SynthFillBf16(const SynthTensor& t, uint64_t seed, uint64_t begin, uint64_t n, uint16_t* out);

// Groups consecutive tensors of the given byte sizes into shards of at most `max_bytes`
// (a tensor larger than that gets a shard of its own). Returns each shard's tensor indices.
std::vector<std::vector<size_t>> PlanShards(const std::vector<uint64_t>& tensor_bytes, uint64_t max_bytes);

}  // namespace gemlet::convert
