// gemlet perplexity: the model's perplexity over a text file, to compare quantization plans.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/mapped_file.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "tools/cli/command.h"
#include "tools/cli/kv_type_flag.h"

namespace gemlet::cli {
namespace cmd_perplexity {

constexpr char kUsage[] = R"(usage: gemlet perplexity -m MODEL.gemlet -f TEXT_FILE [--ctx N] [--threads N] [--json]

Perplexity of the model over a text file: exp of the mean negative log-likelihood of each
token given the ones before it. The text is tokenized (no chat format), cut into chunks of
--ctx tokens, and each chunk is evaluated on its own, starting from <bos>: every text token of
the chunk is scored, the first one given <bos> alone. A last chunk shorter than --ctx is
scored too. Lower is better; compare quantization plans of one model on the same text and
--ctx (only then are the numbers comparable). A progress bar goes to stderr.

flags:
  -m, --model FILE        a .gemlet model (gemlet convert)
  -f, --file FILE         the text (UTF-8)
  --ctx N                 tokens per chunk, <bos> included (default 512)
  --max-chunks N          score at most N chunks (default: all)
  --threads N             worker threads (default: all cores)
  --kv-type T             KV cache rows: f32 (default here, a measurement), f16 (the default
                          of run, chat, bench and serve: measures what the f16 cache costs)
                          or q8 (8-bit blocks, a quarter of f32's memory); or
                          per layer kind: full=T,sliding=T (either part), e.g.
                          full=q8,sliding=f16: the full-attention layers hold the whole
                          context, the sliding ones a ring of the window
  --chunk N               tokens per forward pass (default 64; memory grows with N x vocab)
  --json                  print one JSON object instead of the summary line
  -q, --quiet             no progress bar

examples:
  gemlet perplexity -m e2b-q4.gemlet -f wiki.test.raw --ctx 512
  gemlet perplexity -m e2b-q8.gemlet -f wiki.test.raw --ctx 512 --max-chunks 20 --json
)";

// log Σ exp(x) − x[target], in double.
double Nll(const float* logits, int64_t V, int32_t target) {
  float mx = logits[0];
  for (int64_t i = 1; i < V; ++i) mx = std::max(mx, logits[i]);
  double s = 0;
  for (int64_t i = 0; i < V; ++i) s += std::exp(static_cast<double>(logits[i]) - mx);
  return std::log(s) + mx - logits[target];
}

class Bar {
 public:
  Bar(int64_t total, bool enabled) : total_(total), enabled_(enabled), tty_(isatty(STDERR_FILENO)) {}
  void Update(int64_t done, double ppl, double tok_s) {
    if (!enabled_) return;
    const int pct = total_ ? static_cast<int>(done * 100 / total_) : 100;
    if (tty_) {
      const int w = 30, fill = total_ ? static_cast<int>(done * w / total_) : w;
      std::fprintf(stderr, "\r[%s%s] %3d%% %lld/%lld tokens, ppl %.4f, %.0f tok/s ", std::string(fill, '=').c_str(),
                   std::string(w - fill, ' ').c_str(), pct, static_cast<long long>(done),
                   static_cast<long long>(total_), ppl, tok_s);
      if (done == total_) std::fprintf(stderr, "\n");
    } else if (pct / 10 != last_decile_ || done == total_) {
      last_decile_ = pct / 10;
      std::fprintf(stderr, "perplexity: %d%% (%lld/%lld tokens), ppl %.4f\n", pct, static_cast<long long>(done),
                   static_cast<long long>(total_), ppl);
    }
  }

