// gemlet logits: the model's logits at every position of a token sequence, as a NumPy file.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/clock.h"
#include "format/npy.h"
#include "model/gemma4_image.h"
#include "tools/cli/audio_input.h"
#include "tools/cli/image_input.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "tools/cli/command.h"
#include "tools/cli/kv_type_flag.h"

namespace gemlet::cli {
namespace cmd_logits {

constexpr char kUsage[] =
    R"(usage: gemlet logits -m MODEL.gemlet (--tokens IDS | --tokens-file IDS.npy) -o OUT.npy [--mode MODE]
                     [--threads N] [--exact] [--last | --rows R1,R2,...] [--no-skip] [--kv-type T|full=T,sliding=T]
                     [--image FILE]... [--image-tokens N] [--no-resize] [--audio FILE]...

Runs the model over the token ids (fed as given: no BOS is added; positions 0 … n−1) and
writes the softcapped logits after every token as float32, shape [n_tokens, vocab], to a
NumPy .npy file (or only those of --rows / --last). Every mode computes the same logits (within float rounding); they exist to
test the engine's paths against each other.

flags:
  -m, --model FILE    a .gemlet model (gemlet convert)
  --tokens IDS        comma-separated token ids, e.g. 2,105,2364,107
  --tokens-file FILE  the ids as a one-dimensional int32 (or int64) .npy array, for
                      prompts too long for a command line (the oracle's tokens-*.npy)
  -o, --out FILE      output .npy file
  --mode MODE         prefill   one forward pass over all tokens (default)
                      decode    one token per forward pass, through the KV cache
                      chunk:N   prefill in chunks of N tokens
  --threads N         worker threads (default: all cores)
  --exact             f32 activations over dequantized weights, f32 accumulation (the
                      reference path). Default: the fast int8 kernels for q4/q8 weights
                      (activations quantized per block of 32, like llama.cpp)
  --last              write only the logits after the last token, shape [1, vocab]
                      (then the KV-shared layers run only for that token: the prefill skip)
  --rows R1,R2,...    write only the logits after these positions (0-based), in this order,
                      shape [n_rows, vocab]; only those rows' logits are computed, so the
                      KV-shared layers run only for them (as with --last)
  --no-skip           with --last or --rows: run every token through every layer anyway (the same
                      logits; for testing the prefill skip)
  --image FILE        an image whose soft tokens fill the next run of image-token ids
                      (<|image|>) in --tokens, which must already hold the expanded spans
                      (<|image>, n × <|image|>, <image|>); repeatable, in order
  --image-tokens N    soft-token budget of the images: 70, 140, 280 (default), 560, 1120
  --no-resize         take the images at their own size (sides multiples of 48)
  --audio FILE        an audio clip whose soft tokens fill the next run of audio-token ids
                      (<|audio|>) in --tokens, which must already hold the expanded spans
                      (<|audio>, n × <|audio|>, <audio|>); repeatable, in order
  --kv-type T         KV cache rows: f32 (default here, as logits are for comparisons),
                      f16 (the default of run, chat, bench and serve in the fast path) or
                      q8 (8-bit blocks, a quarter of f32's memory); or per
                      layer kind: full=T,sliding=T (either part), e.g. full=q8,sliding=f16

examples:
  gemlet logits -m tiny.gemlet --tokens 2,105,437,107 -o logits.npy
  gemlet logits -m tiny.gemlet --tokens 2,105,437,107 -o dec.npy --mode decode --threads 1
  gemlet logits -m tiny.gemlet --tokens 2,105,437,107 -o c7.npy --mode chunk:7
  gemlet logits -m tiny.gemlet --tokens 2,105,437,107 -o last.npy --last --exact
  gemlet logits -m tiny.gemlet --tokens-file tokens-e2b-32k.npy --rows 0,4095,32767 -o deep.npy --exact
)";

int Run(Flags& flags) {
  const std::string model = flags.Str({"-m", "--model"}, "");
  const std::string out = flags.Str({"-o", "--out"}, "");
  const std::string mode = flags.Str({"--mode"}, "prefill");
  auto tokens = flags.IntList({"--tokens"});
  const std::string tokens_file = flags.Str({"--tokens-file"}, "");
  auto rows_flag = flags.IntList({"--rows"});
  auto threads = flags.Int({"--threads"}, 0);
  const bool exact = flags.Bool({"--exact"});
  const bool last = flags.Bool({"--last"});
  const bool no_skip = flags.Bool({"--no-skip"});
  const std::string kv_type = flags.Str({"--kv-type"}, "f32");
  const std::vector<std::string> images = flags.StrAll({"--image"});
  const std::vector<std::string> audios = flags.StrAll({"--audio"});
  auto budget = flags.Int({"--image-tokens"}, 280);
  const bool no_resize = flags.Bool({"--no-resize"});
  if (!budget.ok()) return UsageError("logits", budget.status().message());
  if (!model::IsSupportedImageTokenBudget(*budget))
    return UsageError("logits", "--image-tokens must be 70, 140, 280, 560 or 1120");
  if (!tokens.ok()) return UsageError("logits", tokens.status().message());
  if (!rows_flag.ok()) return UsageError("logits", rows_flag.status().message());
  if (!threads.ok()) return UsageError("logits", threads.status().message());
  runtime::EngineOptions kv;
  if (!ParseKvType(kv_type, &kv)) return UsageError("logits", KvTypeError(kv_type));
  if (!kv.kv_type) kv.kv_type = TensorType::kF32;  // this command's default, under any per-kind part
  if (Status st = flags.Finish(); !st.ok()) return UsageError("logits", st.message());
  if (!flags.Positional().empty())
    return UsageError("logits", "unexpected argument '" + flags.Positional()[0] + "'");
  if (model.empty()) return UsageError("logits", "-m MODEL is required");
  if (out.empty()) return UsageError("logits", "-o OUT.npy is required");
  if (tokens->empty() == tokens_file.empty())
    return UsageError("logits", "give exactly one of --tokens IDS (comma-separated) or --tokens-file IDS.npy");
  if (last && !rows_flag->empty()) return UsageError("logits", "give at most one of --last and --rows");
  if (*threads < 0 || *threads > 1024) return UsageError("logits", "--threads must be in [0, 1024]");

  int64_t chunk = 0;  // 0: all tokens at once
  if (mode == "prefill") {
    chunk = 0;
  } else if (mode == "decode") {
    chunk = 1;
  } else if (mode.rfind("chunk:", 0) == 0) {
    char* end = nullptr;
    const long long c = std::strtoll(mode.c_str() + 6, &end, 10);
    if (mode.size() == 6 || *end != '\0' || c < 1) {
      return UsageError("logits", "--mode chunk:N needs a positive N, got '" + mode + "'");
    }
    chunk = c;
  } else {
    return UsageError("logits", "--mode must be prefill, decode or chunk:N, got '" + mode + "'");
  }

  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  SetKvTypes(kv, &eo);
  auto engine = runtime::Engine::Open(model, eo);
  if (!engine.ok()) return ReportModelError("logits", engine.status());
  const auto& cfg = (*engine)->config();

  std::vector<int32_t> ids;
  if (!tokens_file.empty()) {
    auto file_ids = ReadNpyIds(tokens_file);
    if (!file_ids.ok()) return ReportError("logits", file_ids.status());
    if (file_ids->empty()) return ReportError("logits", InvalidArgument(tokens_file + ": no token ids"));
    ids = std::move(*file_ids);
  } else {
    for (int64_t id : *tokens) ids.push_back(id < 0 || id > INT32_MAX ? -1 : static_cast<int32_t>(id));
  }
  const std::string src = tokens_file.empty() ? "--tokens" : tokens_file;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= cfg.vocab_size) {
      const std::string id = tokens_file.empty() ? std::to_string((*tokens)[i]) : std::to_string(ids[i]);
      return UsageError("logits", src + ": id " + id + " (item " + std::to_string(i + 1) +
                                      ") is outside the vocabulary [0, " + std::to_string(cfg.vocab_size) + ")");
    }
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n > cfg.max_position_embeddings) {
    return UsageError("logits", std::to_string(n) + " tokens exceed the model's " +
                                    std::to_string(cfg.max_position_embeddings) + " positions");
  }
  // The rows to write: all, the last, or --rows in its order (computed once each, in
  // increasing order, then written in the order asked).
  std::vector<int64_t> want;
  if (!rows_flag->empty()) {
    for (size_t i = 0; i < rows_flag->size(); ++i) {
      const int64_t r = (*rows_flag)[i];
      if (r < 0 || r >= n) {
        return UsageError("logits", "--rows: row " + std::to_string(r) + " (item " + std::to_string(i + 1) +
                                        ") is outside the " + std::to_string(n) + " positions [0, " +
                                        std::to_string(n) + ")");
      }
      want.push_back(r);
    }
  } else if (last) {
    want.push_back(n - 1);
  } else {
    for (int64_t r = 0; r < n; ++r) want.push_back(r);
  }
  std::vector<int64_t> computed = want;
  std::sort(computed.begin(), computed.end());
  computed.erase(std::unique(computed.begin(), computed.end()), computed.end());

