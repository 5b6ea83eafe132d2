#include "runtime/speculative_options.h"

namespace gemlet::runtime {

Result<DraftMode> ParseDraftMode(std::string_view s) {
  if (s == "off") return DraftMode::kOff;
  if (s == "mtp") return DraftMode::kMtp;
  if (s == "lookup") return DraftMode::kLookup;
  if (s == "auto") return DraftMode::kAuto;
  return InvalidArgument("--draft must be mtp, lookup, auto or off, got '" + std::string(s) + "'");
}

const char* DraftModeName(DraftMode mode) {
  switch (mode) {
    case DraftMode::kOff: return "off";
    case DraftMode::kMtp: return "mtp";
    case DraftMode::kLookup: return "lookup";
    case DraftMode::kAuto: return "auto";
  }
  return "?";
}

Status SpeculativeOptions::Validate() const {
  if (draft_max < 1 || draft_max > kMaxDraft) {
    return InvalidArgument("--draft-max must be in [1, " + std::to_string(kMaxDraft) + "], got " +
                           std::to_string(draft_max));
  }
  if (lookup_min_ngram < 1 || lookup_max_ngram < lookup_min_ngram) {
    return InvalidArgument("prompt lookup n-grams: need 1 <= min <= max");
  }
  if (!(oracle_p >= 0 && oracle_p <= 1)) return InvalidArgument("the bench mode's probability must be in [0, 1]");
  return Status::Ok();
}

}  // namespace gemlet::runtime
