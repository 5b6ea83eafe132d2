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

#include <span>

#include "base/status.h"
#include "runtime/generate.h"
#include "runtime/session.h"

namespace gemlet::runtime {

// Generate (runtime/generate.h) with options.speculative (mode ≠ kOff): the same checks,
// the same result and the same tokens; timings.speculative counts the rounds.
Result<GenerateResult> GenerateSpeculative(Session& session, std::span<const int32_t> prompt,
                                           const GenerateOptions& options, const TokenCallback& on_token);

}  // namespace gemlet::runtime
