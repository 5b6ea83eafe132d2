#include "runtime/engine_model.h"

#include <algorithm>

#include "runtime/speculative.h"

namespace gemlet::runtime {

EngineModel::EngineModel(const Engine& engine, const SessionOptions& options)
    : engine_(engine), options_(options), context_(Session::EffectiveLimit(engine, options.context_limit)) {}

Result<std::unique_ptr<Sequence>> EngineModel::NewSequence() {
  return std::unique_ptr<Sequence>(std::make_unique<Session>(engine_, options_));
}

Result<std::unique_ptr<Sequence>> EngineModel::Fork(const Sequence& seq, int64_t n) {
  ASSIGN_OR_RETURN(std::unique_ptr<Session> s, static_cast<const Session&>(seq).Fork(n));
  return std::unique_ptr<Sequence>(std::move(s));
}

Status EngineModel::Truncate(Sequence& seq, int64_t n) {
  auto& s = static_cast<Session&>(seq);
  RETURN_IF_ERROR(s.Truncate(n));
  // The drafter's h follows a token that is gone (the prefix cache may feed other tokens
  // up to the same length): forget it.
  if (auto* st = dynamic_cast<DraftState*>(s.extra().get()); st != nullptr && n < st->h_pos) st->h_pos = -1;
  return Status::Ok();
}

void EngineModel::BeginRequest(Sequence& seq) {
  auto& s = static_cast<Session&>(seq);
  if (auto* st = dynamic_cast<DraftState*>(s.extra().get()); st != nullptr) {
    st->policy = DraftPolicy(st->options.draft_max);
    st->stats = SpeculativeStats{};
  }
}

DraftState& EngineModel::StateOf(Session& s) {
  auto* st = dynamic_cast<DraftState*>(s.extra().get());
  if (st == nullptr) {
    s.extra() = std::make_unique<DraftState>(engine_, speculative_);
    st = static_cast<DraftState*>(s.extra().get());
  }
  return *st;
}

Status EngineModel::Step(std::span<const StepPart> parts, std::span<float> logits) {
  const int64_t V = engine_.config().vocab_size;
  tokens_.clear();
  seqs_.clear();
  out_rows_.clear();
  embed_rows_.clear();
  embeddings_.clear();
  const int64_t D = engine_.config().hidden_size;
  bool single_rows = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto* s = static_cast<Session*>(parts[i].seq);
    GEMLET_CHECK_MSG(&s->engine() == &engine_, "a sequence of another model in a step");
    const int64_t n = static_cast<int64_t>(parts[i].tokens.size());
    GEMLET_CHECK(n >= 1);
    RETURN_IF_ERROR(s->CheckRoom(n));
    single_rows = single_rows && n == 1;
    const int64_t base = static_cast<int64_t>(tokens_.size());
    tokens_.insert(tokens_.end(), parts[i].tokens.begin(), parts[i].tokens.end());
    if (!parts[i].media.empty()) {
      // Media rows: their embeddings as given, the pad id's per-layer embedding (Gemma4Model.forward).
      RETURN_IF_ERROR(GatherMediaRows(parts[i].media, n, D, &part_rows_, &part_embeddings_));
      for (int64_t r : part_rows_) {
        embed_rows_.push_back(base + r);
        tokens_[base + r] = static_cast<int32_t>(engine_.config().pad_token_id);
      }
      embeddings_.insert(embeddings_.end(), part_embeddings_.begin(), part_embeddings_.end());
    }
    seqs_.push_back({&s->kv_, n});
    if (parts[i].logits) out_rows_.push_back(static_cast<int64_t>(tokens_.size()) - 1);
  }
  GEMLET_CHECK(static_cast<int64_t>(logits.size()) >= static_cast<int64_t>(out_rows_.size()) * V);
  model::Batch b;
  b.tokens = tokens_;
  b.embed_rows = embed_rows_;
  b.embeddings = embed_rows_.empty() ? nullptr : embeddings_.data();
  b.seqs = seqs_;
  b.out_rows = out_rows_;
  b.logits = out_rows_.empty() ? nullptr : logits.data();
  // With the MTP drafter, the final hidden states of the logit rows too: a sequence's next
  // round (DraftRound) drafts from the one after its last token, even after batched steps.
  const bool feed_drafter = feeds_drafter_ && !out_rows_.empty();
  if (feed_drafter) {
    hidden_.resize(out_rows_.size() * D);
    b.hidden = hidden_.data();
  }
  // Decode rows are memory-bound: the decode pool, as in Session::Prefill of one token.
  model::ForwardOptions opt{engine_.mode(), single_rows ? engine_.decode_pool() : engine_.pool()};
  opt.skip_shared_rows = options_.skip_shared_rows;
  RETURN_IF_ERROR(model::Forward(engine_.model(), b, &scratch_, opt));
  int64_t out = 0;
  for (const StepPart& p : parts) {
    auto* s = static_cast<Session*>(p.seq);
    const int64_t base = s->position() - static_cast<int64_t>(p.tokens.size());
    s->history_.insert(s->history_.end(), p.tokens.begin(), p.tokens.end());
    s->RecordMedia(p.media, base, static_cast<int64_t>(p.tokens.size()));
    if (!p.logits) continue;
    if (feed_drafter) {
      DraftState& st = StateOf(*s);
      std::copy(hidden_.begin() + out * D, hidden_.begin() + (out + 1) * D, st.h.begin());
      st.h_pos = s->position();
    }
    ++out;
  }
  return Status::Ok();
}

Status EngineModel::EnableDrafting(const SpeculativeOptions& options) {
  RETURN_IF_ERROR(CheckSpeculative(engine_, options));
  if (!options.oracle.empty()) return InvalidArgument("the bench's oracle drafts are not for serving");
  speculative_ = options;
  feeds_drafter_ = UsesDrafter(engine_, options);
  return Status::Ok();
}

Status EngineModel::DraftRound(Sequence& seq, int32_t last, int64_t room, const RowDraw& draw, bool* more,
                               SpeculativeStats* stats) {
  if (!drafts()) return Unsupported("drafting is off");
  auto& s = static_cast<Session&>(seq);
  GEMLET_CHECK_MSG(&s.engine() == &engine_, "a sequence of another model in a draft round");
  // Its h is the last Step's or round's (h_pos telling).
  DraftState& st = StateOf(s);
  st.stats = {};
  const Status status = SpeculativeRound(s, st, last, room, 0, nullptr, draw, more);
  stats->Add(st.stats);
  return status;
}

}  // namespace gemlet::runtime
