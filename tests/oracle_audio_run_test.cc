// Audio through the one generation path, driven as a user would on the converted tiny audio
// oracle: `gemlet run --audio` (each <|audio|> id of --tokens, or {audio} / <|audio|> in the
// text, takes the next clip) gives the oracle's greedy continuations up to the first near-tie;
// `gemlet chat`'s /audio attaches a clip to the next message; `gemlet transcribe` cuts a
// 5-minute file (the oracle clips with silence between them, made here) into 30 s windows on
// the silences and writes text, json, verbose_json, srt and vtt with the windows' timestamps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "format/npy.h"
#include "runtime/audio_encoder.h"
#include "runtime/conversation.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_audio_run_test {

const std::string kGemlet = std::string(GEMLET_BINARY_DIR) + "/tools/cli/gemlet";
const std::string& AudioDir() {
  static const std::string d = OracleDir() + "tiny-e2b-audio/";
  return d;
}

int RunBoth(const std::string& cmd, std::string* out) { return RunCommand("{ " + cmd + " 2>&1; }", out); }

std::string Join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t t : ids) s += (s.empty() ? "" : ",") + std::to_string(t);
  return s;
}

// Mono PCM16 samples of a 16-bit WAV file with a plain 44-byte header (the oracle's clips).
std::vector<int16_t> ReadPcm16(const std::string& path) {
  auto bytes = ReadFileToString(path);
  EXPECT_TRUE(bytes.ok()) << path;
  std::vector<int16_t> s;
  if (!bytes.ok() || bytes->size() < 44) return s;
  // Find the "data" chunk.
  size_t p = 12;
  while (p + 8 <= bytes->size()) {
    uint32_t len = 0;
    std::memcpy(&len, bytes->data() + p + 4, 4);
    if (bytes->compare(p, 4, "data") == 0) {
      s.resize(std::min<size_t>(len, bytes->size() - p - 8) / 2);
      std::memcpy(s.data(), bytes->data() + p + 8, s.size() * 2);
      break;
    }
    p += 8 + len + (len & 1);
  }
  return s;
}

