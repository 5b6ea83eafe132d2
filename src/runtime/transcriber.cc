#include "runtime/transcriber.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/clock.h"
#include "format/gemma4_tokens.h"
#include "model/gemma4_audio_features.h"
#include "runtime/conversation.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "text/chat_format.h"
#include "text/utf8.h"

namespace gemlet::runtime {

namespace {

// The last `n` bytes of `text` or fewer, starting at a word (or at least a UTF-8 character).
std::string_view Tail(std::string_view text, size_t n) {
  if (text.size() <= n) return text;
  size_t b = text.size() - n;
  const size_t sp = text.find(' ', b);
  if (sp != std::string_view::npos && sp + 1 < text.size()) return text.substr(sp + 1);
  while (b < text.size() && (static_cast<uint8_t>(text[b]) & 0xC0) == 0x80) ++b;
  return text.substr(b);
}

}  // namespace

std::vector<AudioWindow> PlanAudioWindows(std::span<const float> samples, int64_t rate,
                                          const WindowOptions& options) {
  const int64_t n = static_cast<int64_t>(samples.size());
  const int64_t max_len = std::max<int64_t>(1, static_cast<int64_t>(options.max_seconds * rate));
  const int64_t frame = std::max<int64_t>(1, static_cast<int64_t>(options.frame_seconds * rate));
  const int64_t search = std::clamp<int64_t>(static_cast<int64_t>(options.search_seconds * rate), frame, max_len);
  const int64_t min_len = std::clamp<int64_t>(static_cast<int64_t>(options.min_seconds * rate), 0, max_len - search);
  std::vector<AudioWindow> out;
  int64_t pos = 0;
  while (n - pos > max_len) {
    // The frames of [lo, pos + max_len): the quietest one's middle is the cut.
    const int64_t hi = pos + max_len, lo = hi - search;
    int64_t cut = hi;
    double best = INFINITY;
    for (int64_t f = lo; f + frame <= hi; f += frame) {
      double e = 0;
      for (int64_t i = f; i < f + frame; ++i) e += double(samples[i]) * samples[i];
      if (e <= best) {
        best = e;
        cut = f + frame / 2;
      }
    }
    cut = std::min(cut, n - min_len);  // the rest stays long enough to make features
    out.push_back({pos, cut});
    pos = cut;
  }
  if (n > pos) out.push_back({pos, n});
  return out;
}

std::string LanguageName(const std::string& language) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"en", "English"},    {"de", "German"},   {"fr", "French"},  {"es", "Spanish"}, {"it", "Italian"},
      {"pt", "Portuguese"}, {"nl", "Dutch"},    {"pl", "Polish"},  {"ru", "Russian"}, {"uk", "Ukrainian"},
      {"zh", "Chinese"},    {"ja", "Japanese"}, {"ko", "Korean"},  {"ar", "Arabic"},  {"hi", "Hindi"},
      {"tr", "Turkish"},    {"sv", "Swedish"},  {"da", "Danish"},  {"fi", "Finnish"}, {"no", "Norwegian"},
      {"cs", "Czech"},      {"el", "Greek"},    {"he", "Hebrew"},  {"id", "Indonesian"}, {"vi", "Vietnamese"},
      {"th", "Thai"},       {"ro", "Romanian"}, {"hu", "Hungarian"}};
  for (const auto& [code, name] : kNames) {
    if (language == code) return name;
  }
  return language;
}

std::string WindowMessage(const TranscribeOptions& options, std::string_view context) {
  // Gemma's speech prompts (model card): "Transcribe the following speech segment in L into
  // L text." and "... then translate it into English."
  std::string m(gemma4::kAudio);
  const std::string lang = LanguageName(options.language);
  if (options.translate) {
    m += "Transcribe the following speech segment" + (lang.empty() ? std::string() : " in " + lang) +
         ", then translate it into English. Only output the English translation.";
  } else if (lang.empty()) {
    m += "Transcribe the following speech segment in its language. Only output the transcription.";
  } else {
    m += "Transcribe the following speech segment in " + lang + " into " + lang +
         " text. Only output the transcription.";
  }
  if (!context.empty()) {
    m += "\nIt continues this text, which is not to be repeated: ";
    m += context;
  }
  return m;
}

