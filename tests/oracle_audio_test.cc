// Audio input against ../shared/oracle/tiny-e2b-audio (its README: conventions and tiers): the
// log-mel features from the WAV files, the tower (subsampling, conformer, output_proj,
// embed_audio) on the golden features and on ours (exact tier: max |Δ| ≤ 1e-3 × RMS of the
// golden), the prompts' logits and greedy continuations (exact tier on the golden soft tokens;
// max 1e-2 / mean 3e-4 from the WAV), the 44.1 kHz stereo file through our downmix and
// resampler (token count, soft tokens within 5e-2 / 1e-2), and the fast path.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/audio_decode.h"
#include "format/npy.h"
#include "model/gemma4_audio.h"
#include "model/gemma4_audio_features.h"
#include "tests/oracle_test_util.h"

namespace gemlet {
namespace oracle_audio_test {

using oracle::OracleDir;

const std::string& Dir() {
  static const std::string d = OracleDir() + "tiny-e2b-audio/";
  return d;
}

const nlohmann::json& Cases() { return oracle::OracleCases("tiny-e2b-audio"); }

const nlohmann::json& Clip(const std::string& name) {
  for (const auto& c : Cases()["clips"]) {
    if (c["name"] == name) return c;
  }
  GEMLET_CHECK_MSG(false, "clip is in cases.json");
  return Cases();
}

NpyArray Golden(const nlohmann::json& clip, const char* kind) {
  auto a = ReadNpy(Dir() + clip["files"][kind].get<std::string>());
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::move(*a) : NpyArray{};
}

struct Diff {
  double max_abs = 0, mean_abs = 0, rms_gold = 0;
};
// Over the first `n` values (all when n < 0).
Diff Compare(const std::vector<float>& got, const NpyArray& want, int64_t n = -1) {
  Diff d;
  const size_t m = n < 0 ? want.data.size() : static_cast<size_t>(n);
  EXPECT_GE(got.size(), m);
  EXPECT_GE(want.data.size(), m);
  const size_t k = std::min({m, got.size(), want.data.size()});
  for (size_t i = 0; i < k; ++i) {
    const double a = std::abs(static_cast<double>(got[i]) - want.data[i]);
    d.max_abs = std::max(d.max_abs, std::isnan(a) ? 1e30 : a);
    d.mean_abs += a;
    d.rms_gold += static_cast<double>(want.data[i]) * want.data[i];
  }
  d.mean_abs /= std::max<size_t>(k, 1);
  d.rms_gold = std::sqrt(d.rms_gold / std::max<size_t>(k, 1));
  return d;
}

model::AudioFeatures GoldenFeatures(const nlohmann::json& clip) {
  NpyArray g = Golden(clip, "features");
  model::AudioFeatures f;
  f.n_frames = clip["n_frames"].get<int64_t>();
  f.n_valid = clip["n_frames_valid"].get<int64_t>();
  f.mel = g.data;
  return f;
}

model::AudioFeatures OwnFeatures(const nlohmann::json& clip) {
  auto a = DecodeAudioFile(Dir() + clip["file"].get<std::string>());
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  if (!a.ok()) return {};
  EXPECT_EQ(static_cast<int64_t>(a->samples.size()), clip["n_samples"].get<int64_t>());
  auto f = model::ExtractAudioFeatures(a->samples);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : model::AudioFeatures{};
}

struct Tower {
  std::unique_ptr<runtime::Engine> engine;
  std::unique_ptr<model::Gemma4Audio> audio;
};
Tower OpenTower(const std::string& plan, ops::MatMulMode mode) {
  Tower t;
  const std::string path = oracle::Converted("tiny-e2b-audio", "model.safetensors", plan);
  runtime::EngineOptions eo;
  eo.threads = 2;
  eo.mode = mode;
  auto e = runtime::Engine::Open(path, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (!e.ok()) return t;
  t.engine = std::move(*e);
  auto a = model::Gemma4Audio::Bind(t.engine->file());
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  if (a.ok()) t.audio = std::move(*a);
  return t;
}

std::vector<float> Encode(const Tower& t, const model::AudioFeatures& f, model::AudioTrace* trace = nullptr) {
  std::vector<float> soft;
  Status st = t.audio->Encode(f, t.engine->mode(), t.engine->pool(), &soft, trace);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return soft;
}

const char* const kClips[] = {"sweep", "bursts", "click", "stereo44k"};

TEST(OracleAudio, FeaturesFromWavFiles) {
  GEMLET_NEED_AUDIO_LIBS();
  for (const char* name : kClips) {
    const auto& clip = Clip(name);
    const model::AudioFeatures f = OwnFeatures(clip);
    const NpyArray g = Golden(clip, "features");
    ASSERT_EQ(f.n_frames, clip["n_frames"].get<int64_t>()) << name;
    ASSERT_EQ(f.n_valid, clip["n_frames_valid"].get<int64_t>()) << name;
    ASSERT_EQ(g.shape, (std::vector<int64_t>{f.n_frames, 128})) << name;
    double max_all = 0, max_loud = 0, sum = 0;
    for (int64_t r = 0; r < f.n_frames; ++r) {
      bool zero_row = true;
      for (int64_t m = 0; m < 128; ++m) zero_row = zero_row && g.data[r * 128 + m] == 0.0f;
      for (int64_t m = 0; m < 128; ++m) {
        const size_t i = static_cast<size_t>(r * 128 + m);
        if (zero_row) {
          ASSERT_EQ(f.mel[i], 0.0f) << name << " row " << r << " is padding";
        }
        const double d = std::abs(static_cast<double>(f.mel[i]) - g.data[i]);
        max_all = std::max(max_all, d);
        if (g.data[i] > -4) max_loud = std::max(max_loud, d);
        sum += d;
      }
    }
    const double mean = sum / static_cast<double>(g.data.size());
    std::printf("[oracle] features %-9s max |d| %.2e (%.2e where gold > -4), mean %.2e\n", name, max_all, max_loud, mean);
    EXPECT_LE(max_loud, 1e-4) << name;
    EXPECT_LE(max_all, 1e-2) << name;
    EXPECT_LE(mean, 1e-4) << name;
  }
}

TEST(OracleAudio, TowerOnGoldenFeaturesExactTier) {
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.audio);
  for (const char* name : kClips) {
    const auto& clip = Clip(name);
    model::AudioTrace trace;
    const std::vector<float> soft = Encode(t, GoldenFeatures(clip), &trace);
    const int64_t n = clip["n_soft_tokens"].get<int64_t>(), Da = t.audio->config().hidden_size;
    ASSERT_EQ(static_cast<int64_t>(soft.size()), n * t.audio->config().text_hidden_size) << name;
    const Diff ds = Compare(trace.sscp, Golden(clip, "sscp"), n * Da);  // the valid rows
    const Diff dt = Compare(trace.tower, Golden(clip, "tower"));
    const Diff d = Compare(soft, Golden(clip, "soft"));
    std::printf("[oracle] %-9s golden features: sscp %.2e, tower %.2e, soft max %.2e mean %.2e (x RMS %.2e)\n", name,
                ds.max_abs, dt.max_abs, d.max_abs, d.mean_abs, d.max_abs / d.rms_gold);
    EXPECT_LE(ds.max_abs, 1e-3 * ds.rms_gold) << name << " sscp";
    EXPECT_LE(d.max_abs, 1e-3 * d.rms_gold) << name;
  }
}

TEST(OracleAudio, TowerOnOwnFeaturesExactTier) {
  GEMLET_NEED_AUDIO_LIBS();
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.audio);
  for (const char* name : kClips) {
    const auto& clip = Clip(name);
    const Diff d = Compare(Encode(t, OwnFeatures(clip)), Golden(clip, "soft"));
    std::printf("[oracle] %-9s own features: soft max %.2e mean %.2e (x RMS %.2e)\n", name, d.max_abs, d.mean_abs,
                d.max_abs / d.rms_gold);
    EXPECT_LE(d.max_abs, 1e-3 * d.rms_gold) << name;
  }
}

// The 44.1 kHz stereo file through our downmix and libsoxr: the token count of the 16 kHz
// file, and soft tokens within the README's bound for resampled input (5e-2 max, 1e-2 mean).
TEST(OracleAudio, StereoResampledClip) {
  GEMLET_NEED_AUDIO_LIBS();
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.audio);
  const auto& clip = Clip("stereo44k");
  auto a = DecodeAudioFile(Dir() + clip["source_file"].get<std::string>());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->source_rate, 44100);
  EXPECT_EQ(a->source_channels, 2);
  EXPECT_EQ(static_cast<int64_t>(a->samples.size()), clip["n_samples"].get<int64_t>());
  auto f = model::ExtractAudioFeatures(a->samples);
  ASSERT_TRUE(f.ok());
  const std::vector<float> soft = Encode(t, *f);
  const int64_t D = t.audio->config().text_hidden_size;
  ASSERT_EQ(static_cast<int64_t>(soft.size()) / D, clip["n_soft_tokens"].get<int64_t>());
  const Diff d = Compare(soft, Golden(clip, "soft"));
  std::printf("[oracle] stereo44k.wav resampled: soft max %.2e mean %.2e\n", d.max_abs, d.mean_abs);
  EXPECT_LE(d.max_abs, 5e-2);
  EXPECT_LE(d.mean_abs, 1e-2);
}

