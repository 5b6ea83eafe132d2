// Session: one sequence's mutable state over a shared Engine, and its one owner — the KV
// cache, the position, the tokens fed so far, the sampler and its RNG, and the forward pass's
// scratch buffers. It is the Sequence of EngineModel (runtime/engine_model.h), which advances
// several sessions in one forward pass. Not thread-safe itself; distinct sessions may run
// concurrently on one engine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/forward_types.h"
#include "runtime/engine.h"
#include "runtime/kv_cache.h"
#include "runtime/media.h"
#include "runtime/sampler.h"
#include "runtime/sequence_model.h"

namespace gemlet::runtime {

struct SessionOptions {
  int64_t context_limit = 4096;  // positions the session may hold; capped at the model's maximum
  int64_t prefill_chunk = 256;   // tokens per forward step during prefill (≥ 1)
  // Prefill skip (model::ForwardOptions::skip_shared_rows): KV-shared layers run only for
  // the rows whose logits are wanted. Logit-identical either way.
  bool skip_shared_rows = true;
};

class Session : public Sequence {
 public:
  explicit Session(const Engine& engine, const SessionOptions& options = {});

  // Feeds `tokens` after what the session holds, in chunks of prefill_chunk. If `logits` is
  // non-null it receives the logits of the last token [V], or with all_rows the logits of
  // every fed token [n, V]. The context limit and the token ids are checked before any
  // work: on error the session is unchanged.
  Status Prefill(std::span<const int32_t> tokens, std::vector<float>* logits, bool all_rows = false);
  // The same with given input embeddings (image soft tokens): the rows `embed_rows` of
  // `tokens` (increasing indices into tokens) take the rows of embeddings [embed_rows.size(), D]
  // as they are, and use the pad id for their per-layer token embedding (Gemma4Model.forward);
  // the history keeps the ids given (e.g. <|image|>).
  Status Prefill(std::span<const int32_t> tokens, std::span<const int64_t> embed_rows, const float* embeddings,
                 std::vector<float>* logits, bool all_rows = false);
  // The same with the media rows of a MediaPrompt (runtime/media.h), which the session keeps
  // (media()), so that Truncate and Fork reproduce them and the prefix cache compares them.
  // If `hidden` is non-null (and `logits` too) it receives the last token's final hidden
  // state after the final norm [D] (as PrefillRows; what the MTP drafter starts from).
  Status Prefill(const MediaPrompt& prompt, std::vector<float>* logits, float* hidden = nullptr);
  // Feeds `tokens` likewise, writing the logits after tokens[rows[i]] to logits [rows.size(), V]
  // (rows increasing, within the tokens); only those rows' logits are computed (the forward
  // pass's out_rows), so the KV-shared layers run only for them.
  // With embedding rows as in the Prefill above. If `hidden` is non-null it receives those
  // rows' final hidden states after the final norm [rows.size(), D] (what the MTP drafter
  // reads: model::Batch::hidden).
  Status PrefillRows(std::span<const int32_t> tokens, std::span<const int64_t> rows, float* logits,
                     std::span<const int64_t> embed_rows = {}, const float* embeddings = nullptr,
                     float* hidden = nullptr);
  // One token: logits [V] of the position after it.
  Status Decode(int32_t token, std::vector<float>* logits);

  // Starts over (position 0, RNG reseeded); allocations are kept for the next prompt.
  void Reset();
  // Rolls back to the first n ≤ position() tokens, exactly: the session then computes what a
  // fresh session fed those n tokens would. Within kv_cache.h's kKvRollback positions (or
  // before the sliding window wraps) the cache is cut in place; further back the n tokens are
  // prefilled again. The sampler is left as it is.
  Status Truncate(int64_t n);
  // A new session holding the first n ≤ position() tokens of this one (n < 0: all), with
  // this one's options and a copy of its sampler (RNG state included): it continues exactly
  // as this one would.
  Result<std::unique_ptr<Session>> Fork(int64_t n = -1) const;
  // Replaces the state with a saved one (runtime/session_file.h): Reset(), then `fill` stores
  // the K/V rows of positions [0, tokens.size()) in the emptied cache through the KvStore
  // protocol, and `tokens` becomes the history. On error the session is left empty.
  Status Restore(std::span<const int32_t> tokens, const std::function<Status(KvCache&)>& fill);

  // The context limit a session of `engine` gets for SessionOptions::context_limit `requested`
  // (≤ 0 or above the model's positions: the model's positions).
  static int64_t EffectiveLimit(const Engine& engine, int64_t requested);

  int64_t position() const { return kv_.size(); }
  std::span<const int32_t> tokens() const override { return history_; }
  // The media rows fed with Prefill(MediaPrompt), by position (the Prefill with raw embedding
  // rows records none: a Truncate that prefills again does not reproduce those).
  std::span<const MediaSpan> media() const override { return media_; }
  int64_t context_limit() const { return kv_.context_limit(); }
  const std::vector<int32_t>& history() const { return history_; }
  const Engine& engine() const { return engine_; }
  const KvCache& kv_cache() const { return kv_; }
  Sampler& sampler() { return sampler_; }
  void set_sampler(const SamplerOptions& options) { sampler_ = Sampler(options); }
  void set_prefill_chunk(int64_t chunk) { chunk_ = chunk < 1 ? 1 : chunk; }
  int64_t prefill_chunk() const { return chunk_; }
  // State a driver keeps with the session (EngineModel: speculative decoding's DraftState);
  // not copied by Fork.
  struct Extra {
    virtual ~Extra() = default;
  };
  std::unique_ptr<Extra>& extra() { return extra_; }

 private:
  friend class EngineModel;  // feeds the KV cache and history in batches

  // Records the spans of `media` (starts relative to the tokens fed at position `base`) that
  // fall within the `fed` tokens fed there, merging a span an earlier chunk began.
  void RecordMedia(std::span<const MediaSpan> media, int64_t base, int64_t fed);
  // OutOfRange with the numbers if n more tokens do not fit the context limit.
  Status CheckRoom(int64_t n) const;
  // The Prefills: `tokens` in chunks, the logits after tokens[rows[i]] to logits [rows.size(),
  // V] (and, if non-null, their final hidden states to hidden [rows.size(), D]), the rows
  // `embed_rows` taking rows of `embeddings` [embed_rows.size(), D].
  Status Feed(std::span<const int32_t> tokens, std::span<const int64_t> rows, float* logits,
              std::span<const int64_t> embed_rows, const float* embeddings, float* hidden = nullptr);

  const Engine& engine_;
  SessionOptions options_;
  int64_t chunk_;
  bool skip_shared_rows_;
  KvCache kv_;
  model::ForwardScratch scratch_;
  Sampler sampler_;
  std::vector<int32_t> history_;
  std::vector<MediaSpan> media_;  // starts are positions
  std::unique_ptr<Extra> extra_;
  std::vector<int64_t> rows_;
};

}  // namespace gemlet::runtime
