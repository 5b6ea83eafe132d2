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
// The vision tower (e2b and e4b, unless SynthOptions::vision is off; spec-multimodal §1.5, HF
// names and shapes): its linears and embed_vision N(0, 1/fan_in), the position table N(0, 0.5²),
// norms as above (its q/k norms too: the tower's attention is unscaled like the decoder's), and
// clip bounds wide enough to bind rarely: the minima U(−12, −8), the maxima U(8, 12).
//
// Every value is a pure function of (seed, HF tensor name, element index) through a
// counter-based generator (splitmix64), so the output is identical for any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/gemma4_config.h"
#include "model/gemma4_vision_tensors.h"

namespace gemlet::convert {

// "tiny", "e2b", "e4b". e2b/e4b are ../shared/spec/gemma4-text.md §1.1 exactly; tiny is shaped
// like ../shared/oracle/tiny-e2b (7 layers, full at 3 and 6, 3 KV-shared, double-wide MLP,
// window 16, D 64, heads 2/1, head dims 32/64, P 32, vocab 512) with intermediate 128.
Result<model::Gemma4Config> SynthPresetConfig(const std::string& preset);
// The preset's vision tower (e2b, e4b: the real checkpoints' shared tower, spec-multimodal §1.1:
// 16 layers, Dv 768, 12 heads × 64, FFN 3072, patch 16, 3×3 pooling, a 10240-row position
// table), for a decoder of width text_hidden. False for tiny (no tower).
bool SynthVisionConfig(const std::string& preset, int64_t text_hidden, model::Gemma4VisionConfig* out);

struct SynthOptions {
  std::string preset = "tiny";
  std::string out_dir;
  uint64_t seed = 0;
  // A tokenizer.json (or a folder holding one) to copy; its vocabulary size becomes V.
  // Empty: a synthetic 512-piece Gemma-4-shaped tokenizer (padded with <unusedN> to V).
  std::string tokenizer;
  int threads = 0;  // 0 = all cores
  // Write the preset's vision tower too (if it has one: SynthVisionConfig).
  bool vision = true;
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
// Every tensor of the vision tower and embed_vision, HF names and shapes (clip bounds 0-d).
std::vector<SynthTensor> SynthVisionTensors(const model::Gemma4VisionConfig& cfg);

// Fills out[0, n) with BF16 values [begin, begin + n) of tensor `t` (flattened row-major).
void SynthFillBf16(const SynthTensor& t, uint64_t seed, uint64_t begin, uint64_t n, uint16_t* out);

// Groups consecutive tensors of the given byte sizes into shards of at most `max_bytes`
// (a tensor larger than that gets a shard of its own). Returns each shard's tensor indices.
std::vector<std::vector<size_t>> PlanShards(const std::vector<uint64_t>& tensor_bytes, uint64_t max_bytes);

}  // namespace gemlet::convert