 private:
  int64_t total_;
  bool enabled_, tty_;
  int last_decile_ = 0;
};

int Run(Flags& flags) {
  const std::string model = flags.Str({"-m", "--model"}, "");
  const std::string file = flags.Str({"-f", "--file"}, "");
  auto ctx = flags.Int({"--ctx"}, 512);
  auto max_chunks = flags.Int({"--max-chunks"}, 0);
  auto threads = flags.Int({"--threads"}, 0);
  const std::string kv_type = flags.Str({"--kv-type"}, "f32");
  auto batch = flags.Int({"--chunk"}, 64);
  const bool json = flags.Bool({"--json"});
  const bool quiet = flags.Bool({"-q", "--quiet"});
  for (const Status* st : {&ctx.status(), &max_chunks.status(), &threads.status(), &batch.status()}) {
    if (!st->ok()) return UsageError("perplexity", st->message());
  }
  if (Status st = flags.Finish(); !st.ok()) return UsageError("perplexity", st.message());
  if (!flags.Positional().empty()) {
    return UsageError("perplexity", "unexpected argument '" + flags.Positional()[0] + "' (the text goes after -f)");
  }
  if (model.empty()) return UsageError("perplexity", "-m MODEL is required");
  if (file.empty()) return UsageError("perplexity", "-f TEXT_FILE is required");
  if (*ctx < 2) return UsageError("perplexity", "--ctx must be >= 2");
  if (*max_chunks < 0) return UsageError("perplexity", "--max-chunks must be >= 0");
  if (*threads < 0 || *threads > 1024) return UsageError("perplexity", "--threads must be in [0, 1024]");
  runtime::EngineOptions kv;
  if (!ParseKvType(kv_type, &kv)) return UsageError("perplexity", KvTypeError(kv_type));
  if (!kv.kv_type) kv.kv_type = TensorType::kF32;  // this command's default, under any per-kind part
  if (*batch < 1) return UsageError("perplexity", "--chunk must be >= 1");

  auto text = ReadFileToString(file);
  if (!text.ok()) return ReportError("perplexity", text.status());
  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  SetKvTypes(kv, &eo);
  auto engine = runtime::Engine::Open(model, eo);
  if (!engine.ok()) return ReportModelError("perplexity", engine.status());
  const auto& cfg = (*engine)->config();
  if (*ctx > cfg.max_position_embeddings) {
    return UsageError("perplexity", "--ctx " + std::to_string(*ctx) + " exceeds the model's " +
                                        std::to_string(cfg.max_position_embeddings) + " positions");
  }
  const Tokenizer* tok = (*engine)->tokenizer();
  if (tok == nullptr) return ReportError("perplexity", Corrupt(model + ": the model file has no vocabulary"));
  auto ids = tok->Encode(*text);
  if (!ids.ok()) return ReportError("perplexity", ids.status().WithContext(file));
  if (ids->empty()) return ReportError("perplexity", InvalidArgument(file + ": the text has no tokens"));

  // Chunks: <bos> + up to ctx − 1 text tokens each.
  const int64_t per = *ctx - 1;
  const int64_t n_text = static_cast<int64_t>(ids->size());
  int64_t n_chunks = (n_text + per - 1) / per;
  if (*max_chunks > 0) n_chunks = std::min(n_chunks, *max_chunks);
  const int64_t total = std::min(n_text, n_chunks * per);
  const int64_t V = cfg.vocab_size;

  runtime::Session session(**engine, runtime::SessionOptions{*ctx, *batch});
  std::vector<float> logits;
  std::vector<int32_t> chunk;
  double nll = 0;
  int64_t scored = 0;
  Bar bar(total, !quiet);
  const auto t0 = SteadyClock::now();
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t begin = c * per, end = std::min(n_text, begin + per);
    chunk.assign(1, (*engine)->bos_id());
    chunk.insert(chunk.end(), ids->begin() + begin, ids->begin() + end);
    session.Reset();
    // Feed in pieces of --chunk tokens, keeping only that many rows of logits at a time; the
    // row of token t predicts token t + 1.
    const int64_t n = static_cast<int64_t>(chunk.size());
    for (int64_t b = 0; b < n - 1; b += *batch) {
      const int64_t m = std::min(*batch, n - 1 - b);
      const std::span<const int32_t> part(chunk.data() + b, m);
      if (Status st = session.Prefill(part, &logits, /*all_rows=*/true); !st.ok()) {
        return ReportError("perplexity", st);
      }
      for (int64_t t = 0; t < m; ++t) nll += Nll(logits.data() + t * V, V, chunk[b + t + 1]);
      scored += m;
      const double s = SecondsSince(t0);
      bar.Update(scored, std::exp(nll / scored), s > 0 ? scored / s : 0);
    }
  }
  const double seconds = SecondsSince(t0);
  const double ppl = std::exp(nll / scored);
  if (json) {
    nlohmann::json j = {{"model", model},
                        {"file", file},
                        {"perplexity", ppl},
                        {"mean_nll", nll / scored},
                        {"tokens_scored", scored},
                        {"text_tokens", n_text},
                        {"chunks", n_chunks},
                        {"ctx", *ctx},
                        {"seconds", seconds},
                        {"tok_s", seconds > 0 ? scored / seconds : 0},
                        {"threads", (*engine)->threads()}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("perplexity %.4f over %lld tokens (%lld chunks of up to %lld, %s) in %.1f s, %.1f tok/s\n", ppl,
                static_cast<long long>(scored), static_cast<long long>(n_chunks), static_cast<long long>(*ctx),
                file.c_str(), seconds, seconds > 0 ? scored / seconds : 0);
  }
  return kExitOk;
}

}  // namespace cmd_perplexity

GEMLET_COMMAND(perplexity, "perplexity", "perplexity of a model over a text file (to compare quantization plans)",
               cmd_perplexity::kUsage, cmd_perplexity::Run);

}  // namespace gemlet::cli