  // Images and audio clips: each fills the next run of its placeholder id, row by row.
  struct Filled {
    int64_t first = 0, n = 0;
    std::vector<float> soft;  // [n, D]
  };
  std::vector<Filled> filled;
  // The runs [first, length] of `id` in the tokens.
  auto runs_of = [&](int64_t id) {
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (int64_t i = 0; i < n; ++i) {
      if (ids[i] != id) continue;
      if (i > 0 && ids[i - 1] == id) {
        ++spans.back().second;
      } else {
        spans.push_back({i, 1});
      }
    }
    return spans;
  };
  if (!images.empty()) {
    auto vision = model::Gemma4Vision::Bind((*engine)->file());
    if (!vision.ok()) return ReportError("logits", vision.status());
    const int64_t image_id = (*vision)->config().image_token_id;
    const auto spans = runs_of(image_id);
    if (spans.size() != images.size()) {
      return UsageError("logits", "--tokens holds " + std::to_string(spans.size()) + " run(s) of the image token " +
                                      std::to_string(image_id) + " but " + std::to_string(images.size()) +
                                      " --image file(s) were given");
    }
    for (size_t k = 0; k < images.size(); ++k) {
      auto enc = EncodeImageFile(**engine, **vision, images[k], ImageFlags{*budget, !no_resize});
      if (!enc.ok()) return ReportError("logits", enc.status());
      if (enc->n_soft != spans[k].second) {
        return ReportError("logits", InvalidArgument(images[k] + " gives " + std::to_string(enc->n_soft) +
                                                     " soft tokens but image span " + std::to_string(k + 1) +
                                                     " in --tokens has " + std::to_string(spans[k].second)));
      }
      filled.push_back({spans[k].first, spans[k].second, std::move(enc->soft)});
    }
  }
  if (!audios.empty()) {
    auto tower = model::Gemma4Audio::Bind((*engine)->file());
    if (!tower.ok()) return ReportError("logits", tower.status());
    const int64_t audio_id = (*tower)->config().audio_token_id;
    const auto spans = runs_of(audio_id);
    if (spans.size() != audios.size()) {
      return UsageError("logits", "--tokens holds " + std::to_string(spans.size()) + " run(s) of the audio token " +
                                      std::to_string(audio_id) + " but " + std::to_string(audios.size()) +
                                      " --audio file(s) were given");
    }
    for (size_t k = 0; k < audios.size(); ++k) {
      auto enc = EncodeAudioFile(**engine, **tower, audios[k]);
      if (!enc.ok()) return ReportError("logits", enc.status());
      if (enc->n_soft != spans[k].second) {
        return ReportError("logits", InvalidArgument(audios[k] + " gives " + std::to_string(enc->n_soft) +
                                                     " soft tokens but audio span " + std::to_string(k + 1) +
                                                     " in --tokens has " + std::to_string(spans[k].second)));
      }
      filled.push_back({spans[k].first, spans[k].second, std::move(enc->soft)});
    }
  }
  std::sort(filled.begin(), filled.end(), [](const Filled& a, const Filled& b) { return a.first < b.first; });
  std::vector<int64_t> embed_rows;
  std::vector<float> embeddings;
  for (const Filled& f : filled) {
    for (int64_t r = 0; r < f.n; ++r) embed_rows.push_back(f.first + r);
    embeddings.insert(embeddings.end(), f.soft.begin(), f.soft.end());
  }

