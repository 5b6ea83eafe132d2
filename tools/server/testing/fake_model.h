// A fake language model for the server's tests: byte tokens, a few control tokens, and
// logits that depend deterministically on every token of the sequence (so batching bugs and
// KV mix-ups change the output). Header-only; tests only.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tools/server/chat_model.h"
#include "tools/server/json_util.h"

namespace gemlet::server::testing {

// Token ids: 0..255 bytes, then the control tokens.
constexpr int32_t kEos = 256;
constexpr int32_t kThinkStart = 257;
constexpr int32_t kThinkEnd = 258;
constexpr int32_t kToolStart = 259;
constexpr int32_t kToolEnd = 260;
constexpr int32_t kHiddenTok = 261;
constexpr int32_t kFakeVocab = 262;

inline std::vector<int32_t> Bytes(const std::string& s) {
  std::vector<int32_t> t;
  for (unsigned char c : s) t.push_back(c);
  return t;
}

class FakeSequence : public runtime::Sequence {
 public:
  std::span<const int32_t> tokens() const override { return held; }
  std::vector<int32_t> held;
};

// Next-token rule: script(tokens) returns the favoured token or -1 for "pseudo-random" logits
// (a hash of the whole sequence).
class FakeBackend : public runtime::SequenceModel {
 public:
  explicit FakeBackend(int64_t context = 4096) : context_(context) {}

  using Script = std::function<int32_t(const std::vector<int32_t>&)>;
  void SetScript(Script s) {
    std::lock_guard<std::mutex> lock(script_mu_);
    script_ = std::move(s);
  }
  std::chrono::microseconds pass_delay{0};  // cost of one step (one pass over the "weights")
  std::atomic<bool> hold{false};  // while true, Step waits (tests line up jobs meanwhile)
  // Steps; rows of one-token parts (decode steps) and parts of more (prefill chunks); most
  // parts in one step; forks.
  // Steps with both (a prompt chunk beside decode steps).
  std::atomic<int64_t> steps{0}, decode_rows{0}, prefill_parts{0}, max_batch{0}, fork_calls{0}, mixed_steps{0};

  int64_t context_length() const override { return context_; }
  int32_t vocab_size() const override { return kFakeVocab; }
  Result<std::unique_ptr<runtime::Sequence>> NewSequence() override {
    return std::unique_ptr<runtime::Sequence>(new FakeSequence);
  }
  Result<std::unique_ptr<runtime::Sequence>> Fork(const runtime::Sequence& seq, int64_t n) override {
    fork_calls++;
    auto copy = std::make_unique<FakeSequence>();
    const auto& t = static_cast<const FakeSequence&>(seq).held;
    copy->held.assign(t.begin(), t.begin() + n);
    return std::unique_ptr<runtime::Sequence>(std::move(copy));
  }
  Status Truncate(runtime::Sequence& seq, int64_t n) override {
    static_cast<FakeSequence&>(seq).held.resize(n);
    return Status::Ok();
  }
  Status Step(std::span<const runtime::StepPart> parts, std::span<float> logits) override {
    steps++;
    while (hold.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (pass_delay.count()) std::this_thread::sleep_for(pass_delay);
    int64_t prev = max_batch.load();
    while (static_cast<int64_t>(parts.size()) > prev &&
           !max_batch.compare_exchange_weak(prev, static_cast<int64_t>(parts.size()))) {
    }
    for (const auto& p : parts) {  // nothing changes on error
      if (p.seq->length() + static_cast<int64_t>(p.tokens.size()) > context_) {
        return OutOfRange("fake context overflow");
      }
    }
    size_t k = 0;
    bool one = false, more = false;
    for (const auto& p : parts) {
      (p.tokens.size() == 1 ? one : more) = true;
      (p.tokens.size() == 1 ? decode_rows : prefill_parts)++;
      auto& s = static_cast<FakeSequence&>(*p.seq);
      s.held.insert(s.held.end(), p.tokens.begin(), p.tokens.end());
      if (p.logits) Logits(s.held, logits.subspan((k++) * kFakeVocab, kFakeVocab));
    }
    mixed_steps += one && more;
    return Status::Ok();
  }

 private:
  void Logits(const std::vector<int32_t>& tokens, std::span<float> out) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : tokens) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
    std::mt19937_64 rng(h);
    std::uniform_real_distribution<float> u(0.f, 3.f);
    for (int32_t i = 0; i < kFakeVocab; ++i) out[i] = u(rng);
    // Printable ASCII letters mostly, so text is readable; control tokens rarely.
    for (int32_t i = 0; i < kFakeVocab; ++i) {
      if (!(i >= 'a' && i <= 'z') && i != ' ') out[i] -= 4.f;
    }
    out[kEos] = -10.f;
    int32_t forced = -1;
    {
      std::lock_guard<std::mutex> lock(script_mu_);
      if (script_) forced = script_(tokens);
    }
    if (forced >= 0) out[forced] = 40.f;
  }
  int64_t context_;
  mutable std::mutex script_mu_;
  Script script_;
};

class FakeTextDecoder : public TokenTextDecoder {
 public:
  std::string Push(int32_t token) override {
    if (token < 256) held_ += static_cast<char>(token);
    const size_t n = CompleteUtf8Prefix(held_);
    std::string out = held_.substr(0, n);
    held_.erase(0, n);
    return out;
  }
  std::string Flush() override { return std::exchange(held_, {}); }
  std::string Peek() const override { return held_; }