// Logits [length, V] of case `c` with the soft tokens of each of its clips.
std::vector<float> PromptLogits(const runtime::Engine& engine, const nlohmann::json& c,
                                const std::vector<std::vector<float>>& softs) {
  const std::vector<int32_t> tokens = c["tokens"].get<std::vector<int32_t>>();
  std::vector<int64_t> rows;
  std::vector<float> emb;
  for (size_t k = 0; k < c["audio_spans"].size(); ++k) {
    const int64_t first = c["audio_spans"][k]["first_audio_pos"], n = c["audio_spans"][k]["n"];
    for (int64_t r = 0; r < n; ++r) rows.push_back(first + r);
    emb.insert(emb.end(), softs[k].begin(), softs[k].end());
  }
  runtime::SessionOptions so;
  so.context_limit = static_cast<int64_t>(tokens.size()) + 32;
  so.prefill_chunk = 32;  // chunks that cut through the audio spans
  runtime::Session s(engine, so);
  std::vector<float> logits;
  Status st = s.Prefill(tokens, rows, emb.data(), &logits, /*all_rows=*/true);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return logits;
}

TEST(OracleAudio, PromptLogitsAndGreedyExactTier) {
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.audio);
  const NpyArray& gold = oracle::Golden("tiny-e2b-audio", "ref");
  const int64_t V = t.engine->config().vocab_size, D = t.audio->config().text_hidden_size;
  for (const auto& c : Cases()["cases"]) {
    const std::string what = "case " + std::to_string(c["id"].get<int>());
    std::vector<std::vector<float>> golden_softs;
    for (const auto& name : c["clips"]) golden_softs.push_back(Golden(Clip(name), "soft").data);
    const int64_t T = c["length"].get<int64_t>();
    const float* want = gold.data.data() + c["row_offset"].get<int64_t>() * V;
    std::vector<float> logits = PromptLogits(*t.engine, c, golden_softs);
    ASSERT_EQ(static_cast<int64_t>(logits.size()), T * V);
    const oracle::Stats s = oracle::Compare(logits.data(), want, T, V);
    oracle::Report(what + " logits, golden soft tokens", s);
    oracle::ExpectExactTier(s, what);

    // Greedy from the golden soft tokens: equal to ref up to the first near-tie.
    std::vector<int64_t> rows;
    std::vector<float> emb;
    for (size_t k = 0; k < c["audio_spans"].size(); ++k) {
      for (int64_t r = 0; r < c["audio_spans"][k]["n"].get<int64_t>(); ++r) {
        rows.push_back(c["audio_spans"][k]["first_audio_pos"].get<int64_t>() + r);
      }
      emb.insert(emb.end(), golden_softs[k].begin(), golden_softs[k].end());
    }
    runtime::SessionOptions so;
    so.context_limit = T + 32;
    runtime::Session sess(*t.engine, so);
    std::vector<float> last;
    ASSERT_TRUE(sess.Prefill(c["tokens"].get<std::vector<int32_t>>(), rows, emb.data(), &last).ok());
    const auto greedy = c["greedy"]["ref"]["tokens"].get<std::vector<int32_t>>();
    const auto gaps = c["greedy"]["ref"]["gaps"].get<std::vector<double>>();
    for (size_t i = 0; i < greedy.size(); ++i) {
      if (gaps[i] < 2e-3) break;
      const int32_t got = static_cast<int32_t>(oracle::TopGap(last.data(), V).first);
      ASSERT_EQ(got, greedy[i]) << what << " greedy step " << i;
      ASSERT_TRUE(sess.Decode(got, &last).ok());
    }

    // The whole chain from the WAV files: max 1e-2, mean 3e-4.
    if (!AudioDecodingAvailable()) continue;
    std::vector<std::vector<float>> own;
    for (const auto& name : c["clips"]) {
      own.push_back(Encode(t, OwnFeatures(Clip(name))));
      ASSERT_EQ(static_cast<int64_t>(own.back().size()), Clip(name)["n_soft_tokens"].get<int64_t>() * D);
    }
    logits = PromptLogits(*t.engine, c, own);
    const oracle::Stats w = oracle::Compare(logits.data(), want, T, V);
    oracle::Report(what + " logits from the WAV files", w);
    EXPECT_LE(w.max_abs, 1e-2) << what;
    EXPECT_LE(w.mean_abs(), 3e-4) << what;
  }
}

// The fast path: the default plan's f16 tower and the kernels of this CPU (kFast), on the
// golden features: soft tokens within the approximate tier, max ≤ 1e-2 × RMS, mean ≤ 1e-3 × RMS.
TEST(OracleAudio, FastPathApproximateTier) {
  Tower t = OpenTower("default", ops::MatMulMode::kFast);
  ASSERT_TRUE(t.audio);
  for (const char* name : kClips) {
    const auto& clip = Clip(name);
    const Diff d = Compare(Encode(t, GoldenFeatures(clip)), Golden(clip, "soft"));
    std::printf("[oracle] %-9s fast path (f16 tower): soft max %.2e mean %.2e (x RMS %.2e)\n", name, d.max_abs,
                d.mean_abs, d.max_abs / d.rms_gold);
    EXPECT_LE(d.max_abs, 1e-2 * d.rms_gold) << name;
    EXPECT_LE(d.mean_abs, 1e-3 * d.rms_gold) << name;
  }
}

}  // namespace oracle_audio_test
}  // namespace gemlet
