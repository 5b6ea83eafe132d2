#include "tools/server/audio_api.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>


namespace gemlet::server {
namespace {

using Clock = std::chrono::steady_clock;

// A window's job: its generated ids (the answer is the model's reading of them,
// ChatModel::WindowAnswer, as for every transcription runner).
class WindowSink : public JobSink {
 public:
  bool OnToken(int32_t token) override {
    std::lock_guard<std::mutex> lock(mu_);
    ids_.push_back(token);
    return true;
  }
  void OnFinish(const JobOutcome& outcome) override {
    std::lock_guard<std::mutex> lock(mu_);
    outcome_ = outcome;
    cv_.notify_all();
  }
  // The outcome once the job has finished, within `timeout`; nullopt before.
  std::optional<JobOutcome> Wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return outcome_.has_value(); });
    return outcome_;
  }
  std::vector<int32_t> TakeIds() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(ids_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> ids_;
  std::optional<JobOutcome> outcome_;
};

// A request's form, checked.
struct TranscriptionForm {
  std::string filename;
  std::string_view file;  // into the form
  runtime::TranscribeOptions options;
  runtime::TranscriptFormat format = runtime::TranscriptFormat::kJson;
  double temperature = 0;
};

// A plain field's text; *out untouched when absent.
std::optional<ApiError> Field(const MultipartForm& form, const char* name, std::string* out) {
  const FormPart* p = form.Find(name);
  if (p == nullptr) return std::nullopt;
  if (!p->filename.empty()) return BadRequest(std::string("'") + name + "' must be a plain field, not a file", name);
  *out = std::string(p->data);
  return std::nullopt;
}

// A number field in [lo, hi]; *out untouched when absent or empty.
std::optional<ApiError> NumberField(const MultipartForm& form, const char* name, double lo, double hi, double* out) {
  std::string text;
  if (auto e = Field(form, name, &text)) return *e;
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < lo || v > hi) {
    char range[64];
    std::snprintf(range, sizeof(range), "between %g and %g", lo, hi);
    return BadRequest(std::string("'") + name + "' must be a number " + range + ", got '" + text.substr(0, 32) + "'",
                      name, "invalid_value");
  }
  *out = v;
  return std::nullopt;
}

ApiOr<TranscriptionForm> ParseForm(const MultipartForm& form, bool translate) {
  TranscriptionForm f;
  const FormPart* file = form.Find("file");
  if (file == nullptr) return BadRequest("'file' is required: the audio file to transcribe", "file");
  if (file->data.empty()) return BadRequest("'file' is empty", "file", "invalid_audio");
  f.file = file->data;
  f.filename = file->filename.empty() ? "file" : "'" + file->filename + "'";
  runtime::TranscribeOptions& o = f.options;
  o.translate = translate;
  if (auto e = Field(form, "language", &o.language)) return *e;
  if (o.language.size() > 64) return BadRequest("'language' is longer than 64 bytes", "language", "invalid_value");
  if (auto e = Field(form, "prompt", &o.prompt)) return *e;
  std::string format = "json";
  if (auto e = Field(form, "response_format", &format)) return *e;
  auto parsed = runtime::ParseTranscriptFormat(format);
  if (!parsed.ok()) return BadRequest("'response_format': " + parsed.status().message(), "response_format", "invalid_value");
  f.format = *parsed;
  if (auto e = NumberField(form, "temperature", 0, 2, &f.temperature)) return *e;
  double max_tokens = static_cast<double>(o.max_tokens);
  if (auto e = NumberField(form, "max_tokens", 1, 8192, &max_tokens)) return *e;
  o.max_tokens = static_cast<int64_t>(max_tokens);
  if (auto e = NumberField(form, "max_tokens_per_second", 0, 1000, &o.max_tokens_per_second)) return *e;
  // Segments are the windows: there are no word timestamps.
  for (const FormPart& p : form.parts) {
    if ((p.name == "timestamp_granularities[]" || p.name == "timestamp_granularities") && p.data != "segment") {
      return BadRequest("'timestamp_granularities' supports 'segment' only (the windows' bounds), got '" +
                            std::string(p.data.substr(0, 32)) + "'",
                        "timestamp_granularities", "invalid_value");
    }
    if (p.name == "stream" && p.data != "false") {
      return BadRequest("'stream' is not supported for transcriptions", "stream", "invalid_value");
    }
  }
  o.sampler.temperature = f.temperature;
  return f;
}

