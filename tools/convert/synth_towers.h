// The encoder towers of a `gemlet synth` checkpoint (e2b and e4b; tiny has none, the tests'
// towers are the oracles'): their HF configs and tensors, with the real checkpoints' shapes and
// names, so image and audio encoding can be measured on full-size random weights.
//
// Weight recipe, chosen (like the text recipe in synth.h) so every activation stays finite and
// O(1) through the tower: every matrix and convolution N(0, 1/fan_in), fan_in = the product of
// its dims after the first (a [C1, C0, 3, 3] conv: 9·C0); norm weights 1 + 0.1·N(0,1), the
// vision q/k norms head_dim^(−1/4)·(1 + 0.1·N) (its attention is unscaled like the decoder's);
// the vision position table N(0, 0.5²); clip bounds (HF 0-d buffers) wide enough to bind rarely
// on O(1) activations: the minima U(−12, −8), the maxima U(8, 12). The audio tower's
// per_dim_scale is 0.3·N(0,1) and its output_proj.bias 0.1·N(0,1), as in
// ../shared/oracle/tiny-e2b-audio/README.md ("Weight recipe").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gemma4_audio_tensors.h"
#include "model/gemma4_vision_tensors.h"
#include "tools/convert/synth.h"

namespace gemlet::convert {

// The preset's vision tower (e2b, e4b: the real checkpoints' shared tower, spec-multimodal §1.1:
// 16 layers, Dv 768, 12 heads × 64, FFN 3072, patch 16, 3×3 pooling, a 10240-row position
// table), for a decoder of width text_hidden. False for tiny (no tower).
bool SynthVisionConfig(const std::string& preset, int64_t text_hidden, model::Gemma4VisionConfig* out);
// Every tensor of the vision tower and embed_vision, HF names and shapes (clip bounds 0-d).
std::vector<SynthTensor> SynthVisionTensors(const model::Gemma4VisionConfig& cfg);
// HF's vision_config object of config.json.
nlohmann::json SynthVisionConfigJson(const model::Gemma4VisionConfig& cfg);

// The preset's audio tower (e2b, e4b: HF's Gemma4AudioConfig() defaults, spec-multimodal §2.2:
// 12 conformer layers, Da 1024, 8 heads × 128, subsampling channels [128, 32], conv kernel 5,
// chunk 12, context 13 left / 0 right, logit cap 50, output_proj_dims 1536), for a decoder of
// width text_hidden (embed_audio: 1536 → text_hidden). False for tiny (no tower).
bool SynthAudioConfig(const std::string& preset, int64_t text_hidden, model::Gemma4AudioConfig* out);
// Every tensor of the audio tower and embed_audio, HF names and shapes (clip bounds 0-d).
std::vector<SynthTensor> SynthAudioTensors(const model::Gemma4AudioConfig& cfg);
// HF's audio_config object of config.json (every Gemma4AudioConfig field, as the oracle's).
nlohmann::json SynthAudioConfigJson(const model::Gemma4AudioConfig& cfg);

}  // namespace gemlet::convert
