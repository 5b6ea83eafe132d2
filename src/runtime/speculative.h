// Speculative decoding over one session (issue #16): each round drafts K tokens after the
// last sampled one t (the MTP drafter, model/gemma4_drafter.h, or prompt lookup,
// runtime/prompt_lookup.h), verifies [t, d1 … dK] in one K + 1-row pass of the session, keeps
// the longest prefix of drafts the target agrees with plus the target's own next token, and
// rolls the rest back with Session::Truncate (exact; the sliding rings keep the rows:
// runtime/kv_cache.h).
//
// Agreement is decided by sampling, not by comparing argmaxes: at verify row j the session's
// sampler draws the token exactly as plain decoding would at that position (same logits bit
// for bit, since a row's outputs do not depend on the rows beside it; same penalty history;
// same constraint state; the next draws of the same RNG), and draft d(j+1) is accepted when
// the draw equals it. For a proposer that drafts one token with certainty (both here do) that
// is speculative rejection sampling (Leviathan et al. 2023, Chen et al. 2023) with
// q = δ(d): accepted with probability p(d) = min(1, p(d)/q(d)), and on rejection the token is
// drawn from p without d, the normalized max(0, p − q). So the output is not only distributed
// as plain sampling's — with every sampler setting and any TokenConstraint — it is the same
// sequence for the same seed; greedy (temperature 0) is plain greedy token for token.
//
// A TokenConstraint (a grammar) sees only the tokens generated: the drafts are checked
// against it beforehand (Accept each, then Rollback) and cut at the first it refuses, since
// such a draft can never be accepted.
#pragma once

#include <functional>
#include <random>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/gemma4_drafter.h"
#include "runtime/draft_policy.h"
#include "runtime/generate.h"
#include "runtime/session.h"

namespace gemlet::runtime {

// Whether `options` can be served by `engine` (mode mtp needs a drafter): an InvalidArgument
// saying what to give otherwise. Checked by Generate before the prefill.
Status CheckSpeculative(const Engine& engine, const SpeculativeOptions& options);
// Whether the rounds draft with the MTP drafter, which starts from the target's final hidden
// state after the prompt (Generate then prefills with it).
bool UsesDrafter(const Engine& engine, const SpeculativeOptions& options);

// The state of speculative decoding of one sequence across rounds: the options, the policy
// (acceptance and measured costs), the drafter's input h, the counters and the buffers.
// (A Session::Extra: EngineModel keeps one with each session it drafts for.)
struct DraftState : Session::Extra {
  DraftState(const Engine& engine, const SpeculativeOptions& options);
  SpeculativeOptions options;
  bool use_mtp = false, use_lookup = false;
  DraftPolicy policy;
  // The final hidden state after the token at position h_pos − 1 [D]: the MTP drafter's h
  // when the next round starts at h_pos (else that round does not use the drafter, and its
  // verify pass gives the next one its h). Each round sets it, and so does each
  // EngineModel::Step that computes the sequence's logits (a prefill's last chunk, a batched
  // decode row); EngineModel::Truncate below h_pos forgets it.
  std::vector<float> h;
  int64_t h_pos = -1;
  SpeculativeStats stats;
  std::mt19937_64 oracle_rng;
  // Buffers: logits [K + 1, V] and hidden states [K + 1, D] of a verify pass (K ≤ draft_max;
  // sized at the first round), and the rest.
  std::vector<float> logits, hidden, h_next;
  std::vector<int32_t> drafts, feed, context;
  std::vector<int64_t> rows;
  model::DraftScratch scratch;
};

// Cuts the drafts at the first one that can never be accepted (a grammar's refusal); null: none.
using DraftTrim = std::function<Status(std::vector<int32_t>* drafts)>;

// One round of speculative decoding after `t`, the last sampled token (not yet fed), at most
// `room` drafts: draft (MTP or lookup, the policy's K), verify [t, d1 … dK] in one pass, call
// `draw` per row while the draws equal the drafts, and roll back the rows after the last
// accepted one. `index` is the generated-token index of d1 (the bench's oracle). On return
// the session holds t and the accepted drafts; *more says whether the generation goes on
// (then the last draw is the next round's t).
Status SpeculativeRound(Session& session, DraftState& state, int32_t t, int64_t room, int64_t index,
                        const DraftTrim& trim, const RowDraw& draw, bool* more);

// The decode loop of Generate (runtime/generate.h) with options.speculative (mode ≠ kOff),
// after Generate has prefilled the prompt: `logits` [V] are those after the prompt's last
// token, `hidden` [D] its final hidden state (null unless UsesDrafter). Appends to res->ids
// and counts res->timings (decode_ms, sample_ms, speculative); the same tokens as the plain
// loop. options.constraint, if any, is the one Generate times.
Status DecodeSpeculative(Session& session, std::span<const float> logits, const float* hidden,
                         const GenerateOptions& options, const TokenCallback& on_token, GenerateResult* res);

}  // namespace gemlet::runtime