void WriteWav16k(const std::string& path, const std::vector<int16_t>& s) {
  std::ofstream f(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { f.write(reinterpret_cast<const char*>(&v), 2); };
  const uint32_t data = static_cast<uint32_t>(s.size() * 2);
  f.write("RIFF", 4);
  u32(36 + data);
  f.write("WAVEfmt ", 8);
  u32(16);
  u16(1);
  u16(1);
  u32(16000);
  u32(32000);
  u16(2);
  u16(16);
  f.write("data", 4);
  u32(data);
  f.write(reinterpret_cast<const char*>(s.data()), data);
}

// Case c's tokens with each expanded span (<|audio>, n × <|audio|>, <audio|>) back to one
// <|audio|> id, as a prompt written with the placeholder tokenizes.
std::vector<int32_t> Collapsed(const nlohmann::json& c) {
  const auto toks = c["tokens"].get<std::vector<int32_t>>();
  std::vector<int32_t> out;
  size_t next = 0;
  for (const auto& span : c["audio_spans"]) {
    const size_t boa = span["boa_pos"], eoa = span["eoa_pos"];
    out.insert(out.end(), toks.begin() + next, toks.begin() + boa);
    out.push_back(toks[span["first_audio_pos"].get<size_t>()]);
    next = eoa + 1;
  }
  out.insert(out.end(), toks.begin() + next, toks.end());
  return out;
}

TEST(OracleAudioRun, GreedyContinuationsEqualTheOracle) {
  GEMLET_NEED_AUDIO_LIBS();
  const std::string model = Converted("tiny-e2b-audio", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const auto& j = OracleCases("tiny-e2b-audio");
  for (const auto& c : j["cases"]) {
    std::string audio;
    for (const auto& clip : c["clips"]) {
      const std::string name = clip.get<std::string>() == "stereo44k" ? "stereo44k-16k" : clip.get<std::string>();
      audio += " --audio " + AudioDir() + name + ".wav";
    }
    std::string out;
    ASSERT_EQ(RunBoth(kGemlet + " run -m " + model + " --exact --temp 0 -n 16 --ignore-eos --json --threads 1" +
                          " --tokens " + Join(Collapsed(c)) + audio,
                      &out),
              0)
        << out;
    const auto r = nlohmann::json::parse(out.substr(out.find('{')));
    EXPECT_EQ(r["prompt_tokens"].get<int64_t>(), c["length"].get<int64_t>()) << out;
    const auto got = r["ids"].get<std::vector<int32_t>>();
    const auto want = c["greedy"]["ref"]["tokens"].get<std::vector<int32_t>>();
    const auto gaps = c["greedy"]["ref"]["gaps"].get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size()) << out;
    // From the WAV files the logits are within 1e-2 of the reference (the features' floor):
    // equal up to the first top-1/top-2 gap below 0.05.
    size_t checked = 0;
    for (size_t i = 0; i < want.size() && gaps[i] >= 0.05; ++i, ++checked) {
      EXPECT_EQ(got[i], want[i]) << c["clips"].dump() << " greedy step " << i;
    }
    EXPECT_GE(checked, 4u) << c["clips"].dump();
  }
}

// In process: the encoder binds the tower at the first clip, encodes a content once (the soft
// tokens are the golden ones), and a conversation's audio turn places the clip by {audio}.
TEST(OracleAudioRun, EncoderCachesAndConversationPlacesClips) {
  GEMLET_NEED_AUDIO_LIBS();
  const std::string model = Converted("tiny-e2b-audio", "model.safetensors");
  ASSERT_FALSE(model.empty());
  auto engine = OpenEngine(model, 1);
  ASSERT_TRUE(engine);
  auto enc = runtime::AudioEncoder::Create(*engine);
  EXPECT_TRUE(enc->available());
  EXPECT_FALSE(enc->bound());
  runtime::ConversationOptions co;
  co.sampler.temperature = 0;
  co.max_tokens = 3;
  co.session = runtime::SessionOptions{1024, 64};
  runtime::Conversation conv(*engine, *engine->tokenizer(), co);
  ASSERT_TRUE(conv.Send("hi").ok());
  EXPECT_FALSE(enc->bound());  // a text turn does not touch the tower
  auto bytes = ReadFileToString(AudioDir() + "sweep.wav");
  ASSERT_TRUE(bytes.ok());
  const std::vector<uint8_t> b1(bytes->begin(), bytes->end()), b2 = b1;
  auto m1 = enc->Encode(b1, "first");
  auto m2 = enc->Encode(b2, "second");
  ASSERT_TRUE(m1.ok() && m2.ok()) << m1.status().ToString();
  EXPECT_EQ(enc->encodes(), 1);
  EXPECT_EQ(*m1, *m2);
  EXPECT_EQ((*m1)->kind, runtime::MediaKind::kAudio);
  ASSERT_EQ((*m1)->rows, 38);
  auto soft = ReadNpy(AudioDir() + "soft-sweep.npy");
  ASSERT_TRUE(soft.ok());
  ASSERT_EQ(soft->data.size(), (*m1)->data.size());
  double max_diff = 0;
  for (size_t i = 0; i < soft->data.size(); ++i)
    max_diff = std::max(max_diff, std::abs(double((*m1)->data[i]) - soft->data[i]));
  EXPECT_LE(max_diff, 5e-2);  // the fast path's tier (int8 kernels)
  const int64_t before = conv.position();
  auto turn = conv.Send("then {audio} what?", std::vector<runtime::MediaRef>{*m1});
  ASSERT_TRUE(turn.ok()) << turn.status().ToString();
  EXPECT_EQ(conv.message_media().size(), conv.messages().size());
  EXPECT_GE(conv.position() - before, 40);  // <|audio>, 38 rows, <audio|>
  auto bad = enc->Encode(std::vector<uint8_t>(100, 7), "audio part 2");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("audio part 2"), std::string::npos) << bad.status().message();
  auto two = conv.Send("{audio} {audio}", std::vector<runtime::MediaRef>{*m1});
  EXPECT_FALSE(two.ok());
}

