#include "grammar/step_table.h"

#include <utility>

namespace gemlet::grammar {

namespace {

inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

size_t StepTable::Hash::operator()(const MatchState& s) const {
  uint64_t h = Mix(s.partial_value, (uint64_t{s.partial_missing} << 8) | s.partial_length);
  for (uint32_t e : s.stacks) h = Mix(h, e);
  for (uint32_t o : s.offsets) h = Mix(h, uint64_t{o} << 32);
  return static_cast<size_t>(h);
}

StepTable::StepTable(const Grammar& g, size_t max_states) : g_(g), max_states_(max_states) {
  step_keys_.assign(1024, 0);
  step_vals_.assign(1024, kEmpty);
}

int32_t StepTable::Intern(const MatchState& s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  if (states_.size() >= max_states_) return kUnlisted;
  const int32_t id = static_cast<int32_t>(states_.size());
  auto [pos, inserted] = ids_.emplace(s, id);
  states_.push_back(&pos->first);
  uint8_t f = 0;
  for (size_t i = 0; i < s.num_stacks(); ++i) {
    if (s.offsets[i] == s.offsets[i + 1]) f |= kEmptyStack;
  }
  flags_.push_back(f);
  return id;
}

size_t StepTable::Slot(uint64_t key) const {
  const size_t mask = step_keys_.size() - 1;
  size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  while (step_vals_[i] != kEmpty && step_keys_[i] != key) i = (i + 1) & mask;
  return i;
}

void StepTable::GrowSteps() {
  std::vector<uint64_t> keys = std::move(step_keys_);
  std::vector<int32_t> vals = std::move(step_vals_);
  step_keys_.assign(keys.size() * 2, 0);
  step_vals_.assign(keys.size() * 2, kEmpty);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (vals[i] == kEmpty) continue;
    const size_t j = Slot(keys[i]);
    step_keys_[j] = keys[i];
    step_vals_[j] = vals[i];
  }
}

int32_t StepTable::Step(int32_t from, uint8_t byte, MatchState* out) {
  const uint64_t key = (static_cast<uint64_t>(from) << 8) | byte;
  size_t slot = Slot(key);
  if (step_vals_[slot] != kEmpty) return step_vals_[slot];
  int32_t to = kDead;
  if (Matcher::StepByte(g_, *states_[from], byte, scratch_)) {
    to = Intern(scratch_);
    if (to == kUnlisted) {
      *out = scratch_;
      return kUnlisted;  // not remembered: the next time computes it again
    }
  }
  if (2 * (num_steps_ + 1) > step_keys_.size()) {
    GrowSteps();
    slot = Slot(key);
  }
  step_keys_[slot] = key;
  step_vals_[slot] = to;
  ++num_steps_;
  return to;
}

}  // namespace gemlet::grammar
