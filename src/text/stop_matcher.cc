#include "text/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace gemlet {

std::string StopMatcher::Push(std::string_view text, bool* matched) {
  *matched = false;
  if (done_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  const size_t best = EarliestStop(held_);
  if (best != std::string::npos) {
    *matched = true;
    done_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

size_t StopMatcher::EarliestStop(std::string_view text) const {
  size_t best = std::string::npos;
  for (const auto& s : stops_) best = std::min(best, text.find(s));
  return best;
}

bool StopMatcher::Matches(std::string_view more) const {
  if (done_ || stops_.empty()) return false;
  std::string text = held_;
  text.append(more);
  return EarliestStop(text) != std::string::npos;
}

std::string StopMatcher::Flush() {
  if (done_) return {};
  return std::exchange(held_, {});
}

}  // namespace gemlet
