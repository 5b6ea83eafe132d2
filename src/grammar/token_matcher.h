// Grammar constraints at the token level. A Vocabulary is built once per vocabulary from the
// tokens' byte strings: a byte trie of the text tokens in preorder (each node with the end of
// its subtree, so a rejected prefix skips its whole subtree). A TokenMatcher walks it with a
// Matcher's stacks to fill the bitmask of allowed tokens (FillMask), checks one token
// (IsAllowed), and accepts tokens with a history for Rollback.
//
// Speed: the allowed set of a state is the union over its stacks, and a stack's tokens are
// those its top rule accepts on its own (independent of the stack below it) plus those that
// leave the top rule part way and continue below. The first part (a bitmask) and the second
// (a short list of (token, byte offset) pairs) are computed once per top position and cached,
// shared by every copy of the TokenMatcher; a FillMask then is an OR of cached masks plus a
// few short walks. (The idea of xgrammar's adaptive token mask cache, simplified.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "grammar/matcher.h"

namespace gemlet::grammar {

enum class TokenKind : uint8_t {
  kText,     // its bytes are matched against the grammar
  kSpecial,  // a control token: never allowed (pass it as kText to have its text matched)
  kEnd,      // an end of sequence: allowed exactly when the grammar is accepting
};

class Vocabulary {
 public:
  // pieces[i]: the bytes token i stands for (a byte-fallback token: its one byte; a
  // SentencePiece "▁" already turned into a space). kinds: one per piece. Fails
  // (kInvalidArgument) if the sizes differ, a text token is empty or longer than 65535 bytes.
  static Result<std::shared_ptr<const Vocabulary>> Create(std::span<const std::string> pieces,
                                                          std::span<const TokenKind> kinds);

  size_t size() const { return kinds_.size(); }
  size_t mask_words() const { return (size() + 31) / 32; }  // uint32 words of a mask
  TokenKind kind(int32_t id) const { return kinds_[id]; }
  std::string_view piece(int32_t id) const;

  // The trie in preorder; node 0 is the root (no byte).
  struct Node {
    uint32_t subtree_end;  // one past the last node of this node's subtree
    uint32_t token_begin;  // tokens ending here: token_ids[token_begin .. token_end)
    uint32_t token_end;
    uint16_t depth;  // bytes from the root
    uint8_t byte;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  const std::vector<int32_t>& end_ids() const { return end_ids_; }
  // The trie node of text token `id` (0 if it is not a text token).
  uint32_t node_of(int32_t id) const { return node_of_[id]; }
  size_t max_depth() const { return max_depth_; }  // the longest text piece, in bytes

 private:
  Vocabulary() = default;
  std::vector<TokenKind> kinds_;
  std::string bytes_;                 // all pieces back to back
  std::vector<uint32_t> piece_start_;  // size()+1 offsets into bytes_
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  std::vector<uint32_t> node_of_;
  std::vector<int32_t> end_ids_;
  size_t max_depth_ = 0;
};

// The per-position results of one (grammar, vocabulary) pair; thread-safe. Copies of a
// TokenMatcher share theirs; matchers for one grammar (requests with the same schema) may share
// one too.
class TokenMaskCache;
std::shared_ptr<TokenMaskCache> NewTokenMaskCache();

class TokenMatcher {
 public:
  // `cache`: one made by NewTokenMaskCache() for this grammar and vocabulary, or null (a new
  // one).
  TokenMatcher(std::shared_ptr<const Vocabulary> vocab, Matcher matcher,
               std::shared_ptr<TokenMaskCache> cache = nullptr);

  // Sets bit (id % 32) of mask[id / 32] for every allowed token and clears the others.
  // mask.size() must be vocab().mask_words().
  void FillMask(std::span<uint32_t> mask) const;
  // Whether token `id` is allowed now (the same answer as FillMask's bit), without a mask.
  bool IsAllowed(int32_t id) const;
  // Accepts token `id` if it is allowed (an end token: if accepting; the state stays) and
  // records it in the history; false (nothing changed) otherwise.
  bool AcceptToken(int32_t id);
  // Undoes the last n accepted tokens; fails (kOutOfRange, nothing changed) beyond the history.
  Status Rollback(size_t n) { return matcher_.Rollback(n); }

  bool IsAccepting() const { return matcher_.IsAccepting(); }
  bool IsDeadEnd() const { return matcher_.IsDeadEnd(); }
  TokenMatcher Copy() const { return *this; }
  // How many accepted tokens Rollback can undo (Matcher::set_max_history).
  void set_max_history(size_t n) { matcher_.set_max_history(n); }

  const Matcher& matcher() const { return matcher_; }
  const Vocabulary& vocab() const { return *vocab_; }
  const std::shared_ptr<TokenMaskCache>& cache() const { return cache_; }

  // FillMask without the cache: the full trie walk (for tests and benchmarks).
  void FillMaskUncached(std::span<uint32_t> mask) const;

 private:
  std::shared_ptr<const Vocabulary> vocab_;
  Matcher matcher_;
  std::shared_ptr<TokenMaskCache> cache_;
};

}  // namespace gemlet::grammar
