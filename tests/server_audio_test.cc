// Audio through the server on ../shared/oracle/tiny-e2b-audio: an OpenAI chat request's
// input_audio parts render to the oracle's token layout (Gemma4Processor's boa, n × audio, eoa,
// at each part's place among the text parts) with the clips' soft tokens as media rows; the
// scheduler's greedy streams of every case, sharing steps, equal Sessions fed the same prompts
// alone and the oracle's greedy continuations up to their first near-tie; and a transcription
// through POST /v1/audio/transcriptions' handler (its windows generated on the scheduler) is
// byte for byte the transcript runtime::Transcribe writes with SessionWindowRunner (what
// `gemlet transcribe` runs): one generation path.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/audio_encoder.h"
#include "runtime/transcriber.h"
#include "tests/oracle_test_util.h"
#include "tests/server_test_util.h"
#include "tools/server/api_handlers.h"
#include "tools/server/audio_api.h"
#include "tools/server/model_backend.h"
#include "tools/server/scheduler.h"

namespace gemlet::oracle {
namespace server_audio_test {

const std::string& Dir() {
  static const std::string d = OracleDir() + "tiny-e2b-audio/";
  return d;
}

std::vector<uint8_t> FileBytes(const std::string& name) {
  std::ifstream f(Dir() + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Oracle case `c` as a chat request: its segments as text and input_audio parts, in order (the
// 44.1 kHz stereo clip as its file, resampled by the decoder).
server::ChatRequest Request(const nlohmann::json& c) {
  server::ChatMessage m;
  size_t index = 0;
  for (const auto& seg : c["segments"]) {
    const std::string kind = seg[0], value = seg[1];
    if (kind == "text") {
      m.content += value;
    } else {
      m.audios.push_back(server::AudioInput{FileBytes(value + ".wav"),
                                            "messages[0].content[" + std::to_string(index) + "].input_audio",
                                            m.content.size(), index});
    }
    ++index;
  }
  server::ChatRequest req;
  req.messages.push_back(std::move(m));
  return req;
}

// Case c's tokens as the tiny tokenizer writes its text: the oracle wrote the text bytes as
// byte tokens, where the tokenizer first turns a space into "▁" (SentencePiece's normalizer),
// three byte tokens here; each span's first audio position moves with them.
std::vector<int32_t> Tokenized(const nlohmann::json& c, std::vector<int64_t>* starts) {
  const int32_t kSpace = 270;                           // <0x20>
  const std::vector<int32_t> kLowLine = {464, 388, 367};  // "▁": <0xE2> <0x96> <0x81>
  std::vector<int32_t> out;
  std::vector<int64_t> shift;  // by position: how far it moved
  for (int32_t t : c["tokens"].get<std::vector<int32_t>>()) {
    shift.push_back(static_cast<int64_t>(out.size()));
    if (t == kSpace) {
      out.insert(out.end(), kLowLine.begin(), kLowLine.end());
    } else {
      out.push_back(t);
    }
  }
  for (const auto& span : c["audio_spans"]) starts->push_back(shift[span["first_audio_pos"].get<size_t>()]);
  return out;
}

struct Fixture {
  std::unique_ptr<runtime::Engine> engine;
  std::unique_ptr<server::GemmaChatModel> model;
};

Fixture Open() {
  Fixture f;
  f.engine = OpenEngine(Converted("tiny-e2b-audio", "model.safetensors"), 1);
  if (!f.engine) return f;
  auto model = server::GemmaChatModel::Create(*f.engine, "tiny-audio", 2048);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (model.ok()) f.model = std::move(model).value();
  return f;
}

TEST(ServerAudio, AudioPartsRenderAsTheOracleLayout) {
  GEMLET_NEED_AUDIO_LIBS();
  Fixture f = Open();
  ASSERT_TRUE(f.model);
  for (const auto& c : OracleCases("tiny-e2b-audio")["cases"]) {
    auto r = f.model->RenderChat(Request(c));
    ASSERT_TRUE(r.ok()) << r.error().message;
    std::vector<int64_t> starts;
    EXPECT_EQ(r->tokens, Tokenized(c, &starts)) << c["clips"].dump();
    ASSERT_EQ(r->media.size(), c["audio_spans"].size());
    for (size_t k = 0; k < r->media.size(); ++k) {
      EXPECT_EQ(r->media[k].start, starts[k]);
      EXPECT_EQ(r->media[k].rows, c["audio_spans"][k]["n"].get<int64_t>());
    }
  }
  // sweep, bursts, click and stereo44k once each.
  EXPECT_EQ(f.model->AudioEncodes(), 4);
  // {audio} places the clip instead of its part's offset; a wrong count names the content; a
  // bad clip is a 400 naming its part.
  const nlohmann::json& first = OracleCases("tiny-e2b-audio")["cases"][0];
  server::ChatRequest placed = Request(first);
  placed.messages[0].content = "{audio}" + placed.messages[0].content;
  placed.messages[0].audios[0].offset = 3;
  auto r = f.model->RenderChat(placed);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, first["tokens"].get<std::vector<int32_t>>());
  placed.messages[0].content += "{audio}";
  auto e = f.model->RenderChat(placed);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().param, "messages[0].content");
  server::ChatRequest bad = Request(first);
  bad.messages[0].audios[0].bytes.resize(100);  // a truncated WAV
  e = f.model->RenderChat(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().status, 400);
  EXPECT_EQ(e.error().param, "messages[0].content[0].input_audio");
  EXPECT_NE(e.error().message.find("truncated"), std::string::npos) << e.error().message;
}

TEST(ServerAudio, AudioPromptsInSharedStepsEqualSessionsAloneAndTheOracle) {
  GEMLET_NEED_AUDIO_LIBS();
  Fixture f = Open();
  ASSERT_TRUE(f.model);
  const int64_t n = 16;
  const auto& cases = OracleCases("tiny-e2b-audio")["cases"];
  std::vector<server::RenderedPrompt> prompts;
  std::vector<std::vector<int32_t>> want;
  for (const auto& c : cases) {
    auto r = f.model->RenderChat(Request(c));
    ASSERT_TRUE(r.ok()) << r.error().message;
    // The oracle's own tokens (its text bytes as byte tokens, Tokenized above) with the clips
    // the server encoded, at the oracle's spans.
    r->tokens = c["tokens"].get<std::vector<int32_t>>();
    for (size_t k = 0; k < r->media.size(); ++k) r->media[k].start = c["audio_spans"][k]["first_audio_pos"];
    auto alone = GreedyAlone(*f.engine, runtime::MediaPrompt{r->tokens, r->media}, n, 512);
    ASSERT_TRUE(alone.ok()) << alone.status().ToString();
    // The oracle's greedy tokens up to the first near-tie (the fast path and the WAV features
    // move the logits a little; the stereo clip's resampling more: the README's tiers).
    const auto ref = c["greedy"]["ref"]["tokens"].get<std::vector<int32_t>>();
    const auto gaps = c["greedy"]["ref"]["gaps"].get<std::vector<double>>();
    for (size_t i = 0; i < ref.size() && gaps[i] >= 0.1; ++i) {
      EXPECT_EQ(alone->ids[i], ref[i]) << c["clips"].dump() << " greedy step " << i;
    }
    want.push_back(alone->ids);
    prompts.push_back(std::move(r).value());
  }
  server::Metrics metrics;
  server::SchedulerOptions so;
  so.slots = static_cast<int>(prompts.size());
  so.prefill_chunk = 20;  // chunks that cut through the clips, beside the others' decoding
  server::Scheduler sched(f.model->backend(), metrics, so);
  std::vector<std::shared_ptr<Collect>> sinks;
  for (const auto& p : prompts) {
    sinks.push_back(std::make_shared<Collect>());
    SubmitGreedy(sched, *f.model, p, n, sinks.back());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const server::JobOutcome o = sinks[i]->Wait();
    EXPECT_EQ(o.reason, server::FinishReason::kLength) << o.status.ToString();
    EXPECT_EQ(sinks[i]->tokens(), want[i]) << "case " << i;
  }
  sched.Shutdown();
}

// A 40 s clip: the oracle's mono clips in turn with a second of silence after each.
std::vector<uint8_t> FortySeconds() {
  std::vector<int16_t> pcm;
  const char* names[] = {"sweep.wav", "bursts.wav", "click.wav"};
  for (int i = 0; pcm.size() < 40 * 16000; ++i) {
    const std::vector<uint8_t> wav = FileBytes(names[i % 3]);
    const size_t at = pcm.size();
    pcm.resize(at + (wav.size() - 44) / 2);
    std::memcpy(pcm.data() + at, wav.data() + 44, (wav.size() - 44) / 2 * 2);
    pcm.resize(pcm.size() + 16000, 0);
  }
  pcm.resize(40 * 16000);
  std::vector<uint8_t> out(44 + pcm.size() * 2);
  auto put = [&](size_t at, uint32_t v, int bytes) {
    for (int b = 0; b < bytes; ++b) out[at + b] = static_cast<uint8_t>(v >> (8 * b));
  };
  std::memcpy(out.data(), "RIFF", 4);
  put(4, static_cast<uint32_t>(36 + pcm.size() * 2), 4);
  std::memcpy(out.data() + 8, "WAVEfmt ", 8);
  put(16, 16, 4), put(20, 1, 2), put(22, 1, 2), put(24, 16000, 4), put(28, 32000, 4), put(32, 2, 2), put(34, 16, 2);
  std::memcpy(out.data() + 36, "data", 4);
  put(40, static_cast<uint32_t>(pcm.size() * 2), 4);
  std::memcpy(out.data() + 44, pcm.data(), pcm.size() * 2);
  return out;
}

TEST(ServerAudio, TranscriptionEqualsTheCliPath) {
  GEMLET_NEED_AUDIO_LIBS();
  Fixture f = Open();
  ASSERT_TRUE(f.model);
  const std::vector<uint8_t> wav = FortySeconds();
  // The CLI's path: runtime::Transcribe with a Session per window.
  runtime::TranscribeOptions to;
  to.max_tokens_per_second = 1;
  to.language = "de";
  auto clip = f.model->audio_encoder()->Decode(wav, "'clip.wav'");
  ASSERT_TRUE(clip.ok()) << clip.status().ToString();
  auto cli = runtime::Transcribe(*f.model->audio_encoder(), clip->samples, runtime::HashBytes(wav.data(), wav.size()),
                                 "'clip.wav'", to, runtime::SessionWindowRunner(*f.engine, *f.engine->tokenizer()));
  ASSERT_TRUE(cli.ok()) << cli.status().ToString();
  ASSERT_EQ(cli->segments.size(), 2u);  // 40 s: two windows
  // The server's: the handler, its windows on the scheduler.
  server::Metrics metrics;
  server::Scheduler sched(f.model->backend(), metrics, server::SchedulerOptions{});
  server::ApiHandlers h(*f.model, sched, metrics, server::HandlerOptions{});
  for (const char* format : {"verbose_json", "srt"}) {
    server::MultipartForm form;
    form.parts.push_back({"file", "clip.wav", "audio/wav", std::string(wav.begin(), wav.end())});
    form.parts.push_back({"response_format", "", "", format});
    form.parts.push_back({"language", "", "", "de"});
    form.parts.push_back({"max_tokens_per_second", "", "", "1"});
    server::HttpReply reply = server::AudioTranscriptions(h, form, /*translate=*/false);
    ASSERT_EQ(reply.status, 200) << reply.body;
    ASSERT_TRUE(reply.stream);
    std::string body;
    reply.stream([&](std::string_view s) {
      body += s;
      return true;
    });
    auto want = runtime::FormatTranscript(*cli, *runtime::ParseTranscriptFormat(format));
    // (a JSON reply may begin with keep-alive spaces)
    EXPECT_EQ(body.substr(body.find_first_not_of(' ')), want) << format;
  }
  sched.Shutdown();
}

}  // namespace server_audio_test
}  // namespace gemlet::oracle
