// --draft, --draft-max, --draft-fixed and --drafter, shared by run, chat, serve and bench:
// speculative decoding (runtime/speculative.h) through runtime::GenerateOptions::speculative
// and the engine's drafter (runtime::EngineOptions::drafter_path).
#pragma once

#include <string>

#include "base/status.h"
#include "runtime/engine.h"
#include "runtime/speculative_options.h"
#include "tools/cli/command.h"

namespace gemlet::cli {

#define GEMLET_DRAFT_FLAGS_HELP                                                                     \
  "  --draft M               speculative decoding: mtp (the MTP drafter), lookup (prompt lookup:\n" \
  "                          the continuation of an earlier match of the last tokens), auto\n"     \
  "                          (lookup where it matches, else the drafter), off. Default: auto\n"    \
  "                          when the model has a drafter (or --drafter), else off. The output\n"  \
  "                          is the same as without; only the speed changes\n"                    \
  "  --draft-max K           drafts per round at most, 1-16 (default 8); the length adapts to\n"   \
  "                          the measured acceptance and costs, 0 (paused) when drafts do not pay\n" \
  "  --draft-fixed           every round drafts --draft-max tokens (no adaptation)\n"             \
  "  --drafter FILE          an MTP drafter file (gemlet convert ASSISTANT_DIR); default: the one\n" \
  "                          embedded in the model's file (gemlet convert --assistant)\n"

struct DraftFlags {
  std::string mode;  // "" = not given
  int64_t draft_max = 8;
  bool fixed = false;
  std::string drafter;
  Status status;  // a malformed number
};

DraftFlags ReadDraftFlags(Flags& flags);
// The engine's drafter file (before Engine::Open).
void ApplyDrafter(const DraftFlags& f, runtime::EngineOptions* eo);
// The speculative options for an opened engine: the mode (default auto with a drafter, else
// off), K, adaptation. InvalidArgument (a usage error) for a bad mode or K, or mtp without a
// drafter.
Result<runtime::SpeculativeOptions> SpeculativeFromFlags(const DraftFlags& f, const runtime::Engine& engine);

}  // namespace gemlet::cli
