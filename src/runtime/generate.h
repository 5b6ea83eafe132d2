// Text generation over a session: prefill the prompt, then sample and decode token by token
// until an end-of-generation token or the token budget.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "runtime/media.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/speculative_options.h"
#include "runtime/token_constraint.h"

namespace gemlet::runtime {

// Prefill progress: called before the prompt's first chunk (done = 0) and after each chunk of
// SessionOptions::prefill_chunk tokens with the prompt tokens fed so far and the prompt's
// size. Returning false stops the prefill there (Ctrl+C): what was fed stays in the session
// and nothing is generated (GenerateResult::prefill_stopped). The chunks are the ones a
// plain prefill uses, so the logits are the same bits with or without it.
using PrefillProgress = std::function<bool(int64_t done, int64_t total)>;

struct GenerateOptions {
  int64_t max_tokens = 256;  // generated tokens at most (the -n flag)
  bool stop_at_eog = true;   // stop after an end-of-generation token (engine.eog_ids())
  // What may be sampled (a grammar; runtime/grammar_constraint.h), advanced by each token;
  // null: anything. Not owned.
  TokenConstraint* constraint = nullptr;
  PrefillProgress on_prefill;  // null: the prompt is prefilled in one call
  // Speculative decoding (runtime/speculative.h): the same tokens, fewer passes over the
  // weights when drafts are accepted. Off by default.
  SpeculativeOptions speculative;
};

struct GenerateTimings {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_ms = 0;  // prompt prefill including its last logits
  double decode_ms = 0;   // every later forward step plus sampling
  SpeculativeStats speculative;  // the rounds of speculative decoding (zeros when off)
  // Parts of prefill_ms + decode_ms: the sampler's time (the constraint's included), and the
  // time spent in the constraint's calls (SetBudget, Allows, Mask, Accept); `masks`: how many
  // steps needed the constraint's full mask (their pick was refused). Drafting too counts
  // them (the drafts' constraint checks included).
  double sample_ms = 0;
  double constraint_ms = 0;
  int64_t masks = 0;
  double prefill_tok_s() const { return prefill_ms > 0 ? prompt_tokens * 1000.0 / prefill_ms : 0; }
  // Decode speed counts the steps after the first generated token (each needs one forward).
  double decode_tok_s() const {
    return decode_ms > 0 && generated_tokens > 1 ? (generated_tokens - 1) * 1000.0 / decode_ms : 0;
  }
};

struct GenerateResult {
  std::vector<int32_t> ids;  // generated ids, including the end-of-generation token if one ended it
  bool stopped_at_eog = false;
  // The constraint allowed no token at all (a grammar's dead end): the generation stopped.
  bool dead_end = false;
  // on_prefill stopped the prefill: timings.prompt_tokens tokens of the prompt were fed (and
  // stay in the session), none were generated.
  bool prefill_stopped = false;
  GenerateTimings timings;
};

// Called with each generated id as soon as it is sampled; return false to stop early.
using TokenCallback = std::function<bool(int32_t id)>;

// Checks before any work that session.position() + prompt + max_tokens fits the session's
// context limit (OutOfRange with the numbers otherwise). Samples with session.sampler().
Result<GenerateResult> Generate(Session& session, std::span<const int32_t> prompt,
                                const GenerateOptions& options, const TokenCallback& on_token = nullptr);
// The same with media rows in the prompt (runtime/media.h).
Result<GenerateResult> Generate(Session& session, const MediaPrompt& prompt, const GenerateOptions& options,
                                const TokenCallback& on_token = nullptr);

}  // namespace gemlet::runtime
