// `gemlet synth --assistant`: a random-weight MTP drafter ("assistant") checkpoint in the
// Hugging Face layout (config.json with model_type gemma4_assistant, model.safetensors with
// the released tensor names: BF16, and masked_embedding.token_ordering I64), shaped to fit
// the target preset of the same name, so that the drafter's speed can be measured.
//
// Weights as ../shared/oracle/tiny-e2b-assistant/README.md draws them: linear layers
// N(0, 1/fan_in), pre_projection × 0.3, embed_tokens std 0.8/√D, the centroids std 0.8, norms
// 1 + 0.1·N (q_norm hd^(−1/4)·(1 + 0.1·N), the final norm 5·(1 + 0.1·N)), layer_scalar
// U(0.5, 1.5); token_ordering a random permutation. A pure function of the seed.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/gemma4_drafter_config.h"
#include "tools/convert/synth.h"

namespace gemlet::convert {

// "tiny" (the shapes of ../shared/oracle/tiny-e2b-assistant, fitting synth's tiny target) and
// "e2b" (spec-multimodal §3.2: 4 layers, D 256, 2,048 centroids, top 32, vocab 262,144).
Result<model::Gemma4DrafterConfig> SynthAssistantConfig(const std::string& preset);

// Every tensor of the drafter but the token ordering, and how its values are drawn.
std::vector<SynthTensor> SynthAssistantTensors(const model::Gemma4DrafterConfig& cfg);

// Writes config.json and model.safetensors into options.out_dir (options.tokenizer unused).
Result<SynthReport> SynthesizeAssistant(const SynthOptions& options);

}  // namespace gemlet::convert