  runtime::SessionOptions so;
  so.context_limit = n;
  so.prefill_chunk = chunk == 0 ? n : chunk;
  so.skip_shared_rows = !no_skip;
  runtime::Session session(**engine, so);
  const int64_t V = cfg.vocab_size;
  std::vector<float> logits(computed.size() * V);
  const auto t0 = SteadyClock::now();
  if (Status st = session.PrefillRows(ids, computed, logits.data(), embed_rows, embeddings.data()); !st.ok())
    return ReportError("logits", st);
  const double ms = MsSince(t0);

  const int64_t rows = static_cast<int64_t>(want.size());
  std::vector<float> ordered;
  const float* data = logits.data();
  if (want != computed) {  // --rows out of order or repeated
    ordered.resize(rows * V);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = std::lower_bound(computed.begin(), computed.end(), want[i]) - computed.begin();
      std::copy(logits.begin() + j * V, logits.begin() + (j + 1) * V, ordered.begin() + i * V);
    }
    data = ordered.data();
  }
  if (Status st = WriteNpyF32(out, data, {rows, V}); !st.ok()) return ReportError("logits", st);
  std::printf("wrote %s: float32 [%lld, %lld], mode %s, %s, %d threads, %.1f ms\n", out.c_str(),
              static_cast<long long>(rows), static_cast<long long>(cfg.vocab_size), mode.c_str(),
              ops::MatMulModeName((*engine)->mode()), (*engine)->threads(), ms);
  return kExitOk;
}

}  // namespace cmd_logits

GEMLET_COMMAND(logits, "logits", "write the logits of a token sequence to a .npy file (prefill/decode/chunked)",
               cmd_logits::kUsage, cmd_logits::Run);

}  // namespace gemlet::cli
