// Transcription of audio of any length (issue 18, "Longer than 30 s"): Gemma 4's audio tower
// hears at most 30 s (HF truncates there), so a longer clip is cut into windows of at most
// 30 s, each ending on the quietest point near its end (PlanAudioWindows), and each window is
// transcribed as one chat turn — its soft tokens (runtime/audio_encoder.h), an instruction,
// and the text so far as context — and the answers are joined, with each window's bounds as
// its timestamps (runtime/transcript.h writes them as text, JSON, SRT or WebVTT).
//
// How a window's turn is generated is the caller's (a WindowRunner): SessionWindowRunner runs
// it on a Session through runtime::Generate (the CLI); the server runs it through its
// scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/audio_encoder.h"
#include "runtime/engine.h"
#include "runtime/media.h"
#include "runtime/sampler.h"
#include "runtime/transcript.h"
#include "text/tokenizer.h"

namespace gemlet::runtime {

// Samples [begin, end) of a clip.
struct AudioWindow {
  int64_t begin = 0;
  int64_t end = 0;
};

struct WindowOptions {
  double max_seconds = 30.0;    // a window's length at most (the tower's input)
  double search_seconds = 5.0;  // where a cut is looked for: the last seconds of a full window
  double frame_seconds = 0.05;  // the energy is compared over frames this long
  double min_seconds = 0.5;     // no window is shorter (but a whole clip that is)
};

// Windows covering [0, n) in order, each at most max_seconds long: a clip that fits is one
// window; otherwise each window ends at the middle of the frame of least energy (the latest
// of equals) among the frames of its last search_seconds, leaving at least min_seconds after
// it. Empty for n = 0.
std::vector<AudioWindow> PlanAudioWindows(std::span<const float> samples, int64_t rate,
                                          const WindowOptions& options = {});

// One window's turn, as a WindowRunner receives it.
struct WindowTurn {
  int64_t index = 0;
  AudioWindow window;
  std::string message;   // the user message: <|audio|> (the clip), then the instruction
  MediaRef audio;        // the window's soft tokens (MediaKind::kAudio)
  int64_t max_tokens = 0;
  const SamplerOptions* sampler = nullptr;
};
// The answer to a window's turn: its visible text (thoughts left out) and generated ids.
struct WindowAnswer {
  std::string text;
  std::vector<int32_t> ids;
};
using WindowRunner = std::function<Result<WindowAnswer>(const WindowTurn& turn)>;

struct TranscribeOptions {
  std::string language;       // the speech's language ("" = not said); ISO code or name
  bool translate = false;     // into English instead of transcribing (/v1/audio/translations)
  std::string prompt;         // text that precedes the audio (OpenAI's `prompt`): context
  SamplerOptions sampler;     // default: greedy (temperature 0)
  int64_t max_tokens = 448;   // per window
  // With random weights nothing ends a window's answer: cap it at this many tokens per second
  // of the window (0 = no cap; the tests and benchmarks use 3).
  double max_tokens_per_second = 0;
  size_t context_chars = 500;  // of the text so far given to the next window
  WindowOptions windows;
  // Called after each window (progress; the CLI prints as it goes). Returning false stops.
  std::function<bool(const TranscriptSegment& segment, int64_t windows)> on_segment;
  TranscribeOptions() { sampler.temperature = 0; }
};

// The language name for an ISO 639-1 code ("de" → "German"); the text itself otherwise.
std::string LanguageName(const std::string& language);

// The user message of a window's turn.
std::string WindowMessage(const TranscribeOptions& options, std::string_view context);

// Transcribes 16 kHz mono `samples` window by window. `hash` identifies the samples (the
// windows' soft tokens are hashed from it and their bounds). Errors name `name`.
Result<Transcript> Transcribe(AudioEncoder& encoder, std::span<const float> samples, uint64_t hash,
                              const std::string& name, const TranscribeOptions& options, const WindowRunner& run);

// The prompt of a window's turn: its message as one user turn of the chat template with the
// generation prompt, tokenized, the audio placeholder expanded into the window's soft tokens.
// Every runner renders windows this way (SessionWindowRunner, the server's).
Result<MediaPrompt> WindowPrompt(const Engine& engine, const Tokenizer& tokenizer, const WindowTurn& turn);

// The answer of a window's turn from its generated ids (the end-of-turn token left out): its
// visible text as `run` and `chat` show it (runtime::AnswerStream's content). Every runner
// answers this way, so a transcript does not depend on where its windows ran.
WindowAnswer WindowAnswerOf(const Tokenizer& tokenizer, std::vector<int32_t> ids);

// A runner that renders the turn with the chat template, expands the audio placeholder and
// generates on a fresh Session of `engine` (runtime::Generate).
WindowRunner SessionWindowRunner(const Engine& engine, const Tokenizer& tokenizer);

}  // namespace gemlet::runtime