TEST(OracleAudioRun, PlacementInTextChatAndErrors) {
  GEMLET_NEED_AUDIO_LIBS();
  const std::string model = Converted("tiny-e2b-audio", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const std::string click = AudioDir() + "click.wav", sweep = AudioDir() + "sweep.wav";
  std::string out;
  // {audio} and <|audio|> in the text: the prompt holds both spans (13 + 2 and 38 + 2 ids).
  ASSERT_EQ(RunBoth(kGemlet + " run -m " + model + " --temp 0 -n 4 --json -p 'A: {audio} B: <|audio|> same?'" +
                        " --audio " + click + " --audio " + sweep,
                    &out),
            0)
      << out;
  const auto two = nlohmann::json::parse(out.substr(out.find('{')));
  ASSERT_EQ(RunCommand(kGemlet + " tokenize -m " + model + " --ids 'A: <|audio|> B: <|audio|> same?'", &out), 0) << out;
  const std::regex id(R"(\d+)");
  const auto n_text = std::distance(std::sregex_iterator(out.begin(), out.end(), id), std::sregex_iterator());
  // <bos>, the text, and each placeholder's span grown from 1 id to 13 + 2 and 38 + 2.
  EXPECT_EQ(two["prompt_tokens"].get<int64_t>(), 1 + n_text + 14 + 39) << out;
  // No placeholder: the clip comes first, in a chat turn.
  ASSERT_EQ(RunBoth(kGemlet + " run -m " + model + " --chat --temp 0 -n 3 -q -p 'what is it?' --audio " + click, &out),
            0)
      << out;
  // The counts must agree; a bad file is one line naming it.
  EXPECT_EQ(RunBoth(kGemlet + " run -m " + model + " -n 1 -p '{audio} {audio}' --audio " + click, &out), 2) << out;
  EXPECT_NE(out.find("places 2"), std::string::npos) << out;
  const std::string junk = ScratchDir() + "/run_junk.wav";
  std::ofstream(junk, std::ios::binary) << "RIFF0000WAVEjunkjunkjunk";
  EXPECT_EQ(RunBoth(kGemlet + " run -m " + model + " -n 1 -p hi --audio " + junk, &out), 1) << out;
  EXPECT_NE(out.find(junk), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;

  // chat: /audio attaches to the next message; a bad path is an error line and chat goes on.
  const std::string script = ScratchDir() + "/chat_audio.txt";
  std::ofstream(script) << "/audio " << ScratchDir() << "/missing.wav\n/audio " << click
                        << "\nwhat is this sound?\nand now?\n/quit\n";
  ASSERT_EQ(RunBoth(kGemlet + " chat -m " + model + " --temp 0 -n 3 --no-history < " + script, &out), 0) << out;
  EXPECT_NE(out.find("missing.wav"), std::string::npos) << out;
  EXPECT_NE(out.find("[audio attached: " + click + ", 13 soft tokens"), std::string::npos) << out;
}

// 5 minutes: the four clips in turn, each followed by 1.7 s of digital silence, repeated.
std::vector<int16_t> FiveMinutes() {
  std::vector<std::vector<int16_t>> clips;
  for (const char* n : {"sweep", "bursts", "click", "stereo44k-16k"}) clips.push_back(ReadPcm16(AudioDir() + n + ".wav"));
  std::vector<int16_t> all;
  for (size_t k = 0; all.size() < 300u * 16000; ++k) {
    const auto& c = clips[k % clips.size()];
    all.insert(all.end(), c.begin(), c.end());
    all.insert(all.end(), 27200, 0);
  }
  all.resize(300u * 16000);
  return all;
}

TEST(OracleAudioRun, TranscribeFiveMinutesInWindows) {
  GEMLET_NEED_AUDIO_LIBS();
  const std::string model = Converted("tiny-e2b-audio", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const std::vector<int16_t> pcm = FiveMinutes();
  ASSERT_GT(pcm.size(), 0u);
  const std::string wav = ScratchDir() + "/five_minutes.wav";
  WriteWav16k(wav, pcm);
  const std::string base = kGemlet + " transcribe -m " + model + " " + wav + " --max-tokens-per-second 3 --threads 1";
  std::string out;
  ASSERT_EQ(RunCommand(base + " --format verbose_json -q", &out), 0) << out;
  const auto v = nlohmann::json::parse(out);
  EXPECT_NEAR(v["duration"].get<double>(), 300.0, 1e-6);
  EXPECT_EQ(v["task"], "transcribe");
  const auto& segs = v["segments"];
  ASSERT_GE(segs.size(), 10u);
  ASSERT_LE(segs.size(), 12u);
  double prev = 0;
  std::string joined;
  for (size_t i = 0; i < segs.size(); ++i) {
    const double s = segs[i]["start"], e = segs[i]["end"];
    EXPECT_DOUBLE_EQ(s, prev) << i;
    EXPECT_LE(e - s, 30.0 + 1e-9) << i;
    if (i + 1 < segs.size()) {
      EXPECT_GT(e - s, 24.9) << i;  // a cut in the last 5 s
    }
    // Every cut but the end falls in digital silence: the samples around it are 0.
    if (i + 1 < segs.size()) {
      const int64_t cut = std::llround(e * 16000);
      for (int64_t k = cut - 200; k < cut + 200; ++k) ASSERT_EQ(pcm[k], 0) << "cut " << i << " at " << e;
    }
    // Random weights: at most 3 tokens per second of the window.
    EXPECT_LE(segs[i]["tokens"].size(), static_cast<size_t>(std::ceil(3 * (e - s)))) << i;
    EXPECT_GE(segs[i]["tokens"].size(), 1u) << i;
    const std::string t = segs[i]["text"];
    if (!t.empty()) joined += (joined.empty() ? "" : " ") + t;
    prev = e;
  }
  EXPECT_DOUBLE_EQ(prev, 300.0);
  EXPECT_EQ(v["text"].get<std::string>(), joined);

  // The other formats, on one window (bursts.wav, 2.7 s) to keep the test short.
  const std::string one = kGemlet + " transcribe -m " + model + " " + AudioDir() +
                          "bursts.wav --max-tokens-per-second 3 --threads 1";
  ASSERT_EQ(RunCommand(one + " --format verbose_json -q", &out), 0) << out;
  const auto b = nlohmann::json::parse(out);
  ASSERT_EQ(b["segments"].size(), 1u);
  EXPECT_DOUBLE_EQ(b["segments"][0]["end"].get<double>(), 43211 / 16000.0);
  EXPECT_LE(b["segments"][0]["tokens"].size(), 9u);  // ceil(3 × 2.7)
  ASSERT_EQ(RunCommand(one + " --format json -q", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["text"], b["text"]);
  ASSERT_EQ(RunCommand(one + " -q", &out), 0) << out;
  EXPECT_EQ(out, b["text"].get<std::string>() + "\n");
  const bool empty = b["text"].get<std::string>().empty();
  const std::string srt = ScratchDir() + "/bursts.srt";
  ASSERT_EQ(RunBoth(one + " --format srt -o " + srt, &out), 0) << out;
  EXPECT_NE(out.find("[window 1/1 00:00:00.000 --> 00:00:02.701"), std::string::npos) << out;
  EXPECT_NE(out.find("real-time factor"), std::string::npos) << out;
  auto s = ReadFileToString(srt);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, empty ? "" : "1\n00:00:00,000 --> 00:00:02,701\n" + b["text"].get<std::string>() + "\n\n");
  ASSERT_EQ(RunCommand(one + " --format vtt -q", &out), 0) << out;
  EXPECT_EQ(out, empty ? "WEBVTT\n\n"
                       : "WEBVTT\n\n00:00:00.000 --> 00:00:02.701\n" + b["text"].get<std::string>() + "\n\n");

  // Bad input: a missing file, an unknown format, random bytes.
  EXPECT_EQ(RunBoth(kGemlet + " transcribe -m " + model + " " + wav + " --format docx", &out), 2) << out;
  const std::string junk = ScratchDir() + "/transcribe_junk.bin";
  std::ofstream(junk, std::ios::binary) << std::string(3000, '\x7f');
  EXPECT_EQ(RunBoth(kGemlet + " transcribe -m " + model + " " + junk, &out), 1) << out;
  EXPECT_NE(out.find(junk), std::string::npos) << out;
}

}  // namespace oracle_audio_run_test
}  // namespace gemlet::oracle
