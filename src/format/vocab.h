// The tokenizer vocabulary as stored in a .gemlet file: pieces, scores, token types and BPE
// merges (as id pairs, rank = index). The runtime tokenizer is built from it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gemlet {

// Numbering follows GGUF's tokenizer.ggml.token_type.
enum class TokenType : uint8_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct Vocab {
  std::vector<std::string> pieces;  // [n_tokens] UTF-8 piece text (▁ for space)
  std::vector<float> scores;        // [n_tokens]
  std::vector<TokenType> types;     // [n_tokens]
  std::vector<std::pair<int32_t, int32_t>> merges;  // [n_merges] (left id, right id), by rank

  size_t size() const { return pieces.size(); }
  bool empty() const { return pieces.empty(); }
};

}  // namespace gemlet
