// Opens a gemma4 GGUF file (llama.cpp layout, ../shared/spec/gemma4-text.md Appendix A) for
// conversion: the gemma4.* metadata mapped to an HF text_config, the tokenizer.ggml.*
// vocabulary, and the tensors by their GGUF names.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "format/gguf.h"
#include "model/gemma4_tensors.h"
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

// The HF-style assistant config (model_type gemma4_assistant, accepted by
// Gemma4DrafterConfig::FromJson) of llama.cpp's gemma4-assistant GGUF: the text_config fields
// as GgufTextConfig reads them under "gemma4-assistant.", backbone_hidden_size from
// embedding_length_out, vocab_size from the token list (else token_embd.weight's rows),
// tie_word_embeddings (the GGUF has only the tied table). use_ordered_embeddings iff
// the sparse head's two tensors are there (llama.cpp's converter leaves them out):
// num_centroids from masked_embd_centroids.weight's rows, centroid_intermediate_top_k from the
// key gemma4-assistant.centroid_intermediate_top_k (not llama.cpp's: it has none), else HF's
// default 32. An architecture other than gemma4-assistant is an error.
Result<nlohmann::json> GgufDrafterConfig(const GgufFile& gguf);

// The tensor spec.gguf_name of `g`, which must have spec.shape; the missing one's error reads
// "<file>: <what> <name> is missing".
Result<const GgufTensorInfo*> FindGgufTensor(const GgufFile& g, const model::TensorSpec& spec,
                                             const std::string& what);
// An error naming the first tensor of `g` for which `expected` is false ("... not part of
// <model> with this config").
Status CheckNoOtherGgufTensors(const GgufFile& g, const std::function<bool(const std::string&)>& expected,
                               const std::string& model);

// Every tensor of ExpectedTensors(config) must be present with the expected shape; a tensor that
// is neither expected nor skipped by model::IsSkippedGgufTensor is an error.
Result<Checkpoint> LoadGgufCheckpoint(const std::string& path);

// The shortest decimal that reads back as `f` (as a double): 9.99999997e-7f -> 1e-6.
double ShortestDecimal(float f);

}  // namespace gemlet::convert
