#include "runtime/session.h"

#include <algorithm>

#include "model/gemma4_forward.h"

namespace gemlet::runtime {

int64_t Session::EffectiveLimit(const Engine& e, int64_t requested) {
  const int64_t max = e.config().max_position_embeddings;
  return requested <= 0 ? max : std::min(requested, max);
}

Status Session::CheckRoom(int64_t n) const {
  if (position() + n <= context_limit()) return Status::Ok();
  return OutOfRange("context limit exceeded: " + std::to_string(position()) + " tokens in the session + " +
                    std::to_string(n) + " new = " + std::to_string(position() + n) + " > limit " +
                    std::to_string(context_limit()));
}

Session::Session(const Engine& engine, const SessionOptions& options)
    : engine_(engine),
      options_(options),
      chunk_(std::max<int64_t>(1, options.prefill_chunk)),
      skip_shared_rows_(options.skip_shared_rows),
      kv_(engine.config(), EffectiveLimit(engine, options.context_limit), engine.kv_type(),
          engine.kv_type_sliding()) {}

Status Session::Prefill(std::span<const int32_t> tokens, std::vector<float>* logits, bool all_rows) {
  return Prefill(tokens, {}, nullptr, logits, all_rows);
}

Status Session::Prefill(std::span<const int32_t> tokens, std::span<const int64_t> embed_rows, const float* embeddings,
                        std::vector<float>* logits, bool all_rows) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  std::vector<int64_t> rows;
  if (logits && all_rows) {
    rows.resize(n);
    for (int64_t t = 0; t < n; ++t) rows[t] = t;
  } else if (logits && n > 0) {
    rows.push_back(n - 1);
  }
  if (logits) logits->resize(rows.size() * engine_.config().vocab_size);
  return Feed(tokens, rows, logits ? logits->data() : nullptr, embed_rows, embeddings);
}

Status Session::Prefill(const MediaPrompt& prompt, std::vector<float>* logits, float* hidden) {
  std::vector<int64_t> embed_rows;
  std::vector<float> embeddings;
  RETURN_IF_ERROR(GatherMediaRows(prompt.media, prompt.size(), engine_.config().hidden_size, &embed_rows, &embeddings));
  const int64_t base = position();
  Status st;
  if (hidden != nullptr && logits != nullptr && prompt.size() > 0) {
    const int64_t last = prompt.size() - 1;
    logits->resize(engine_.config().vocab_size);
    st = Feed(prompt.tokens, std::span<const int64_t>(&last, 1), logits->data(), embed_rows, embeddings.data(), hidden);
  } else {
    st = Prefill(prompt.tokens, embed_rows, embeddings.data(), logits);
  }
  // What was fed of the spans (all of them, unless a chunk failed).
  RecordMedia(prompt.media, base, position() - base);
  return st;
}

void Session::RecordMedia(std::span<const MediaSpan> media, int64_t base, int64_t fed) {
  for (const MediaSpan& m : media) {
    if (m.start >= fed) break;
    MediaSpan s = m;
    s.start += base;
    s.rows = std::min(m.rows, fed - m.start);
    MediaSpan* last = media_.empty() ? nullptr : &media_.back();
    if (last && last->media == s.media && last->start + last->rows == s.start && last->offset + last->rows == s.offset) {
      last->rows += s.rows;  // the rest of an image an earlier chunk began
    } else {
      media_.push_back(std::move(s));
    }
  }
}

Status Session::PrefillRows(std::span<const int32_t> tokens, std::span<const int64_t> rows, float* logits,
                            std::span<const int64_t> embed_rows, const float* embeddings, float* hidden) {
  return Feed(tokens, rows, logits, embed_rows, embeddings, hidden);
}

