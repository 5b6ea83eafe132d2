#include "runtime/sequence_model.h"

#include <algorithm>

namespace gemlet::runtime {

std::vector<int64_t> PlanStep(std::span<const int64_t> pending, int64_t budget, int64_t chunk) {
  std::vector<int64_t> take(pending.size(), 0);
  int64_t rows = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i] == 1) {
      take[i] = 1;
      ++rows;
    }
  }
  bool first = true;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i] <= 1) continue;
    const int64_t room = budget - rows;
    if (room <= 0 && !first) break;
    take[i] = std::min({pending[i], std::max<int64_t>(chunk, 1), std::max<int64_t>(room, 1)});
    rows += take[i];
    first = false;
  }
  return take;
}

}  // namespace gemlet::runtime
