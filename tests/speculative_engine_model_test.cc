// Speculative decoding through runtime::EngineModel (the server's SequenceModel) on the tiny
// oracle models: every Step keeps the MTP drafter's input — the final hidden state after a
// sequence's last token — in the sequence's DraftState, so the first round after a prefill or
// after batched steps drafts with the drafter from the right state (before, such a round took a
// plain step; and a sequence the prefix cache rolled back and fed again to the same length
// drafted from the hidden state of the tokens it had dropped). Greedy tokens stay plain
// greedy decoding's throughout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "runtime/engine.h"
#include "runtime/engine_model.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "runtime/speculative.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace speculative_engine_model_test {

int32_t Argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

runtime::DraftState* StateOf(runtime::Sequence& seq) {
  return dynamic_cast<runtime::DraftState*>(static_cast<runtime::Session&>(seq).extra().get());
}

// The final hidden state after the last of `tokens`, from a fresh session [D].
std::vector<float> HiddenAfter(const runtime::Engine& e, const std::vector<int32_t>& tokens) {
  runtime::Session s(e, runtime::SessionOptions{512, 64});
  const int64_t last = static_cast<int64_t>(tokens.size()) - 1;
  std::vector<float> logits(e.config().vocab_size), hidden(e.config().hidden_size);
  EXPECT_TRUE(s.PrefillRows(tokens, std::span<const int64_t>(&last, 1), logits.data(), {}, nullptr, hidden.data()).ok());
  return hidden;
}

double MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  double m = a.size() == b.size() ? 0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

TEST(SpeculativeEngineModel, StepsKeepTheDrafterInputFresh) {
  runtime::EngineOptions eo;
  eo.threads = 1;
  eo.mode = ops::MatMulMode::kExact;
  eo.drafter_path = Converted("tiny-e2b-assistant", "model.safetensors");
  auto engine = runtime::Engine::Open(Converted("tiny-e2b", "model.safetensors"), eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  const runtime::Engine& e = **engine;
  const int64_t V = e.config().vocab_size;
  runtime::EngineModel m(e, runtime::SessionOptions{512, 64});
  runtime::SpeculativeOptions spec;
  spec.mode = runtime::DraftMode::kMtp;
  spec.draft_max = 3;
  spec.adaptive = false;  // every round with the drafter's input drafts 3
  ASSERT_TRUE(m.EnableDrafting(spec).ok());

  const std::vector<int32_t> pa = {2, 105, 437, 107, 346, 12, 99}, pb = {2, 7, 8};
  auto a = m.NewSequence(), b = m.NewSequence();
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> logits(2 * V);
  // Both prompts in one step.
  {
    const runtime::StepPart parts[] = {{a->get(), pa}, {b->get(), pb}};
    ASSERT_TRUE(m.Step(parts, logits).ok());
  }
  ASSERT_NE(StateOf(**a), nullptr) << "the step keeps the drafter's input";
  EXPECT_EQ(StateOf(**a)->h_pos, static_cast<int64_t>(pa.size()));
  EXPECT_LE(MaxAbsDiff(StateOf(**a)->h, HiddenAfter(e, pa)), 1e-4);
  std::vector<int32_t> got = {Argmax(std::span<const float>(logits.data(), V))};
  int32_t pending_b = Argmax(std::span<const float>(logits.data() + V, V));

  auto round = [&](const char* when) {
    runtime::SpeculativeStats stats;
    bool more = false;
    const runtime::RowDraw draw = [&](int64_t, std::span<const float> row, int32_t* id) {
      *id = Argmax(row);
      got.push_back(*id);
      return true;
    };
    const int32_t last = got.back();
    ASSERT_TRUE(m.DraftRound(**a, last, 3, draw, &more, &stats).ok()) << when;
    EXPECT_TRUE(more);
    EXPECT_EQ(stats.mtp_rounds, 1) << when << ": the round drafts with the drafter";
    EXPECT_EQ(stats.drafted, 3) << when;
    EXPECT_EQ(stats.plain_steps, 0) << when;
    EXPECT_EQ(StateOf(**a)->h_pos, (*a)->length()) << when;
  };
  round("right after the prefill");
  round("after a round");
  // Two batched decode steps (a and b), then a alone again.
  for (int i = 0; i < 2; ++i) {
    const std::vector<int32_t> ta = {got.back()}, tb = {pending_b};
    const runtime::StepPart parts[] = {{a->get(), ta}, {b->get(), tb}};
    ASSERT_TRUE(m.Step(parts, logits).ok());
    got.push_back(Argmax(std::span<const float>(logits.data(), V)));
    pending_b = Argmax(std::span<const float>(logits.data() + V, V));
    EXPECT_EQ(StateOf(**a)->h_pos, (*a)->length());
  }
  round("after batched steps");
  round("after a round, again");

  // Greedy through all of it is plain greedy decoding.
  {
    runtime::Session plain(e, runtime::SessionOptions{512, 64});
    runtime::SamplerOptions greedy;
    greedy.temperature = 0;
    plain.set_sampler(greedy);
    runtime::GenerateOptions go;
    go.max_tokens = static_cast<int64_t>(got.size());
    go.stop_at_eog = false;
    auto r = runtime::Generate(plain, pa, go);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->ids, got);
  }

  // As the prefix cache does: roll back below h_pos and feed other tokens up to the same
  // length. The drafter's input is then that of the new tokens, not of the dropped ones.
  auto& sa = static_cast<runtime::Session&>(**a);
  const int64_t n = sa.length();
  ASSERT_TRUE(m.Truncate(sa, n - 3).ok());
  EXPECT_EQ(StateOf(sa)->h_pos, -1) << "forgotten: it followed a dropped token";
  const std::vector<int32_t> other = {50, 51, 52};
  const runtime::StepPart part[] = {{&sa, other}};
  ASSERT_TRUE(m.Step(part, logits).ok());
  ASSERT_EQ(sa.length(), n);
  EXPECT_EQ(StateOf(sa)->h_pos, n);
  const std::vector<int32_t> now(sa.history().begin(), sa.history().end());
  EXPECT_LE(MaxAbsDiff(StateOf(sa)->h, HiddenAfter(e, now)), 1e-4);
  got = {Argmax(std::span<const float>(logits.data(), V))};
  round("after a roll-back and a new prefill");
}

