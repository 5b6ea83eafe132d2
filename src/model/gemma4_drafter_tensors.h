// The tensors of a Gemma 4 MTP drafter (the assistant checkpoint, spec-multimodal §3.2): their
// .gemlet names (all under "drafter.", so that a drafter can sit in its target's file), shapes
// (outermost first), Hugging Face names and quantization classes. The single source of truth
// for the converter, the synthesizer and the loader (model/gemma4_drafter.h).
#pragma once

#include <string>
#include <vector>

#include "model/gemma4_drafter_config.h"
#include "model/gemma4_tensors.h"

namespace gemlet::model {

// The prefix of every drafter tensor in a .gemlet file.
extern const char kDrafterPrefix[];
// The metadata key of the drafter's config (Gemma4DrafterConfig::ToJson) in a .gemlet file:
// a drafter file, or a target file with its drafter as a second section.
extern const char kDrafterMetadataKey[];
// The sparse head's tensors in a gemma4-assistant GGUF (llama.cpp's names; its converter does
// not write them, so their presence is what says a GGUF has the sparse head).
extern const char kDrafterGgufCentroids[];
extern const char kDrafterGgufTokenOrdering[];

// Every tensor a drafter of `cfg` needs, in file order (globals, then layer by layer). The
// centroids and the token ordering only with use_ordered_embeddings. TensorSpec::gguf_name is
// the name in llama.cpp's gemma4-assistant GGUF (whose converter leaves out the centroids and
// the token ordering; its loader knows their names: masked_embd_centroids.weight,
// masked_embd_ordering).
std::vector<TensorSpec> DrafterTensors(const Gemma4DrafterConfig& cfg);

}  // namespace gemlet::model
