// Reads llama.cpp's mmproj GGUF (general.architecture "clip"), the file in which llama.cpp
// users hold Gemma 4's vision tower (projector type gemma4v) and audio tower (gemma4a), and
// turns it back into the towers the Hugging Face path converts (model/gemma4_vision_tensors.h,
// model/gemma4_audio_tensors.h): the same .gemlet tensor names, shapes and values, and the same
// "vision" / "audio" metadata. `gemlet convert MODEL.gguf --mmproj MMPROJ.gguf` adds them to the
// text model of a gemma4 GGUF (gguf_import.h).
//
// What llama.cpp's converter (convert_hf_to_gguf.py, Gemma4VisionAudioModel) did, undone here:
//   * tensor names: TensorSpec::gguf_name of the two tower tables (the clip bounds are
//     `<linear>.input_min` ... as 1-element F32 tensors; HF's are 0-d, .gemlet's [1]);
//   * v.patch_embd: HF's [D, p·p·3] (row, col, channel) was reshaped to (D, p, p, 3) and
//     permuted to a [D, 3, p, p] conv kernel; permuted back, element for element, at its type;
//   * a.blk.N.per_dim_scale: stored as softplus(per_dim_scale); the tower applies softplus
//     itself, so the HF value is recovered (InverseSoftplus) and the tower code stays as is;
//   * a.blk.N.conv_dw: HF's [C, 1, K] reshaped to [C, K] (same bytes);
//   * no +1 on any norm; in F16 files the norms, 1-D tensors, the position table, the conv
//     kernels and a.input_projection stay F32 (they are read at their types, as HF's bf16).
// The configs come from the clip.vision.* / clip.audio.* keys and the tensor shapes; what
// llama.cpp does not write is Gemma 4's fixed value (mmproj_import.cc says which).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "format/gguf.h"
#include "format/vocab.h"
#include "tools/convert/source.h"

namespace gemlet::convert {

// The towers of one mmproj file, as Checkpoint holds them.
struct MmprojTowers {
  std::vector<Checkpoint::Item> vision_tensors;  // ExpectedVisionTensors order; empty: no tower
  nlohmann::json vision;                         // Gemma4VisionConfig::ToJson(), or null
  std::vector<Checkpoint::Item> audio_tensors;   // ExpectedAudioTensors order
  nlohmann::json audio;                          // Gemma4AudioConfig::ToJson(), or null
  // The rewritten tensors (the patch embedding, per_dim_scale) that the items point into.
  std::vector<std::vector<uint8_t>> owned;
};

// The towers of `mmproj` for a text model of hidden size `text_hidden_size` whose vocabulary
// is `vocab` (the image/audio token ids are its <|image> <|image|> <image|> <|audio> <|audio|>
// <audio|> pieces; Gemma 4's ids if it has none, as HF's config defaults). Every error names
// the file and the key or tensor: not a clip file, a projector type other than gemma4v /
// gemma4a, a projection whose output is not the text hidden size, a missing, misshapen or
// unexpected tensor. The items view `mmproj`'s bytes (and `owned`): keep both alive.
Result<MmprojTowers> ReadMmproj(const GgufFile& mmproj, int64_t text_hidden_size, const Vocab& vocab);

// Opens the mmproj at `path` and adds its towers to `ck` (a text GGUF checkpoint): the file
// joins ck->files (hashed for provenance), ck->mmproj keeps it mapped.
Status AddMmproj(const std::string& path, Checkpoint* ck);

// The float x whose softplus llama.cpp stored as `s` (> 0, finite). The f32 softplus that
// llama.cpp's converter computes (torch) is not correctly rounded, so softplus⁻¹(s) is not x:
// among the floats whose softplus lies within 4 ulps of `s`, a bf16 value (the one with the
// fewest significant bits) is the checkpoint's own, since Gemma 4's weights are bf16; without
// one, the float nearest softplus⁻¹(s) (computed in double). Every bf16 x with |x| > 1e-3 comes
// back bit for bit; closer to 0, softplus(x) ≈ ln 2 + x/2 has lost x's low bits and the result
// is within 1e-6 of it.
float InverseSoftplus(float s);

}  // namespace gemlet::convert