Result<Transcript> Transcribe(AudioEncoder& encoder, std::span<const float> samples, uint64_t hash,
                              const std::string& name, const TranscribeOptions& options, const WindowRunner& run) {
  if (samples.empty()) return InvalidArgument(name + ": the audio has no samples");
  Transcript t;
  t.language = options.language;
  t.task = options.translate ? "translate" : "transcribe";
  constexpr double kRate = model::kAudioSampleRate;
  t.duration = samples.size() / kRate;
  const std::vector<AudioWindow> windows = PlanAudioWindows(samples, model::kAudioSampleRate, options.windows);
  // The context: the prompt, then the text so far.
  std::string so_far(utf8::TrimAsciiSpace(options.prompt));
  for (size_t i = 0; i < windows.size(); ++i) {
    const AudioWindow w = windows[i];
    const auto t0 = SteadyClock::now();
    const int64_t bounds[2] = {w.begin, w.end};
    const std::string wname = name + " (" + FormatTimestamp(w.begin / kRate, '.') + "-" +
                              FormatTimestamp(w.end / kRate, '.') + ")";
    ASSIGN_OR_RETURN(MediaRef audio, encoder.EncodeSamples(samples.subspan(w.begin, w.end - w.begin),
                                                           HashBytes(bounds, sizeof(bounds), hash), wname));
    t.encode_ms += MsSince(t0);
    WindowTurn turn;
    turn.index = static_cast<int64_t>(i);
    turn.window = w;
    turn.message = WindowMessage(options, Tail(so_far, options.context_chars));
    turn.audio = std::move(audio);
    turn.max_tokens = options.max_tokens;
    if (options.max_tokens_per_second > 0) {
      const auto cap = static_cast<int64_t>(std::ceil(options.max_tokens_per_second * (w.end - w.begin) / kRate));
      turn.max_tokens = std::max<int64_t>(1, std::min(turn.max_tokens, cap));
    }
    turn.sampler = &options.sampler;
    const auto t1 = SteadyClock::now();
    auto answer = run(turn);
    if (!answer.ok()) return answer.status().WithContext(wname);
    t.generate_ms += MsSince(t1);
    TranscriptSegment seg;
    seg.index = turn.index;
    seg.start = w.begin / kRate;
    seg.end = w.end / kRate;
    seg.text = std::string(utf8::TrimAsciiSpace(answer->text));
    seg.ids = std::move(answer->ids);
    t.generated_tokens += static_cast<int64_t>(seg.ids.size());
    if (!seg.text.empty()) {
      if (!t.text.empty()) t.text += ' ';
      t.text += seg.text;
      if (!so_far.empty()) so_far += ' ';
      so_far += seg.text;
    }
    t.segments.push_back(std::move(seg));
    if (options.on_segment && !options.on_segment(t.segments.back(), static_cast<int64_t>(windows.size()))) break;
  }
  return t;
}

Result<MediaPrompt> WindowPrompt(const Engine& engine, const Tokenizer& tokenizer, const WindowTurn& turn) {
  ChatMessage user;
  user.role = "user";
  user.content = turn.message;
  ChatOptions co;
  co.add_generation_prompt = true;
  ASSIGN_OR_RETURN(const std::string prompt, RenderChat(std::vector<ChatMessage>{user}, co));
  ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(prompt));
  const MediaRef media[] = {turn.audio};
  return ExpandMedia(ids, media, MediaKindTokens(engine));
}

WindowRunner SessionWindowRunner(const Engine& engine, const Tokenizer& tokenizer) {
  return [&engine, &tokenizer](const WindowTurn& turn) -> Result<WindowAnswer> {
    ASSIGN_OR_RETURN(MediaPrompt mp, WindowPrompt(engine, tokenizer, turn));
    SessionOptions so;
    so.context_limit = mp.size() + turn.max_tokens + 1;
    Session session(engine, so);
    if (turn.sampler) session.set_sampler(*turn.sampler);
    GenerateOptions go;
    go.max_tokens = turn.max_tokens;
    ASSIGN_OR_RETURN(GenerateResult r, Generate(session, mp, go));
    if (r.stopped_at_eog && !r.ids.empty()) r.ids.pop_back();
    return WindowAnswerOf(tokenizer, std::move(r.ids));
  };
}

WindowAnswer WindowAnswerOf(const Tokenizer& tokenizer, std::vector<int32_t> ids) {
  WindowAnswer a;
  a.ids = std::move(ids);
  AnswerStream stream(tokenizer, nullptr);
  for (int32_t id : a.ids) stream.Push(id);
  stream.Flush();
  a.text = stream.content();
  return a;
}

}  // namespace gemlet::runtime