Status Session::Feed(std::span<const int32_t> tokens, std::span<const int64_t> rows, float* logits,
                     std::span<const int64_t> embed_rows, const float* embeddings, float* hidden) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t V = engine_.config().vocab_size, D = engine_.config().hidden_size;
  if (n == 0) return InvalidArgument("no tokens to feed");
  RETURN_IF_ERROR(CheckRoom(n));
  for (int64_t i = 0; i < n; ++i) {  // checked up front so that a bad id changes nothing
    if (tokens[i] < 0 || tokens[i] >= V) {
      return InvalidArgument("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                             " is outside the vocabulary [0, " + std::to_string(V) + ")");
    }
  }
  for (size_t i = 0; i < embed_rows.size(); ++i) {
    if (embed_rows[i] < 0 || embed_rows[i] >= n || (i > 0 && embed_rows[i] <= embed_rows[i - 1])) {
      return InvalidArgument("embedding rows must be increasing positions within the " + std::to_string(n) +
                             " tokens fed");
    }
  }
  if (!embed_rows.empty() && embeddings == nullptr) return InvalidArgument("embedding rows without embeddings");
  for (size_t i = 0; i < rows.size(); ++i) {
    GEMLET_CHECK_MSG(rows[i] >= 0 && rows[i] < n && (i == 0 || rows[i] > rows[i - 1]), "rows increase, in the tokens");
  }
  GEMLET_CHECK(rows.empty() || logits != nullptr || hidden != nullptr);
  model::ForwardOptions fopt{engine_.mode(), n == 1 ? engine_.decode_pool() : engine_.pool()};
  fopt.skip_shared_rows = skip_shared_rows_;
  size_t next = 0;  // the first of `rows` not yet computed
  size_t e = 0;     // the next embedding row
  std::vector<int32_t> ids;
  std::vector<int64_t> chunk_rows;
  for (int64_t b = 0; b < n; b += chunk_) {
    const int64_t T = std::min(chunk_, n - b);
    rows_.clear();
    float* out = logits ? logits + next * V : nullptr;
    float* hid = hidden ? hidden + next * D : nullptr;
    for (; next < rows.size() && rows[next] < b + T; ++next) rows_.push_back(rows[next] - b);
    if (rows_.empty()) out = hid = nullptr;
    const size_t e0 = e;
    chunk_rows.clear();
    while (e < embed_rows.size() && embed_rows[e] < b + T) chunk_rows.push_back(embed_rows[e++] - b);
    if (chunk_rows.empty() && hid == nullptr) {
      RETURN_IF_ERROR(model::Forward(engine_.model(), tokens.subspan(b, T), rows_, &kv_, &scratch_, fopt, out));
    } else {
      // Embedding rows use the pad id for their per-layer token embedding (Gemma4Model.forward).
      ids.assign(tokens.begin() + b, tokens.begin() + b + T);
      for (int64_t r : chunk_rows) ids[r] = static_cast<int32_t>(engine_.config().pad_token_id);
      // (a chunk without embedding rows: here only for its hidden states)
      model::BatchSequence seq{&kv_, T};
      model::Batch batch;
      batch.tokens = ids;
      batch.embed_rows = chunk_rows;
      batch.embeddings = chunk_rows.empty() ? nullptr : embeddings + e0 * D;
      batch.seqs = std::span<const model::BatchSequence>(&seq, 1);
      batch.out_rows = rows_;
      batch.logits = out;
      batch.hidden = hid;
      RETURN_IF_ERROR(model::Forward(engine_.model(), batch, &scratch_, fopt));
    }
    history_.insert(history_.end(), tokens.begin() + b, tokens.begin() + b + T);
  }
  return Status::Ok();
}

Status Session::Decode(int32_t token, std::vector<float>* logits) {
  return Prefill(std::span<const int32_t>(&token, 1), logits, false);
}

void Session::Reset() {
  kv_.Clear();
  history_.clear();
  media_.clear();
  sampler_.Reseed();
}

Status Session::Truncate(int64_t n) {
  GEMLET_CHECK(n >= 0 && n <= position());
  MediaPrompt kept;
  kept.tokens = history_;
  kept.media = media_;
  kept = kept.Slice(0, n);
  if (kv_.Truncate(n)) {
    history_ = std::move(kept.tokens);
    media_ = std::move(kept.media);
    return Status::Ok();
  }
  // The sliding rings no longer hold what position n sees: prefill the kept tokens (and
  // media rows) again (prefill and decode agree bit for bit, so this is the state a fresh
  // session reaches).
  kv_.Clear();
  history_.clear();
  media_.clear();
  if (n == 0) return Status::Ok();
  return Prefill(kept, nullptr);
}

Result<std::unique_ptr<Session>> Session::Fork(int64_t n) const {
  if (n < 0) n = position();
  GEMLET_CHECK(n <= position());
  auto s = std::make_unique<Session>(engine_, options_);
  s->chunk_ = chunk_;
  s->kv_ = kv_;
  s->history_ = history_;
  s->media_ = media_;
  s->sampler_ = sampler_;
  if (n < position()) RETURN_IF_ERROR(s->Truncate(n));
  return s;
}

Status Session::Restore(std::span<const int32_t> tokens, const std::function<Status(KvCache&)>& fill) {
  Reset();
  Status st = fill(kv_);
  if (st.ok() && kv_.size() != static_cast<int64_t>(tokens.size())) {
    st = Internal("restored " + std::to_string(kv_.size()) + " KV positions for " +
                  std::to_string(tokens.size()) + " tokens");
  }
  if (!st.ok()) {
    Reset();
    return st;
  }
  history_.assign(tokens.begin(), tokens.end());
  return Status::Ok();
}

}  // namespace gemlet::runtime
