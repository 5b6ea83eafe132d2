// The grammar layer's view of a tokenizer's vocabulary (grammar::Vocabulary: the bytes each id
// stands for and its kind), for the tests and the benchmark that use the real Gemma 4 vocabulary.
// Byte-fallback tokens "<0xNN>" are their byte, "▁" is a space, control/unknown/unused tokens
// are never allowed, the end-of-generation ids end a grammar.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grammar/token_matcher.h"
#include "text/tokenizer.h"

namespace gemlet::testing_util {

struct GrammarPieces {
  std::vector<std::string> pieces;
  std::vector<grammar::TokenKind> kinds;
};

inline GrammarPieces GrammarPiecesOf(const Tokenizer& tok, const Vocab& vocab) {
  GrammarPieces g;
  const int32_t n = tok.size();
  g.pieces.resize(n);
  g.kinds.assign(n, grammar::TokenKind::kText);
  for (int32_t id = 0; id < n; ++id) {
    const TokenType type = vocab.types[id];
    if (tok.IsEog(id)) {
      g.kinds[id] = grammar::TokenKind::kEnd;
    } else if (type == TokenType::kControl || type == TokenType::kUnknown || type == TokenType::kUnused) {
      g.kinds[id] = grammar::TokenKind::kSpecial;
    } else if (tok.ByteValue(id) >= 0) {
      g.pieces[id] = std::string(1, static_cast<char>(tok.ByteValue(id)));
    } else {
      std::string p(tok.Piece(id));
      std::string out;
      for (size_t i = 0; i < p.size();) {
        if (p.compare(i, 3, "\xE2\x96\x81") == 0) {  // ▁
          out += ' ';
          i += 3;
        } else {
          out += p[i++];
        }
      }
      g.pieces[id] = std::move(out);
      if (g.pieces[id].empty()) g.kinds[id] = grammar::TokenKind::kSpecial;
    }
  }
  return g;
}

}  // namespace gemlet::testing_util
