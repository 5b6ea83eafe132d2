#include "runtime/speculative.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "model/gemma4_drafter.h"
#include "runtime/draft_policy.h"
#include "runtime/prompt_lookup.h"

namespace gemlet::runtime {

namespace {

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The state of one generation: what has been generated and how it may end.
class Loop {
 public:
  Loop(Session& session, const GenerateOptions& options, const TokenCallback& on_token, GenerateResult* res)
      : s_(session), opt_(options), on_token_(on_token), res_(res), V_(session.engine().config().vocab_size) {}

  // The token the sampler draws from logits `row` [V] with the first `history` fed tokens as
  // the penalties' window: exactly the draw of plain decoding at that position.
  int32_t Sample(const float* row, int64_t history) {
    if (opt_.constraint) opt_.constraint->SetBudget(opt_.max_tokens - generated());
    return s_.sampler().Sample(std::span<const float>(row, V_),
                               std::span<const int32_t>(s_.history()).first(history), opt_.constraint);
  }
  // Takes a sampled token as plain Generate does; false when the generation ends with it
  // (or an error, in status()).
  bool Take(int32_t id) {
    if (id == kNoToken) {
      res_->dead_end = true;
      return false;
    }
    if (opt_.constraint) {
      status_ = opt_.constraint->Accept(id);
      if (!status_.ok()) return false;
    }
    res_->ids.push_back(id);
    const bool stop = opt_.stop_at_eog && s_.engine().IsEog(id);
    if (on_token_ && !on_token_(id)) return false;
    if (stop) {
      res_->stopped_at_eog = true;
      return false;
    }
    return generated() < opt_.max_tokens;
  }
  int64_t generated() const { return static_cast<int64_t>(res_->ids.size()); }
  const Status& status() const { return status_; }

  // Cuts `drafts` at the first token the constraint refuses after the ones before it (those
  // can never be accepted); the constraint ends as it was.
  Status TrimToConstraint(std::vector<int32_t>* drafts) {
    TokenConstraint* c = opt_.constraint;
    if (c == nullptr) return Status::Ok();
    // (the token generated at index generated() is the one sampled after t: drafts[0])
    int64_t n = 0;
    for (; n < static_cast<int64_t>(drafts->size()); ++n) {
      c->SetBudget(opt_.max_tokens - generated() - n);
      if (!c->Allows((*drafts)[n])) break;
      RETURN_IF_ERROR(c->Accept((*drafts)[n]));
    }
    drafts->resize(n);
    return c->Rollback(n);
  }

