// Finds stop strings in streamed text (OpenAI's `stop`). Text that might be the start of a
// stop string is held back until it is known not to be one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gemlet {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {}
  // Adds `text`; returns what may be emitted now. On a match, *matched is set, the text
  // before the stop string is returned and everything after it is dropped (and every later
  // Push returns nothing).
  std::string Push(std::string_view text, bool* matched);
  // Whether the held-back text followed by `more` holds a stop string (nothing is added: the
  // caller Pushes `more` once it is final). False after a match.
  bool Matches(std::string_view more) const;
  // The held-back text (the stream ended without a match).
  std::string Flush();

 private:
  // Where the earliest stop string starts in `text`, or npos.
  size_t EarliestStop(std::string_view text) const;

  std::vector<std::string> stops_;
  std::string held_;
  bool done_ = false;
};

}  // namespace gemlet
