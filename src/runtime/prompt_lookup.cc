#include "runtime/prompt_lookup.h"

#include <algorithm>

namespace gemlet::runtime {

LookupMatch PromptLookup(std::span<const int32_t> context, int64_t max_ngram, int64_t min_ngram,
                         int64_t max_draft) {
  LookupMatch m;
  const int64_t N = static_cast<int64_t>(context.size());
  min_ngram = std::max<int64_t>(1, min_ngram);
  if (max_draft <= 0) return m;
  for (int64_t n = std::min(max_ngram, N - 1); n >= min_ngram; --n) {
    const int32_t* suffix = context.data() + N - n;
    // An occurrence ending at e (exclusive), e < N: context[e − n, e) == suffix.
    for (int64_t e = N - 1; e >= n; --e) {
      if (!std::equal(suffix, suffix + n, context.data() + e - n)) continue;
      m.ngram = n;
      // What followed the match, copied as LZ77 copies with overlap: past the context's end
      // the copy reads its own output, so a match N − e tokens back continues with period
      // N − e (a repeated token or phrase yields max_draft drafts, not N − e).
      m.draft.resize(static_cast<size_t>(max_draft));
      for (int64_t i = 0; i < max_draft; ++i) {
        m.draft[i] = e + i < N ? context[e + i] : m.draft[e + i - N];
      }
      return m;
    }
  }
  return m;
}

}  // namespace gemlet::runtime