 private:
  Session& s_;
  const GenerateOptions& opt_;
  const TokenCallback& on_token_;
  GenerateResult* res_;
  const int64_t V_;
  Status status_;
};

}  // namespace

Result<GenerateResult> GenerateSpeculative(Session& session, std::span<const int32_t> prompt,
                                           const GenerateOptions& options, const TokenCallback& on_token) {
  const SpeculativeOptions& so = options.speculative;
  RETURN_IF_ERROR(so.Validate());
  const Engine& engine = session.engine();
  const model::Gemma4Drafter* drafter = engine.drafter();
  if (so.mode == DraftMode::kMtp && drafter == nullptr) {
    return InvalidArgument("--draft mtp needs an MTP drafter: the model's file has none; give one with --drafter FILE");
  }
  const bool use_mtp = drafter != nullptr && (so.mode == DraftMode::kMtp || so.mode == DraftMode::kAuto);
  const bool use_lookup = so.mode == DraftMode::kLookup || so.mode == DraftMode::kAuto;
  const int64_t V = engine.config().vocab_size, D = engine.config().hidden_size;

  GenerateResult res;
  SpeculativeStats& stats = res.timings.speculative;
  res.timings.prompt_tokens = static_cast<int64_t>(prompt.size());
  std::vector<float> logits((kMaxDraft + 1) * V);  // [K + 1, V] of a verify pass
  std::vector<float> hidden((kMaxDraft + 1) * D);  // [K + 1, D] its final hidden states (MTP)
  float* hid = use_mtp ? hidden.data() : nullptr;
  auto t0 = Clock::now();
  const int64_t last = static_cast<int64_t>(prompt.size()) - 1;
  RETURN_IF_ERROR(session.PrefillRows(prompt, std::span<const int64_t>(&last, 1), logits.data(), {}, nullptr, hid));
  res.timings.prefill_ms = MsSince(t0);
  t0 = Clock::now();

  Loop loop(session, options, on_token, &res);
  DraftPolicy policy(so.draft_max);
  std::mt19937_64 oracle_rng(so.oracle_seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto from_oracle = [&](int64_t index, int32_t* d) {  // bench mode: maybe the known continuation
    if (so.oracle.empty()) return;
    const bool take = unit(oracle_rng) < so.oracle_p;
    if (take && index < static_cast<int64_t>(so.oracle.size())) *d = so.oracle[index];
  };
  std::vector<float> h(hidden.begin(), hidden.begin() + D), h_next(D);  // the drafter's input h
  std::vector<int32_t> drafts, feed, context;
  std::vector<int64_t> rows;
  model::DraftScratch ds;
  const model::ForwardOptions fopt{engine.mode(), engine.decode_pool()};

  bool more = options.max_tokens > 0 && loop.Take(loop.Sample(logits.data(), session.position()));
  while (more) {
    // The session holds every token but the last generated one, t, which goes to position n0.
    const int64_t n0 = session.position(), gen = loop.generated();
    const int32_t t = res.ids.back();
    const int64_t room = std::min(so.draft_max, options.max_tokens - gen - 1);  // drafts that can be used

    // The proposer of this round and its drafts.
    const auto td = Clock::now();
    drafts.clear();
    Proposer proposer = Proposer::kMtp;
    bool propose = false;
    LookupMatch match;
    if (use_lookup && room > 0) {
      context.assign(session.history().begin(), session.history().end());
      context.push_back(t);
      const int64_t min_ngram = use_mtp ? std::max<int64_t>(2, so.lookup_min_ngram) : so.lookup_min_ngram;
      match = PromptLookup(context, so.lookup_max_ngram, min_ngram, room);
      if (!match.draft.empty()) {
        proposer = Proposer::kLookup;
        propose = true;
      }
    }
    if (!propose && use_mtp && room > 0) propose = true;
    int64_t K = 0;
    if (propose) {
      const int64_t limit = proposer == Proposer::kLookup ? static_cast<int64_t>(match.draft.size()) : room;
      K = so.adaptive ? policy.Choose(proposer, limit) : limit;
    }
    if (K > 0 && proposer == Proposer::kLookup) {
      drafts.assign(match.draft.begin(), match.draft.begin() + K);
      for (int64_t k = 0; k < K; ++k) from_oracle(gen + k, &drafts[k]);
      ++stats.lookup_rounds;
    } else if (K > 0) {
      int32_t tok = t;
      for (int64_t k = 0; k < K; ++k) {
        model::DraftOutput out;
        out.h_next = h_next.data();
        RETURN_IF_ERROR(model::DraftStep(*drafter, engine.model(), session.kv_cache(), tok, h.data(),
                                         model::DraftHead::kSparse, &ds, fopt, &out));
        tok = out.token;
        from_oracle(gen + k, &tok);
        drafts.push_back(tok);
        h.swap(h_next);
      }
      ++stats.mtp_rounds;
    }
    RETURN_IF_ERROR(loop.TrimToConstraint(&drafts));
    K = static_cast<int64_t>(drafts.size());
    const double draft_ms = MsSince(td);
    stats.draft_ms += draft_ms;
    if (K > 0) policy.MeasureDraft(proposer, draft_ms / K);

    // One pass over [t, d1 … dK]; the logits (and hidden states) of every row.
    feed.assign(1, t);
    feed.insert(feed.end(), drafts.begin(), drafts.end());
    rows.resize(K + 1);
    for (int64_t r = 0; r <= K; ++r) rows[r] = r;
    const auto tv = Clock::now();
    RETURN_IF_ERROR(session.PrefillRows(feed, rows, logits.data(), {}, nullptr, hid));
    const double verify_ms = MsSince(tv);
    policy.MeasureVerify(K + 1, verify_ms);
    if (K == 0) {
      ++stats.plain_steps;
    } else {
      ++stats.rounds;
      stats.drafted += K;
      stats.verify_ms += verify_ms;
    }

    // Row j's draw is the token after feed[j]; draft j + 1 stands while the draws equal it.
    int64_t j = 0, accepted = 0;
    for (;; ++j) {
      const int32_t id = loop.Sample(logits.data() + j * V, n0 + j + 1);
      const bool agrees = j < K && id == drafts[j];
      accepted += agrees ? 1 : 0;
      more = loop.Take(id);
      if (!more || !agrees) break;
    }
    RETURN_IF_ERROR(loop.status());
    if (K > 0) {
      stats.accepted += accepted;
      policy.Observe(proposer, K, accepted);
    }
    // Keep [t, d1 … dj]; the draw at row j is the next round's t.
    if (n0 + j + 1 < session.position()) RETURN_IF_ERROR(session.Truncate(n0 + j + 1));
    if (hid) std::copy(hidden.begin() + j * D, hidden.begin() + (j + 1) * D, h.begin());
  }
  RETURN_IF_ERROR(loop.status());
  res.timings.decode_ms = MsSince(t0);
  res.timings.generated_tokens = loop.generated();
  return res;
}

}  // namespace gemlet::runtime
