// gemlet synth: a random-weight Gemma 4 checkpoint in the Hugging Face layout.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tools/cli/command.h"
#include "tools/convert/synth.h"
#include "tools/convert/synth_assistant.h"

namespace gemlet::cli {
namespace cmd_synth {

constexpr char kUsage[] = R"(usage: gemlet synth --preset tiny|e2b|e4b -o DIR [--seed N] [--tokenizer PATH]
                    [--no-vision] [--no-audio]
       gemlet synth --preset tiny|e2b --assistant -o DIR [--seed N]

Writes a random-weight Gemma 4 checkpoint in the Hugging Face layout: config.json,
generation_config.json, BF16 safetensors (HF tensor names) and tokenizer files. The values are
a pure function of the seed: the same seed gives byte-identical files on any machine and with
any thread count. Scales follow ../shared/oracle/README.md, so every activation stays finite.
The weights are random: the model writes meaningless text. Use it to test and to measure speed
and memory (real Gemma 4 weights cannot be downloaded here; speed does not depend on values).

flags:
  --preset NAME       tiny: 7 layers, D 64, vocab 512, ~0.6 MB, takes a fraction of a second;
                        what the tests and the demo use
                      e2b, e4b: the real Gemma 4 E2B / E4B shapes (decoder ~9.3 GB / ~15 GB), for
                        benchmarks; sharded into files of at most 4 GB with
                        model.safetensors.index.json (one tensor larger than that, the E2B/E4B
                        PLE table, gets a shard of its own); with the real vision tower
                        (16 layers, 768 wide, ~0.34 GB, HF names and vision_config) unless
                        --no-vision, and the real audio tower (a 12-layer conformer, 1024
                        wide, ~0.61 GB, HF names and audio_config) unless --no-audio
  -o, --out DIR       output folder (created if missing; weights left there by an earlier run
                      are removed first)
  --seed N            random seed (default 0)
  --tokenizer PATH    a tokenizer.json, or a folder holding one, to copy together with its
                      tokenizer_config.json and chat_template.jinja; its vocabulary size sets
                      the model's vocab. Default: a synthetic 512-piece Gemma-4-shaped
                      tokenizer (real control ids, byte fallback), padded with <unusedN>
                      pieces to the preset's vocab
  --no-vision         e2b, e4b: leave the vision tower out
  --no-audio          e2b, e4b: leave the audio tower out (with --no-vision: a text-only
                      checkpoint)
  --threads N         generator threads (default: all cores)
  --shard-size BYTES  largest shard (default 4000000000); smaller checkpoints are one
                      model.safetensors
  --assistant         write the preset's MTP drafter ("assistant") instead: config.json
                      (model_type gemma4_assistant) and model.safetensors with the released
                      tensor names (the centroid head included; e2b: 4 layers, D 256,
                      ~158 MB), shaped to fit the target preset of the same name
  -q, --quiet         no progress output

examples:
  gemlet synth --preset tiny -o /tmp/tiny
  gemlet synth --preset e2b -o /data/e2b-random --seed 7
  gemlet synth --preset e2b --no-vision -o /data/e2b-audio-random
  gemlet synth --preset e2b --assistant -o /data/e2b-assistant-random
  gemlet synth --preset e4b -o /data/e4b-random --tokenizer ../shared/tokenizer/gemma4
)";

int Run(Flags& flags) {
  convert::SynthOptions o;
  o.preset = flags.Str({"--preset"}, "");
  o.out_dir = flags.Str({"-o", "--out"}, "");
  o.tokenizer = flags.Str({"--tokenizer"}, "");
  auto seed = flags.Int({"--seed"}, 0);
  auto threads = flags.Int({"--threads"}, 0);
  auto shard = flags.Int({"--shard-size"}, static_cast<int64_t>(o.max_shard_bytes));
  const bool quiet = flags.Bool({"-q", "--quiet"});
  const bool assistant = flags.Bool({"--assistant"});
  o.vision = !flags.Bool({"--no-vision"});
  o.audio = !flags.Bool({"--no-audio"});
  if (!seed.ok()) return UsageError("synth", seed.status().message());
  if (!threads.ok()) return UsageError("synth", threads.status().message());
  if (!shard.ok()) return UsageError("synth", shard.status().message());
  if (Status st = flags.Finish(); !st.ok()) return UsageError("synth", st.message());
  if (!flags.Positional().empty()) {
    return UsageError("synth", "unexpected argument '" + flags.Positional()[0] + "'");
  }
  if (o.preset.empty()) return UsageError("synth", "--preset is required (tiny, e2b or e4b)");
  if (o.out_dir.empty()) return UsageError("synth", "-o DIR is required");
  if (*seed < 0) return UsageError("synth", "--seed must be >= 0");
  if (*threads < 0 || *threads > 1024) return UsageError("synth", "--threads must be in [0, 1024]");
  if (*shard <= 0) return UsageError("synth", "--shard-size must be positive");
  o.seed = static_cast<uint64_t>(*seed);
  o.threads = static_cast<int>(*threads);
  o.max_shard_bytes = static_cast<uint64_t>(*shard);

  const bool tty = isatty(STDERR_FILENO);
  int last_step = -1;
  if (!quiet) {
    o.progress = [&](uint64_t done, uint64_t total) {
      if (total < 100'000'000) return;  // the tiny preset finishes before anyone could read it
      const int pct = total ? static_cast<int>(done * 100 / total) : 100;
      const int step = tty ? pct : pct / 10;
      if (step == last_step) return;
      last_step = step;
      if (tty) {
        std::fprintf(stderr, "\rsynth: %3d%% (%.2f / %.2f GB)", pct, done / 1e9, total / 1e9);
        if (done == total) std::fprintf(stderr, "\n");
      } else {
        std::fprintf(stderr, "synth: %d%% (%.2f / %.2f GB)\n", pct, done / 1e9, total / 1e9);
      }
    };
  }
  if (assistant) {
    if (!o.tokenizer.empty()) return UsageError("synth", "--assistant writes no tokenizer (the target has it)");
    auto report = convert::SynthesizeAssistant(o);
    if (!report.ok()) return ReportError("synth", report.status());
    std::printf("wrote %s: %s assistant (MTP drafter), seed %llu, %lld tensors, %.3f GB in %.1f s\n",
                o.out_dir.c_str(), o.preset.c_str(), static_cast<unsigned long long>(o.seed),
                static_cast<long long>(report->tensors), report->weight_bytes / 1e9, report->seconds);
    for (const auto& f : report->files) std::printf("  %s\n", f.c_str());
    return kExitOk;
  }
  auto report = convert::Synthesize(o);
  if (!report.ok()) return ReportError("synth", report.status());
  const auto& c = report->config;
  std::printf("wrote %s: preset %s, seed %llu, %lld tensors, %.3f GB of BF16 weights in %.1f s\n",
              o.out_dir.c_str(), o.preset.c_str(), static_cast<unsigned long long>(o.seed),
              static_cast<long long>(report->tensors), report->weight_bytes / 1e9, report->seconds);
  std::printf("  vocab %lld, hidden %lld, layers %lld (%lld KV-shared), tokenizer %s\n",
              static_cast<long long>(c.vocab_size), static_cast<long long>(c.hidden_size),
              static_cast<long long>(c.num_layers), static_cast<long long>(c.num_kv_shared_layers),
              o.tokenizer.empty() ? "synthetic" : o.tokenizer.c_str());
  if (report->vision) std::printf("  with the vision tower (16 layers, 768 wide)\n");
  if (report->audio) std::printf("  with the audio tower (12 conformer layers, 1024 wide)\n");
  for (const auto& f : report->files) std::printf("  %s\n", f.c_str());
  std::printf("the weights are random: the model produces meaningless text\n");
  return kExitOk;
}

}  // namespace cmd_synth

GEMLET_COMMAND(synth, "synth", "write a random-weight Gemma 4 checkpoint (HF layout) for tests and benchmarks",
               cmd_synth::kUsage, cmd_synth::Run);

}  // namespace gemlet::cli
