// Engine: the immutable part of a loaded model — the .gemlet mapping, the bound weights,
// the config, the stop tokens and a thread pool. One engine serves any number of sessions
// (runtime/session.h), also from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor_type.h"
#include "base/thread_pool.h"
#include "format/gemlet_file.h"
#include "model/gemma4_config.h"
#include "model/gemma4_drafter.h"
#include "model/gemma4_model.h"
#include "ops/matmul.h"
#include "text/tokenizer.h"

namespace gemlet::runtime {

struct EngineOptions {
  int threads = 0;  // 0 = one per hardware thread (prefill, and decode unless decode_threads)
  // Threads for one-token steps (decode); 0 = the same pool as `threads`. Decode is memory-
  // bound and may want fewer threads than the compute-bound prefill.
  int decode_threads = 0;
  // kFast (default): the int8 kernels for quantized weights (ops/matmul.h); kExact: f32 math
  // over dequantized weights, the reference path.
  ops::MatMulMode mode = ops::MatMulMode::kFast;
  // Element type of the sessions' KV caches (runtime/kv_cache.h), kF32, kF16 or kQ8: f16
  // halves their memory and attention's reads, q8 (34 bytes per 32 values) halves them again
  // at the cost of 8-bit K/V values (Open fails for q8 unless every head size is a multiple
  // of 32). Unset: kF16 in kFast mode, kF32 in kExact mode.
  std::optional<TensorType> kv_type;
  // An MTP drafter file (gemlet convert ASSISTANT_DIR) to load beside the model; empty: the
  // drafter embedded in the model's file, if it has one (gemlet convert --assistant).
  std::string drafter_path;
  // Per layer kind, over kv_type: the full-attention layers (which hold the whole context and
  // dominate the KV memory at depth) and the sliding-window layers (a ring of the window).
  std::optional<TensorType> kv_type_full, kv_type_sliding;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Open(const std::string& path, const EngineOptions& options = {});

  const GemletFile& file() const { return *file_; }
  const model::Gemma4Model& model() const { return *model_; }
  const model::Gemma4Config& config() const { return model_->config(); }
  ThreadPool* pool() const { return pool_.get(); }
  // The pool for one-token steps (EngineOptions::decode_threads); pool() if not set apart.
  ThreadPool* decode_pool() const { return decode_pool_ ? decode_pool_.get() : pool_.get(); }
  ops::MatMulMode mode() const { return options_.mode; }
  // The full-attention layers' KV type: EngineOptions::kv_type_full, kv_type, or the mode's
  // default (f16 in kFast mode, f32 in kExact mode).
  TensorType kv_type() const { return options_.kv_type_full.value_or(kv_type_all()); }
  // The sliding-window layers' KV type: EngineOptions::kv_type_sliding, kv_type, or the default.
  TensorType kv_type_sliding() const { return options_.kv_type_sliding.value_or(kv_type_all()); }
  int threads() const { return pool_->num_threads(); }

  // End-of-generation ids: metadata "tokenizer".eog_ids (default [1, 106, 50]).
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  bool IsEog(int32_t id) const;
  int32_t bos_id() const { return bos_id_; }
  // The tokenizer built from the file's vocabulary, or null if the file has none.
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // The MTP drafter (EngineOptions::drafter_path or embedded), checked to fit the model at
  // Open; null if there is none.
  const model::Gemma4Drafter* drafter() const { return drafter_.get(); }

 private:
  Engine() = default;
  TensorType kv_type_all() const {
    return options_.kv_type.value_or(options_.mode == ops::MatMulMode::kExact ? TensorType::kF32 : TensorType::kF16);
  }
  EngineOptions options_;
  std::unique_ptr<GemletFile> file_;
  std::unique_ptr<model::Gemma4Model> model_;
  std::unique_ptr<GemletFile> drafter_file_;  // null: none, or embedded in file_
  std::unique_ptr<model::Gemma4Drafter> drafter_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ThreadPool> decode_pool_;  // null: decode uses pool_
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> eog_ids_;
  int32_t bos_id_ = 2;
};

}  // namespace gemlet::runtime
