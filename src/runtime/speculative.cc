#include "runtime/speculative.h"

#include <algorithm>
#include <random>
#include <vector>

#include "base/clock.h"
#include "model/gemma4_drafter.h"
#include "runtime/prompt_lookup.h"

namespace gemlet::runtime {

namespace {

// The state of one generation: what has been generated and how it may end.
class Loop {
 public:
  Loop(Session& session, const GenerateOptions& options, const TokenCallback& on_token, GenerateResult* res)
      : s_(session), opt_(options), on_token_(on_token), res_(res), V_(session.engine().config().vocab_size) {}

  // The token the sampler draws from logits `row` [V] with the first `history` fed tokens as
  // the penalties' window: exactly the draw of plain decoding at that position.
  int32_t Sample(const float* row, int64_t history) {
    const auto t0 = SteadyClock::now();
    if (opt_.constraint) opt_.constraint->SetBudget(opt_.max_tokens - generated());
    const int32_t id = s_.sampler().Sample(std::span<const float>(row, V_),
                                           std::span<const int32_t>(s_.history()).first(history), opt_.constraint);
    res_->timings.sample_ms += MsSince(t0);
    return id;
  }
  // Takes a sampled token as plain Generate does; false when the generation ends with it
  // (or an error, in status()).
  bool Take(int32_t id) {
    if (id == kNoToken) {
      res_->dead_end = true;
      return false;
    }
    if (opt_.constraint) {
      const auto t0 = SteadyClock::now();
      status_ = opt_.constraint->Accept(id);
      res_->timings.sample_ms += MsSince(t0);  // (plain decoding counts the Accept as sampling)
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

Status CheckSpeculative(const Engine& engine, const SpeculativeOptions& so) {
  RETURN_IF_ERROR(so.Validate());
  if (so.mode == DraftMode::kMtp && engine.drafter() == nullptr) {
    return InvalidArgument("--draft mtp needs an MTP drafter: the model's file has none; give one with --drafter FILE");
  }
  return Status::Ok();
}

bool UsesDrafter(const Engine& engine, const SpeculativeOptions& so) {
  return engine.drafter() != nullptr && (so.mode == DraftMode::kMtp || so.mode == DraftMode::kAuto);
}

DraftState::DraftState(const Engine& engine, const SpeculativeOptions& o)
    : options(o),
      use_mtp(UsesDrafter(engine, o)),
      use_lookup(o.mode == DraftMode::kLookup || o.mode == DraftMode::kAuto),
      policy(o.draft_max),
      h(engine.config().hidden_size),
      oracle_rng(o.oracle_seed),
      h_next(engine.config().hidden_size) {}

Status SpeculativeRound(Session& session, DraftState& st, int32_t t, int64_t room, int64_t index,
                        const DraftTrim& trim, const RowDraw& draw, bool* more) {
  const SpeculativeOptions& so = st.options;
  const Engine& engine = session.engine();
  const int64_t V = engine.config().vocab_size, D = engine.config().hidden_size;
  SpeculativeStats& stats = st.stats;
  // The session holds every token but t, which goes to position n0.
  const int64_t n0 = session.position();
  room = std::clamp<int64_t>(room, 0, so.draft_max);
  const bool mtp_ready = st.use_mtp && st.h_pos == n0;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto from_oracle = [&](int64_t k, int32_t* d) {  // bench mode: maybe the known continuation
    if (so.oracle.empty()) return;
    const bool take = unit(st.oracle_rng) < so.oracle_p;
    if (take && index + k < static_cast<int64_t>(so.oracle.size())) *d = so.oracle[index + k];
  };

  // The proposer of this round and its drafts.
  const auto td = SteadyClock::now();
  std::vector<int32_t>& drafts = st.drafts;
  drafts.clear();
  Proposer proposer = Proposer::kMtp;
  bool propose = false;
  LookupMatch match;
  if (st.use_lookup && room > 0) {
    st.context.assign(session.history().begin(), session.history().end());
    st.context.push_back(t);
    const int64_t min_ngram = st.use_mtp ? std::max<int64_t>(2, so.lookup_min_ngram) : so.lookup_min_ngram;
    match = PromptLookup(st.context, so.lookup_max_ngram, min_ngram, room);
    if (!match.draft.empty()) {
      proposer = Proposer::kLookup;
      propose = true;
    }
  }
  if (!propose && mtp_ready && room > 0) propose = true;
  int64_t K = 0;
  if (propose) {
    const int64_t limit = proposer == Proposer::kLookup ? static_cast<int64_t>(match.draft.size()) : room;
    K = so.adaptive ? st.policy.Choose(proposer, limit) : limit;
  }
  if (K > 0 && proposer == Proposer::kLookup) {
    drafts.assign(match.draft.begin(), match.draft.begin() + K);
    for (int64_t k = 0; k < K; ++k) from_oracle(k, &drafts[k]);
    ++stats.lookup_rounds;
  } else if (K > 0) {
    const model::ForwardOptions fopt{engine.mode(), engine.decode_pool()};
    int32_t tok = t;
    for (int64_t k = 0; k < K; ++k) {
      model::DraftOutput out;
      out.h_next = st.h_next.data();
      RETURN_IF_ERROR(model::DraftStep(*engine.drafter(), engine.model(), session.kv_cache(), tok, st.h.data(),
                                       model::DraftHead::kSparse, &st.scratch, fopt, &out));
      tok = out.token;
      from_oracle(k, &tok);
      drafts.push_back(tok);
      st.h.swap(st.h_next);
    }
    ++stats.mtp_rounds;
  }
  if (trim && !drafts.empty()) RETURN_IF_ERROR(trim(&drafts));
  K = static_cast<int64_t>(drafts.size());
  const double draft_ms = MsSince(td);
  stats.draft_ms += draft_ms;
  if (K > 0) st.policy.MeasureDraft(proposer, draft_ms / static_cast<double>(K));

  // One pass over [t, d1 … dK]; the logits (and hidden states) of every row, in buffers for
  // draft_max drafts (made at the first round: a session the server only batches needs none).
  if (st.logits.empty()) {
    const int64_t rows = std::clamp<int64_t>(so.draft_max, 1, kMaxDraft) + 1;
    st.logits.resize(rows * V);
    if (st.use_mtp) st.hidden.resize(rows * D);
  }
  st.feed.assign(1, t);
  st.feed.insert(st.feed.end(), drafts.begin(), drafts.end());
  st.rows.resize(K + 1);
  for (int64_t r = 0; r <= K; ++r) st.rows[r] = r;
  float* hid = st.use_mtp ? st.hidden.data() : nullptr;
  const auto tv = SteadyClock::now();
  RETURN_IF_ERROR(session.PrefillRows(st.feed, st.rows, st.logits.data(), {}, nullptr, hid));
  const double verify_ms = MsSince(tv);
  st.policy.MeasureVerify(K + 1, verify_ms);
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
    int32_t id = kNoToken;
    *more = draw(j, std::span<const float>(st.logits.data() + j * V, V), &id);
    const bool agrees = j < K && id == drafts[j];
    accepted += agrees ? 1 : 0;
    if (!*more || !agrees) break;
  }
  if (K > 0) {
    stats.accepted += accepted;
    st.policy.Observe(proposer, K, accepted);
  }
  // Keep [t, d1 … dj]; the draw at row j is the next round's t, h its hidden state.
  if (n0 + j + 1 < session.position()) RETURN_IF_ERROR(session.Truncate(n0 + j + 1));
  if (hid) {
    std::copy(st.hidden.begin() + j * D, st.hidden.begin() + (j + 1) * D, st.h.begin());
    st.h_pos = n0 + j + 1;
  }
  return Status::Ok();
}

Status DecodeSpeculative(Session& session, std::span<const float> prompt_logits, const float* prompt_hidden,
                         const GenerateOptions& options, const TokenCallback& on_token, GenerateResult* res) {
  const SpeculativeOptions& so = options.speculative;
  const Engine& engine = session.engine();
  RETURN_IF_ERROR(CheckSpeculative(engine, so));
  DraftState st(engine, so);
  if (st.use_mtp && prompt_hidden == nullptr) return Internal("MTP drafting needs the prompt's last hidden state");
  if (static_cast<int64_t>(prompt_logits.size()) < engine.config().vocab_size) return Internal("no prompt logits");
  if (st.use_mtp) {
    std::copy(prompt_hidden, prompt_hidden + engine.config().hidden_size, st.h.begin());
    st.h_pos = session.position();
  }
  const auto t0 = SteadyClock::now();
  Loop loop(session, options, on_token, res);
  const DraftTrim trim = [&](std::vector<int32_t>* d) { return loop.TrimToConstraint(d); };
  const RowDraw draw = [&](int64_t j, std::span<const float> row, int32_t* id) {
    *id = loop.Sample(row.data(), session.position() - static_cast<int64_t>(st.feed.size()) + j + 1);
    return loop.Take(*id);
  };
  bool more = options.max_tokens > 0 && loop.Take(loop.Sample(prompt_logits.data(), session.position()));
  Status status;
  while (more && status.ok()) {
    const int64_t gen = loop.generated();
    const int64_t room = std::min(so.draft_max, options.max_tokens - gen - 1);  // drafts that can be used
    status = SpeculativeRound(session, st, res->ids.back(), room, gen, options.constraint ? trim : nullptr, draw, &more);
  }
  res->timings.speculative.Add(st.stats);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(loop.status());
  res->timings.decode_ms = MsSince(t0);
  return Status::Ok();
}

}  // namespace gemlet::runtime
