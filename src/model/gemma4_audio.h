// Gemma 4's audio tower (the conformer) and embed_audio on the project's ops
// (spec-multimodal §2.2; HF modeling_gemma4.py: Gemma4AudioSubSampleConvProjection,
// Gemma4AudioAttention, Gemma4AudioLightConv1d, Gemma4AudioFeedForward, Gemma4AudioLayer,
// Gemma4AudioModel, Gemma4MultimodalEmbedder; ../shared/oracle/tiny-e2b-audio/README.md): the
// log-mel features of one clip in, its soft tokens [n_soft, D] (rows of the decoder's input
// embedding) out.
//
// Every layer is causal (the attention sees the current frame and the P − 1 before it, the
// depthwise convolution the K − 1 before it), so the padding frames after the last valid one
// never reach a valid row: the conformer runs over the valid rows only. That also makes the
// chunked (blocked) attention of HF the same as the dense local window computed here.
//
// Bound from a .gemlet file only when audio is encoded: a text-only engine never touches
// the tower's pages.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "format/gemlet_file.h"
#include "model/clipped_linear.h"
#include "model/gemma4_audio_features.h"
#include "model/gemma4_audio_tensors.h"
#include "ops/matmul.h"
#include "ops/weight.h"

namespace gemlet::model {

struct Gemma4AudioFeedForward {
  std::vector<float> pre_norm, post_norm;
  ClippedLinear up, down;  // [4·Da, Da], [Da, 4·Da]
};

struct Gemma4AudioLayer {
  Gemma4AudioFeedForward ffn1, ffn2;
  std::vector<float> attn_pre_norm, attn_post_norm, per_dim_scale, conv_pre_norm, conv_norm, norm_out;
  ClippedLinear q, k, v, o, conv_start, conv_end;
  ops::Weight rel_k;            // [Da, Da] relative_k_proj (plain)
  std::vector<float> conv_dw;   // [Da, K] causal depthwise kernel
};

// Intermediates an encode can hand back (for tests that localise a difference).
struct AudioTrace {
  std::vector<float> sscp;   // [T/4, Da] subsample_conv_projection's output, every row
  std::vector<float> tower;  // [n_soft, output_proj_dims] output_proj's output
};

class Gemma4Audio {
 public:
  // True if the file's metadata has an "audio" config (a converted checkpoint with a tower).
  static bool Present(const GemletFile& file);
  // Binds every tensor of ExpectedAudioTensors; `file` must outlive the tower.
  static Result<std::unique_ptr<Gemma4Audio>> Bind(const GemletFile& file);

  const Gemma4AudioConfig& config() const { return cfg_; }
  // Soft tokens of features with n_valid valid frames: ceil(ceil(n_valid/2)/2).
  static int64_t n_soft(int64_t n_valid) { return ((n_valid + 1) / 2 + 1) / 2; }

  // soft [n_soft, D] for one clip's features. `pool` may be null. Deterministic for any
  // thread count. Errors for features of the wrong width or without a valid frame.
  Status Encode(const AudioFeatures& features, ops::MatMulMode mode, ThreadPool* pool, std::vector<float>* soft,
                AudioTrace* trace = nullptr) const;

 private:
  Gemma4Audio() = default;
  void Subsample(const AudioFeatures& f, ops::MatMulMode mode, ThreadPool* pool, std::vector<float>* out) const;
  void Attention(const Gemma4AudioLayer& L, float* x, int64_t T, ops::MatMulMode mode, ThreadPool* pool) const;

  Gemma4AudioConfig cfg_;
  ops::Weight conv0_, conv1_;  // [C0, 9], [C1, C0·9] (the kernels flattened (c_in, kh, kw))
  std::vector<float> conv0_norm_, conv1_norm_;
  ops::Weight input_proj_;     // [Da, F/4·C1]
  std::vector<Gemma4AudioLayer> layers_;
  ops::Weight output_proj_;    // [Po, Da]
  std::vector<float> output_bias_;
  ops::Weight embed_proj_;     // [D, Po]
  std::vector<float> rel_pos_;  // [P + 1, Da]: row d is the sinusoidal embedding of distance d
};

}  // namespace gemlet::model