 private:
  std::string held_;
};

// Bytes are text; the control tokens are the markers (kEos ends a turn).
class FakeVocab : public OutputVocab {
 public:
  TokenKind KindOf(int32_t t) const override {
    switch (t) {
      case kThinkStart: return TokenKind::kChannelOpen;
      case kThinkEnd: return TokenKind::kChannelClose;
      case kToolStart: return TokenKind::kToolCallOpen;
      case kToolEnd: return TokenKind::kToolCallClose;
      case kEos: return TokenKind::kEndOfTurn;
      case kHiddenTok: return TokenKind::kHidden;
      default: return t >= 0 && t < 256 ? TokenKind::kText : TokenKind::kHidden;
    }
  }
  std::unique_ptr<TokenTextDecoder> NewDecoder() const override {
    return std::make_unique<FakeTextDecoder>();
  }
};

class FakeSampler : public TokenSampler {
 public:
  FakeSampler(double temperature, uint64_t seed, std::vector<std::pair<int32_t, float>> bias = {})
      : temperature_(temperature), rng_(seed), bias_(std::move(bias)) {}
  int32_t Sample(std::span<float> logits) override {
    for (const auto& [id, b] : bias_) {
      if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[id] = b <= -100 ? -1e30f : logits[id] + b;
    }
    if (temperature_ <= 0) {
      return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    const float mx = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp((logits[i] - mx) / temperature_);
    double r = std::uniform_real_distribution<double>(0, sum)(rng_);
    for (size_t i = 0; i < p.size(); ++i) {
      if ((r -= p[i]) <= 0) return static_cast<int32_t>(i);
    }
    return static_cast<int32_t>(p.size() - 1);
  }

 private:
  double temperature_;
  std::mt19937_64 rng_;
  std::vector<std::pair<int32_t, float>> bias_;
};

// Chat rendering: "[role]content\n" per message, then "[assistant]". The system turn is the
// shared prefix. Tool calls are Gemma's "call:name{...}" (JSON arguments are read too) between
// kToolStart and kToolEnd.
class FakeChatModel : public ChatModel {
 public:
  explicit FakeChatModel(FakeBackend& backend) : backend_(backend) {}
  const std::string& id() const override { return id_; }
  runtime::SequenceModel& backend() override { return backend_; }
  ApiOr<RenderedPrompt> RenderChat(const ChatRequest& req) override {
    RenderedPrompt p;
    for (size_t i = 0; i < req.messages.size(); ++i) {
      const auto& m = req.messages[i];
      auto b = Bytes(std::string("[") + RoleName(m.role) + "]" + m.content + "\n");
      p.tokens.insert(p.tokens.end(), b.begin(), b.end());
      if (i == 0 && m.role == Role::kSystem) p.shared_prefix = static_cast<int64_t>(p.tokens.size());
    }
    if (req.enable_thinking) p.tokens.push_back(kThinkStart);
    auto b = Bytes("[assistant]");
    p.tokens.insert(p.tokens.end(), b.begin(), b.end());
    return p;
  }
  ApiOr<std::vector<int32_t>> Tokenize(const std::string& text) override { return Bytes(text); }
  const OutputVocab& output_vocab() const override { return vocab_; }
  std::vector<int32_t> StopTokens() const override { return {kEos}; }
  // Output constraints are the real model's (tests/server_engine_test.cc, the e2e test):
  // the fake refuses them rather than ignoring them.
  ApiOr<std::unique_ptr<runtime::TokenConstraint>> ChatConstraint(const ChatRequest& req) override {
    return TextConstraint(req.format);
  }
  ApiOr<std::unique_ptr<runtime::TokenConstraint>> TextConstraint(const OutputFormat& f) override {
    if (f.kind != OutputFormat::Kind::kText) {
      return BadRequest("the fake model has no output constraints", f.param, "invalid_value");
    }
    return std::unique_ptr<runtime::TokenConstraint>();
  }
  std::unique_ptr<TokenSampler> NewSampler(const SamplingOptions& o, uint64_t seed,
                                           std::unique_ptr<runtime::TokenConstraint>) override {
    return std::make_unique<FakeSampler>(o.temperature.value_or(1.0), seed, o.logit_bias);
  }

 private:
  FakeBackend& backend_;
  FakeVocab vocab_;
  std::string id_ = "fake-model";
};

// A script that replies `text` (then kEos) to whatever prompt ends with "[assistant]".
inline std::function<int32_t(const std::vector<int32_t>&)> ReplyScript(std::vector<int32_t> reply) {
  return [reply](const std::vector<int32_t>& tokens) -> int32_t {
    static const std::vector<int32_t> kMark = Bytes("[assistant]");
    // Find the last "[assistant]" marker; the reply position is what follows it.
    for (size_t end = tokens.size(); end >= kMark.size(); --end) {
      if (std::equal(kMark.begin(), kMark.end(), tokens.begin() + (end - kMark.size()))) {
        const size_t pos = tokens.size() - end;
        return pos < reply.size() ? reply[pos] : kEos;
      }
    }
    return -1;
  };
}

}  // namespace gemlet::server::testing
