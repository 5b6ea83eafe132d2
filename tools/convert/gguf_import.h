// Opens a gemma4 GGUF file (llama.cpp layout, ../shared/spec/gemma4-text.md Appendix A) for
// conversion: the gemma4.* metadata mapped to an HF text_config, the tokenizer.ggml.*
// vocabulary, and the tensors by their GGUF names.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "format/gguf.h"
#include "tools/convert/source.h"

namespace gemlet::convert {

// The HF-style text_config of a gemma4 GGUF, accepted by Gemma4Config::FromJson:
//   layer_types from attention.sliding_window_pattern (true = sliding), head_dim from
//   attention.key_length_swa, global_head_dim from attention.key_length, intermediate_size and
//   use_double_wide_mlp from the feed_forward_length array (KV-shared layers 2x), rope thetas
//   from rope.freq_base(_swa), the full layers' partial_rotary_factor from the rope_freqs tensor
//   (leading 1.0 entries rotate, the rest ~1e30 freeze: it must be exactly that pattern),
//   num_kv_shared_layers, final_logit_softcapping, hidden_size_per_layer_input, vocab_size from
//   the token list. f32 values are written as the shortest decimal that round-trips (1e-6, not
//   9.99999997e-7), so the result equals the HF config of the same checkpoint.
// An architecture other than gemma4 is an error naming the file and the architecture.
Result<nlohmann::json> GgufTextConfig(const GgufFile& gguf);

// Every tensor of ExpectedTensors(config) must be present with the expected shape; a tensor that
// is neither expected nor skipped by model::IsSkippedGgufTensor is an error.
Result<Checkpoint> LoadGgufCheckpoint(const std::string& path);

// The shortest decimal that reads back as `f` (as a double): 9.99999997e-7f -> 1e-6.
double ShortestDecimal(float f);

}  // namespace gemlet::convert
