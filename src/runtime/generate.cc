#include "runtime/generate.h"

#include <algorithm>
#include <optional>

#include "base/clock.h"
#include "runtime/speculative.h"

namespace gemlet::runtime {

namespace {
// Forwards to a constraint and adds up the time of its calls (GenerateTimings::constraint_ms).
class TimedConstraint : public TokenConstraint {
 public:
  explicit TimedConstraint(TokenConstraint& inner) : inner_(inner) {}
  bool Allows(int32_t token) override {
    const auto t0 = SteadyClock::now();
    const bool r = inner_.Allows(token);
    ms_ += MsSince(t0);
    return r;
  }
  void Mask(std::span<uint32_t> mask) override {
    const auto t0 = SteadyClock::now();
    inner_.Mask(mask);
    ms_ += MsSince(t0);
    ++masks_;
  }
  Status Accept(int32_t token) override {
    const auto t0 = SteadyClock::now();
    Status s = inner_.Accept(token);
    ms_ += MsSince(t0);
    return s;
  }
  Status Rollback(int64_t n) override { return inner_.Rollback(n); }
  bool Complete() const override { return inner_.Complete(); }
  std::unique_ptr<TokenConstraint> Clone() const override { return inner_.Clone(); }
  void SetBudget(int64_t tokens) override {
    const auto t0 = SteadyClock::now();
    inner_.SetBudget(tokens);
    ms_ += MsSince(t0);
  }
  double ms() const { return ms_; }
  int64_t masks() const { return masks_; }

 private:
  TokenConstraint& inner_;
  double ms_ = 0;
  int64_t masks_ = 0;
};

}  // namespace

Result<GenerateResult> Generate(Session& session, std::span<const int32_t> prompt,
                                const GenerateOptions& options, const TokenCallback& on_token) {
  MediaPrompt p;
  p.tokens.assign(prompt.begin(), prompt.end());
  return Generate(session, p, options, on_token);
}

Result<GenerateResult> Generate(Session& session, const MediaPrompt& media_prompt, const GenerateOptions& options,
                                const TokenCallback& on_token) {
  std::span<const int32_t> prompt = media_prompt.tokens;
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  if (options.max_tokens < 0) return InvalidArgument("the token budget (-n) must be >= 0");
  const int64_t need = session.position() + static_cast<int64_t>(prompt.size()) + options.max_tokens;
  if (need > session.context_limit()) {
    return OutOfRange("prompt of " + std::to_string(prompt.size()) + " tokens + " +
                      std::to_string(options.max_tokens) + " to generate" +
                      (session.position()
                           ? " + " + std::to_string(session.position()) + " already in the session"
                           : std::string()) +
                      " = " + std::to_string(need) + " exceeds the context limit of " +
                      std::to_string(session.context_limit()) + " (raise --ctx or lower -n)");
  }
  const bool speculative = options.speculative.mode != DraftMode::kOff;
  if (speculative) RETURN_IF_ERROR(CheckSpeculative(session.engine(), options.speculative));
  // The MTP drafter starts from the prompt's last final hidden state.
  std::vector<float> hidden;
  if (speculative && UsesDrafter(session.engine(), options.speculative)) {
    hidden.resize(session.engine().config().hidden_size);
  }
  float* hid = hidden.empty() ? nullptr : hidden.data();
  GenerateResult res;
  res.timings.prompt_tokens = static_cast<int64_t>(prompt.size());
  std::vector<float> logits;
  auto t0 = SteadyClock::now();
  if (!options.on_prefill) {
    RETURN_IF_ERROR(session.Prefill(media_prompt, &logits, hid));
  } else {
    // The session's own chunks, one Prefill each (the last one with its logits); an image
    // cut by a chunk boundary goes on in the next chunk (MediaPrompt::Slice).
    const int64_t n = static_cast<int64_t>(prompt.size()), chunk = session.prefill_chunk();
    for (int64_t done = 0; done < n;) {
      if (!options.on_prefill(done, n)) {
        res.prefill_stopped = true;
        res.timings.prompt_tokens = done;
        res.timings.prefill_ms = MsSince(t0);
        return res;
      }
      const int64_t T = std::min(chunk, n - done);
      const bool last = done + T == n;
      RETURN_IF_ERROR(session.Prefill(media_prompt.Slice(done, done + T), last ? &logits : nullptr, last ? hid : nullptr));
      done += T;
    }
    options.on_prefill(n, n);  // the end (its answer no longer matters)
  }
  res.timings.prefill_ms = MsSince(t0);

  const Engine& engine = session.engine();
  std::optional<TimedConstraint> constraint;
  if (options.constraint) constraint.emplace(*options.constraint);
  if (speculative) {  // the same loop, several tokens per pass (runtime/speculative.h)
    GenerateOptions timed = options;
    timed.constraint = constraint ? &*constraint : nullptr;
    RETURN_IF_ERROR(DecodeSpeculative(session, logits, hid, timed, on_token, &res));
  }
  t0 = SteadyClock::now();
  for (int64_t i = 0; i < options.max_tokens && !speculative; ++i) {
    if (i > 0) RETURN_IF_ERROR(session.Decode(res.ids.back(), &logits));
    const auto ts = SteadyClock::now();
    if (constraint) constraint->SetBudget(options.max_tokens - i);
    const int32_t id = session.sampler().Sample(logits, session.history(), constraint ? &*constraint : nullptr);
    if (id != kNoToken && constraint) RETURN_IF_ERROR(constraint->Accept(id));
    res.timings.sample_ms += MsSince(ts);
    if (id == kNoToken) {
      res.dead_end = true;
      break;
    }
    res.ids.push_back(id);
    const bool stop = options.stop_at_eog && engine.IsEog(id);
    if (on_token && !on_token(id)) break;
    if (stop) {
      res.stopped_at_eog = true;
      break;
    }
  }
  if (!speculative) res.timings.decode_ms = MsSince(t0);
  if (constraint) {
    res.timings.constraint_ms = constraint->ms();
    res.timings.masks = constraint->masks();
  }
  res.timings.generated_tokens = static_cast<int64_t>(res.ids.size());
  return res;
}

}  // namespace gemlet::runtime
