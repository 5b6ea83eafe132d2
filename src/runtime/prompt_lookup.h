// Prompt-lookup drafts (no model; Saxena's "prompt lookup decoding", HF transformers'
// prompt_lookup_num_tokens): find the last n tokens of the context earlier in the context and
// propose what followed them there. Strong where the output quotes its input (code edits,
// summaries, answers that cite their sources).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gemlet::runtime {

struct LookupMatch {
  int64_t ngram = 0;  // length of the matched suffix; 0: no match
  std::vector<int32_t> draft;  // what followed the match: max_draft tokens (none without one)
};

// For n from max_ngram down to min_ngram (≥ 1): the most recent earlier occurrence of the
// last n tokens of `context` (one that ends before the context does, at e), with the
// max_draft tokens that followed it: context[e], context[e + 1], ..., continued past the
// context's end with period N − e (the drafts repeat themselves, as a repeated phrase does).
// The first n that matches wins. O(|context| · max_ngram).
LookupMatch PromptLookup(std::span<const int32_t> context, int64_t max_ngram, int64_t min_ngram,
                         int64_t max_draft);

}  // namespace gemlet::runtime