// A session the prefix cache hands to a new request starts with a fresh draft policy: the last
// request's rejected drafts (a paused proposer) do not keep the new one from drafting.
TEST(SpeculativeEngineModel, ANewRequestForgetsTheLastOnesAcceptance) {
  runtime::EngineOptions eo;
  eo.threads = 1;
  eo.drafter_path = Converted("tiny-e2b-assistant", "model.safetensors");
  auto engine = runtime::Engine::Open(Converted("tiny-e2b", "model.safetensors"), eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  runtime::EngineModel m(**engine, runtime::SessionOptions{512, 64});
  runtime::SpeculativeOptions spec;
  spec.mode = runtime::DraftMode::kMtp;
  spec.draft_max = 4;
  ASSERT_TRUE(m.EnableDrafting(spec).ok());
  auto a = m.NewSequence();
  ASSERT_TRUE(a.ok());
  const std::vector<int32_t> p = {2, 105, 437, 107, 346, 12, 99};
  std::vector<float> logits((*engine)->config().vocab_size);
  const runtime::StepPart part[] = {{a->get(), p}};
  ASSERT_TRUE(m.Step(part, logits).ok());
  // Rounds whose every draft is refused (the draw never equals a draft) until the policy pauses.
  int32_t last = Argmax(logits);
  runtime::DraftState* st = StateOf(**a);
  ASSERT_NE(st, nullptr);
  for (int i = 0; i < 40 && !st->policy.paused(runtime::Proposer::kMtp); ++i) {
    runtime::SpeculativeStats stats;
    bool more = false;
    const runtime::RowDraw refuse = [&](int64_t j, std::span<const float>, int32_t* id) {
      *id = j < static_cast<int64_t>(st->drafts.size()) ? (st->drafts[j] + 1) % 512 : 3;
      last = *id;
      return true;
    };
    ASSERT_TRUE(m.DraftRound(**a, last, 4, refuse, &more, &stats).ok());
  }
  ASSERT_TRUE(st->policy.paused(runtime::Proposer::kMtp));
  EXPECT_LT(st->policy.acceptance(runtime::Proposer::kMtp), 0.5);  // below the prior
  m.BeginRequest(**a);
  EXPECT_FALSE(st->policy.paused(runtime::Proposer::kMtp));
  EXPECT_DOUBLE_EQ(st->policy.acceptance(runtime::Proposer::kMtp), 0.5);
  EXPECT_EQ(st->h_pos, (*a)->length()) << "the drafter's input still follows the session";
}

}  // namespace speculative_engine_model_test
}  // namespace gemlet::oracle
