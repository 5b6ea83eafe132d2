// gemlet draft: one round of MTP draft steps after a token sequence, with the drafter's dense
// and sparse logits and hidden states as NumPy files (the oracle's rounds:
// ../shared/oracle/tiny-e2b-assistant/README.md).
#include <cstdio>
#include <string>
#include <vector>

#include "format/npy.h"
#include "model/gemma4_drafter.h"
#include "model/gemma4_forward.h"
#include "runtime/engine.h"
#include "runtime/kv_cache.h"
#include "tools/cli/command.h"
#include "tools/cli/kv_type_flag.h"

namespace gemlet::cli {
namespace cmd_draft {

constexpr char kUsage[] =
    R"(usage: gemlet draft -m TARGET.gemlet [--drafter DRAFTER.gemlet] --tokens IDS [-k K] [--exact]
                    [--dense-logits F.npy] [--sparse-logits F.npy] [--hidden F.npy]
                    [--threads N] [--kv-type f32|f16|q8]

Runs one round of the MTP drafter: the target prefills IDS[:-1] (positions 0 … n−2), then K
draft steps start from IDS[-1] at position n−1 with the target's final hidden state at n−2;
every step of the round uses that position, and each step's draft and post-projection hidden
state feed the next. Prints the K drafted ids (the argmax of the sparse centroid head, or of
the dense head for a drafter without centroids) and writes float32 arrays:

flags:
  -m, --model FILE       the target .gemlet model
  --drafter FILE         the drafter (gemlet convert ASSISTANT_DIR); default: the one
                         embedded in the model's file (gemlet convert --assistant)
  --tokens IDS           comma-separated token ids, at least 2
  -k K                   draft steps (default 4)
  --exact                f32 math over dequantized weights (the reference path)
  --dense-logits FILE    [K, vocab] the dense head y · E^T of every step
  --sparse-logits FILE   [K, vocab] the sparse head: candidates' logits, every other one
                         min(candidates) − 1 (an error for a drafter without centroids)
  --hidden FILE          [K, hidden] post_projection(y) of every step (the next step's input)
  --threads N            worker threads (default: all cores)
  --kv-type T            the target's KV cache rows (default f32, as for comparisons)

examples:
  gemlet draft -m tiny.gemlet --drafter drafter.gemlet --tokens 2,105,437,107,346 -k 4 \
      --dense-logits d.npy --sparse-logits s.npy --hidden h.npy
)";

int Run(Flags& flags) {
  const std::string model = flags.Str({"-m", "--model"}, "");
  const std::string drafter_path = flags.Str({"--drafter"}, "");
  auto tokens = flags.IntList({"--tokens"});
  auto k_steps = flags.Int({"-k"}, 4);
  auto threads = flags.Int({"--threads"}, 0);
  const bool exact = flags.Bool({"--exact"});
  const std::string dense_out = flags.Str({"--dense-logits"}, "");
  const std::string sparse_out = flags.Str({"--sparse-logits"}, "");
  const std::string hidden_out = flags.Str({"--hidden"}, "");
  const std::string kv_type = flags.Str({"--kv-type"}, "f32");
  if (!tokens.ok()) return UsageError("draft", tokens.status().message());
  if (!k_steps.ok()) return UsageError("draft", k_steps.status().message());
  if (!threads.ok()) return UsageError("draft", threads.status().message());
  runtime::EngineOptions kv;
  if (!ParseKvType(kv_type, &kv)) return UsageError("draft", KvTypeError(kv_type));
  if (Status st = flags.Finish(); !st.ok()) return UsageError("draft", st.message());
  if (!flags.Positional().empty()) return UsageError("draft", "unexpected argument '" + flags.Positional()[0] + "'");
  if (model.empty()) return UsageError("draft", "-m TARGET is required");
  if (tokens->size() < 2) return UsageError("draft", "--tokens needs at least 2 ids (a prefix and the last token)");
  if (*k_steps < 1 || *k_steps > 64) return UsageError("draft", "-k must be in [1, 64]");
  if (*threads < 0 || *threads > 1024) return UsageError("draft", "--threads must be in [0, 1024]");

  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  SetKvTypes(kv, &eo);
  eo.drafter_path = drafter_path;
  auto engine = runtime::Engine::Open(model, eo);
  if (!engine.ok()) return ReportError("draft", engine.status());
  const model::Gemma4Drafter* drafter = (*engine)->drafter();
  if (drafter == nullptr) {
    return ReportError("draft", NotFound(model + " has no embedded drafter; give one with --drafter FILE"));
  }
  if (!sparse_out.empty() && !drafter->has_sparse_head()) {
    return ReportModelError("draft", InvalidArgument("--sparse-logits: the drafter in " + drafter->path() +
                                                " has no sparse head (no centroids: it drafts with the dense head, "
                                                "whose logits --dense-logits writes)"));
  }
  const auto& cfg = (*engine)->config();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const int64_t id = (*tokens)[i];
    if (id < 0 || id >= cfg.vocab_size) {
      return UsageError("draft", "--tokens: id " + std::to_string(id) + " (item " + std::to_string(i + 1) +
                                     ") is outside the vocabulary [0, " + std::to_string(cfg.vocab_size) + ")");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  const int64_t n = static_cast<int64_t>(ids.size()), K = *k_steps, V = cfg.vocab_size, B = cfg.hidden_size;
  if (n > cfg.max_position_embeddings) return UsageError("draft", "too many tokens for the model's positions");

  // The target: IDS[:-1] into its KV cache, and its post-final-norm hidden state at n − 2.
  model::ForwardOptions fo;
  fo.mode = (*engine)->mode();
  fo.pool = (*engine)->pool();
  runtime::KvCache cache(cfg, n, (*engine)->kv_type());
  model::ForwardScratch scratch;
  const model::BatchSequence seq{&cache, n - 1};
  const int64_t last_row = n - 2;
  std::vector<float> h(B);
  model::Batch batch;
  batch.tokens = std::span<const int32_t>(ids.data(), n - 1);
  batch.seqs = std::span<const model::BatchSequence>(&seq, 1);
  batch.out_rows = std::span<const int64_t>(&last_row, 1);
  batch.hidden = h.data();
  if (Status st = model::Forward((*engine)->model(), batch, &scratch, fo); !st.ok()) return ReportError("draft", st);

  // The round: K steps at position n − 1.
  std::vector<float> dense(K * V), sparse(K * V), hidden(K * B);
  model::DraftScratch ds;
  int32_t tok = ids.back();
  std::string drafts;
  for (int64_t k = 0; k < K; ++k) {
    model::DraftOutput out;
    out.h_next = hidden.data() + k * B;
    out.dense_logits = dense.data() + k * V;
    out.sparse_logits = sparse.data() + k * V;
    const float* h_in = k == 0 ? h.data() : hidden.data() + (k - 1) * B;
    if (Status st = model::DraftStep(*drafter, (*engine)->model(), cache, tok, h_in, model::DraftHead::kSparse, &ds,
                                     fo, &out);
        !st.ok()) {
      return ReportError("draft", st);
    }
    tok = out.token;
    drafts += (k ? "," : "") + std::to_string(tok);
  }
  const std::pair<const std::string*, std::pair<const std::vector<float>*, int64_t>> files[] = {
      {&dense_out, {&dense, V}}, {&sparse_out, {&sparse, V}}, {&hidden_out, {&hidden, B}}};
  for (const auto& [path, arr] : files) {
    if (path->empty()) continue;
    if (Status st = WriteNpyF32(*path, arr.first->data(), {K, arr.second}); !st.ok()) return ReportError("draft", st);
  }
  std::printf("%s\n", drafts.c_str());
  return kExitOk;
}

}  // namespace cmd_draft

GEMLET_COMMAND(draft, "draft", "run one round of MTP draft steps after a token sequence (oracle comparisons)",
               cmd_draft::kUsage, cmd_draft::Run);

}  // namespace gemlet::cli
