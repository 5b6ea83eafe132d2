#include "tools/cli/draft_flags.h"

namespace gemlet::cli {

DraftFlags ReadDraftFlags(Flags& flags) {
  DraftFlags f;
  f.mode = flags.Str({"--draft"}, "");
  auto k = flags.Int({"--draft-max"}, 8);
  if (k.ok()) {
    f.draft_max = *k;
  } else {
    f.status = k.status();
  }
  f.fixed = flags.Bool({"--draft-fixed"});
  f.drafter = flags.Str({"--drafter"}, "");
  return f;
}

void ApplyDrafter(const DraftFlags& f, runtime::EngineOptions* eo) { eo->drafter_path = f.drafter; }

Result<runtime::SpeculativeOptions> SpeculativeFromFlags(const DraftFlags& f, const runtime::Engine& engine) {
  RETURN_IF_ERROR(f.status);
  runtime::SpeculativeOptions o;
  if (f.mode.empty()) {
    o.mode = engine.drafter() ? runtime::DraftMode::kAuto : runtime::DraftMode::kOff;
  } else {
    ASSIGN_OR_RETURN(o.mode, runtime::ParseDraftMode(f.mode));
  }
  o.draft_max = f.draft_max;
  o.adaptive = !f.fixed;
  RETURN_IF_ERROR(o.Validate());
  if (o.mode == runtime::DraftMode::kMtp && engine.drafter() == nullptr) {
    return InvalidArgument("--draft mtp needs an MTP drafter: the model's file has none; give one with --drafter FILE");
  }
  return o;
}

}  // namespace gemlet::cli
