// gemlet convert: a Hugging Face checkpoint folder or a gemma4 GGUF file to a .gemlet model.
#include <cstdio>
#include <map>
#include <string>

#include "tools/cli/command.h"
#include "tools/convert/convert.h"
#include "tools/convert/progress.h"
#include "tools/convert/quant_plan.h"

namespace gemlet::cli {
namespace cmd_convert {

constexpr char kUsage[] =
    R"(usage: gemlet convert SRC -o OUT.gemlet [--plan NAME] [--type CLASS=TYPE]... [--threads N]
                      [--multimodal OUT2.gemlet] [--assistant DRAFTER] [--mmproj MMPROJ.gguf] [-q]

Converts a Gemma 4 E2B/E4B checkpoint to a .gemlet model, streaming tensor by tensor (the
checkpoint is never held in memory). SRC is either
  a Hugging Face folder: config.json, model.safetensors (or model-0000i-of-0000n.safetensors
    shards with model.safetensors.index.json), tokenizer.json (+ tokenizer_config.json,
    chat_template.jinja); vision/audio tensors are skipped (see --multimodal), or
  a Hugging Face MTP drafter folder (config.json with model_type gemma4_assistant, e.g.
    gemma-4-E2B-it-assistant) or llama.cpp's gemma4-assistant GGUF of one: a drafter-only
    file for `--drafter FILE` (llama.cpp's converter leaves out the sparse head's centroids
    and token ordering; such a drafter uses the dense head, and convert prints a note), or
  a llama.cpp gemma4 GGUF file (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K tensors),
    with --mmproj for the vision/audio towers.
Every tensor is checked against the config (missing, unexpected or misshapen tensors are
errors). The output records the config, tokenizer, chat template, quantization plan and the
provenance (source path, sha256 of the source files, converter version, time).

flags:
  -o, --out FILE        output .gemlet file (written to FILE.tmp, renamed when complete)
  --plan NAME           default  attn, ffn, token_embd, ple_table, ple_gate, ple_proj q4;
                                 ple_model_proj q8; norm, scalar f32 (E2B: about 2.61 GB)
                        keep     every tensor at its source type: BF16 stays bf16, F32 f32,
                                 Q8_0/Q4_0 blocks are copied value for value; K-quants get the
                                 default plan's type (reported as requantized)
                        Every plan stores q4 and q8 matrices (rows a multiple of 8, except
                        the per-layer embedding and vision position tables) interleaved for
                        the int8 kernels (layouts q4x8 and q8x8, docs/file-format.md §6: same
                        values, other byte order)
                        q8       every linear layer and embedding q8; norm, scalar f32
                        q4       every linear layer and embedding q4; norm, scalar f32
                                 (q8 and q4 hold llama.cpp's Q8_0 / Q4_0 blocks)
  --type CLASS=TYPE     override one class (repeatable). Classes: token_embd, ple_table,
                        ple_model_proj, attn, ffn, ple_gate, ple_proj, norm, scalar;
                        a drafter's also drafter_proj (pre/post projection, q4 by default),
                        centroids (f32) and token_order (f32 only).
                        Types: f32, f16, bf16, q8, q4
  --threads N           quantization threads (default: all cores)
  --multimodal FILE     also write the vision/audio tensors of an HF checkpoint, at their
                        source types, to this second .gemlet file
  --assistant DRAFTER   also write this MTP drafter (an HF gemma4_assistant folder or a
                        gemma4-assistant GGUF) into the output as a second section, after
                        checking that it fits the target (hidden size, vocabulary, KV heads,
                        head dims)
  --mmproj FILE         with a GGUF SRC: llama.cpp's mmproj GGUF of the vision (gemma4v)
                        and/or audio (gemma4a) tower; each tower it holds is written as
                        from an HF checkpoint (same names, config and plan classes: vision,
                        vision_pos, vision_proj, audio, audio_conv, audio_proj). The configs come
                        from its clip.vision.* / clip.audio.* keys and tensor shapes, the
                        patch embedding is permuted back, per_dim_scale (stored as its
                        softplus) inverted; F32 or F16 files. The projection must output the
                        text model's hidden size.
  -q, --quiet           no progress output

examples:
  gemlet convert ../shared/oracle/tiny-e2b -o tiny.gemlet --plan keep
  gemlet convert ~/gemma-4-E2B-it -o e2b.gemlet
  gemlet convert ~/gemma-4-E2B-it -o e2b-q8emb.gemlet --type token_embd=q8 --type ple_table=q8
  gemlet convert gemma-4-E2B-it-Q4_0.gguf -o e2b.gemlet --plan keep
  gemlet convert gemma-4-E2B-it-Q4_0.gguf --mmproj mmproj-gemma-4-E2B-it-f16.gguf -o e2b.gemlet
  gemlet convert ~/gemma-4-E2B-it-assistant -o e2b-drafter.gemlet
  gemlet convert ~/gemma-4-E2B-it --assistant ~/gemma-4-E2B-it-assistant -o e2b-bundle.gemlet
  gemlet convert gemma-4-E2B-it-assistant-f16.gguf -o e2b-drafter.gemlet
)";

int Run(Flags& flags) {
  convert::ConvertOptions o;
  o.out = flags.Str({"-o", "--out"}, "");
  o.plan = flags.Str({"--plan"}, "default");
  o.overrides = flags.StrAll({"--type"});
  o.multimodal_out = flags.Str({"--multimodal"}, "");
  o.assistant = flags.Str({"--assistant"}, "");
  o.mmproj = flags.Str({"--mmproj"}, "");
  auto threads = flags.Int({"--threads"}, 0);
  o.progress = !flags.Bool({"-q", "--quiet"});
  if (!threads.ok()) return UsageError("convert", threads.status().message());
  if (Status st = flags.Finish(); !st.ok()) return UsageError("convert", st.message());
  const auto pos = flags.Positional();
  if (pos.empty()) return UsageError("convert", "SRC (a checkpoint folder or .gguf file) is required");
  if (pos.size() > 1) return UsageError("convert", "unexpected argument '" + pos[1] + "'");
  o.src = pos[0];
  if (o.out.empty()) return UsageError("convert", "-o OUT.gemlet is required");
  if (*threads < 0 || *threads > 1024) return UsageError("convert", "--threads must be in [0, 1024]");
  o.threads = static_cast<int>(*threads);
  if (auto plan = convert::MakeQuantPlan(o.plan, o.overrides); !plan.ok()) {
    return UsageError("convert", plan.status().message());
  }

  auto report = convert::Convert(o);
  if (!report.ok()) {
    std::fprintf(stderr, "gemlet convert: %s\n", report.status().message().c_str());
    return kExitFailure;
  }
  struct Sum {
    int tensors = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Sum> by_type;
  int requantized = 0;
  for (const auto& t : report->tensors) {
    by_type[t.stored_type].tensors++;
    by_type[t.stored_type].bytes += t.bytes;
    requantized += t.requantized;
  }
  std::printf("wrote %s: %zu tensors, %s, %.1f s\n", o.out.c_str(), report->tensors.size(),
              convert::Progress::FormatBytes(report->file_bytes).c_str(), report->seconds);
  for (const std::string& note : report->notes) std::printf("  note: %s\n", note.c_str());
  for (const auto& [type, s] : by_type) {
    std::printf("  %-5s %4d tensors  %s\n", type.c_str(), s.tensors,
                convert::Progress::FormatBytes(s.bytes).c_str());
  }
  if (requantized > 0) {
    std::map<std::string, int> pairs;
    for (const auto& t : report->tensors) {
      if (t.requantized) pairs[t.source_type + " -> " + t.stored_type]++;
    }
    std::string list;
    for (const auto& [p, n] : pairs) list += (list.empty() ? "" : ", ") + p + ": " + std::to_string(n);
    std::printf("  %d tensors dequantized from a quantized source and quantized again (%s)\n", requantized,
                list.c_str());
  }
  if (!o.multimodal_out.empty()) {
    std::printf("wrote %s: %zu vision/audio tensors\n", o.multimodal_out.c_str(), report->multimodal.size());
  }
  return kExitOk;
}

}  // namespace cmd_convert

GEMLET_COMMAND(convert, "convert", "convert an HF checkpoint or GGUF file to .gemlet", cmd_convert::kUsage,
               cmd_convert::Run);

}  // namespace gemlet::cli