bool IsJson(runtime::TranscriptFormat f) {
  return f == runtime::TranscriptFormat::kJson || f == runtime::TranscriptFormat::kVerboseJson;
}

}  // namespace

HttpReply AudioTranscriptions(ApiHandlers& h, const MultipartForm& multipart, bool translate) {
  auto form = ParseForm(multipart, translate);
  if (!form.ok()) return ErrorReply(form.error());
  runtime::AudioEncoder* encoder = h.model().audio_encoder();
  if (encoder == nullptr || !encoder->available()) {
    return ErrorReply(BadRequest("this model has no audio tower: it reads no audio", "file", "unsupported_content"));
  }
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(form->file.data()), form->file.size());
  auto clip = encoder->Decode(bytes, form->filename);
  if (!clip.ok()) {
    if (clip.status().code() == ErrorCode::kInternal) return ErrorReply(FromStatus(clip.status(), "file"));
    return ErrorReply(BadRequest(clip.status().message(), "file", "invalid_audio"));
  }
  if (clip->samples.empty()) return ErrorReply(BadRequest(form->filename + " has no samples", "file", "invalid_audio"));

  HttpReply reply;
  reply.content_type = runtime::TranscriptContentType(form->format);
  reply.tokens = std::make_shared<ReplyTokens>();
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  reply.abandon = [cancelled] { *cancelled = true; };
  const uint64_t hash = runtime::HashBytes(bytes.data(), bytes.size());
  auto samples = std::make_shared<std::vector<float>>(std::move(clip->samples));
  auto tokens = reply.tokens;
  reply.stream = [&h, form = std::move(form).value(), samples, hash, cancelled, tokens](const StreamWriter& write) {
    const bool json = IsJson(form.format);
    const auto interval = h.options().keepalive;
    auto last = Clock::now();
    int64_t prompt_tokens = 0, completion_tokens = 0;
    bool gone = false;
    // True while the client is there: JSON replies send a space after `interval` of silence.
    auto alive = [&] {
      if (!*cancelled && (!json || Clock::now() - last < interval)) return true;
      last = Clock::now();
      if (*cancelled || !write(" ")) gone = true;
      return !gone;
    };
    SamplingOptions sampling;
    sampling.temperature = form.temperature;
    sampling.seed = 0;
    runtime::WindowRunner runner = [&](const runtime::WindowTurn& turn) -> Result<runtime::WindowAnswer> {
      auto prompt = h.model().RenderWindow(turn);
      if (!prompt.ok()) return InvalidArgument(prompt.error().message);
      auto sink = std::make_shared<WindowSink>();
      auto handle = h.StartRendered(std::move(prompt).value(), sampling, turn.max_tokens, sink);
      if (!handle.ok()) return Internal(handle.error().message);
      std::optional<JobOutcome> outcome;
      while (!(outcome = sink->Wait(std::chrono::milliseconds(100)))) {
        if (!alive()) {
          (*handle)->Cancel();
          return Cancelled("the client closed the connection");
        }
      }
      prompt_tokens += outcome->prompt_tokens;
      completion_tokens += outcome->completion_tokens;
      if (outcome->reason == FinishReason::kError || outcome->reason == FinishReason::kCancelled) {
        return Internal(OutcomeError(*outcome).message);
      }
      return h.model().WindowAnswer(sink->TakeIds());
    };
    runtime::TranscribeOptions options = form.options;
    options.on_segment = [&](const runtime::TranscriptSegment&, int64_t) { return alive(); };
    auto t = runtime::Transcribe(*h.model().audio_encoder(), *samples, hash, form.filename, options, runner);
    tokens->prompt = prompt_tokens;
    tokens->completion = completion_tokens;
    if (gone) return;
    if (!t.ok()) {
      const ApiError e = FromStatus(t.status(), "file");
      write(json ? e.ToJson() : "error: " + t.status().message() + "\n");
      return;
    }
    write(runtime::FormatTranscript(*t, form.format));
  };
  return reply;
}

}  // namespace gemlet::server
