#include "grammar/token_matcher.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <utility>

namespace gemlet::grammar {

Result<std::shared_ptr<const Vocabulary>> Vocabulary::Create(std::span<const std::string> pieces,
                                                             std::span<const TokenKind> kinds) {
  if (pieces.size() != kinds.size()) {
    return InvalidArgument("grammar vocabulary: " + std::to_string(pieces.size()) + " pieces but " +
                           std::to_string(kinds.size()) + " kinds");
  }
  if (pieces.size() > (size_t{1} << 31)) return InvalidArgument("grammar vocabulary: too many tokens");
  std::shared_ptr<Vocabulary> v(new Vocabulary());
  v->kinds_.assign(kinds.begin(), kinds.end());
  v->piece_start_.reserve(pieces.size() + 1);
  std::vector<int32_t> text;
  for (size_t i = 0; i < pieces.size(); ++i) {
    v->piece_start_.push_back(static_cast<uint32_t>(v->bytes_.size()));
    if (kinds[i] == TokenKind::kText) {
      if (pieces[i].empty() || pieces[i].size() > 65535) {
        return InvalidArgument("grammar vocabulary: text token " + std::to_string(i) + " is " +
                               (pieces[i].empty() ? "empty" : "longer than 65535 bytes"));
      }
      v->bytes_ += pieces[i];
      text.push_back(static_cast<int32_t>(i));
    } else if (kinds[i] == TokenKind::kEnd) {
      v->end_ids_.push_back(static_cast<int32_t>(i));
    }
  }
  v->piece_start_.push_back(static_cast<uint32_t>(v->bytes_.size()));
  std::stable_sort(text.begin(), text.end(), [&](int32_t a, int32_t b) { return v->piece(a) < v->piece(b); });
  // The trie in preorder, from the sorted pieces: `path` holds the nodes of the previous piece.
  v->node_of_.assign(pieces.size(), 0);
  v->nodes_.push_back({0, 0, 0, 0, 0});
  std::vector<uint32_t> path{0};
  std::string_view prev;
  for (int32_t id : text) {
    const std::string_view p = v->piece(id);
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    while (path.size() > common + 1) {
      v->nodes_[path.back()].subtree_end = static_cast<uint32_t>(v->nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < p.size(); ++d) {
      const uint32_t t = static_cast<uint32_t>(v->token_ids_.size());
      v->nodes_.push_back({0, t, t, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(p[d])});
      path.push_back(static_cast<uint32_t>(v->nodes_.size() - 1));
    }
    Node& n = v->nodes_[path.back()];
    v->token_ids_.push_back(id);
    n.token_end = static_cast<uint32_t>(v->token_ids_.size());
    v->node_of_[id] = path.back();
    v->max_depth_ = std::max(v->max_depth_, p.size());
    prev = p;
  }
  while (!path.empty()) {
    v->nodes_[path.back()].subtree_end = static_cast<uint32_t>(v->nodes_.size());
    path.pop_back();
  }
  return std::shared_ptr<const Vocabulary>(std::move(v));
}

std::string_view Vocabulary::piece(int32_t id) const {
  return std::string_view(bytes_).substr(piece_start_[id], piece_start_[id + 1] - piece_start_[id]);
}

namespace {

inline void SetBit(std::span<uint32_t> mask, int32_t id) { mask[id >> 5] |= uint32_t{1} << (id & 31); }
inline bool GetBit(std::span<const uint32_t> mask, int32_t id) { return (mask[id >> 5] >> (id & 31)) & 1; }

bool HasEmptyStack(const MatchState& s) {
  for (size_t i = 0; i < s.num_stacks(); ++i) {
    if (s.offsets[i] == s.offsets[i + 1]) return true;
  }
  return false;
}

// Per-thread scratch states, one per trie depth, reused across walks.
std::vector<MatchState>& Scratch(size_t depth) {
  thread_local std::vector<MatchState> states;
  if (states.size() < depth + 1) states.resize(depth + 1);
  return states;
}

// Sets the bits of every text token whose bytes `start` can accept (the walk on its own).
void FullWalk(const Grammar& g, const Vocabulary& v, const MatchState& start, std::span<uint32_t> mask) {
  const auto& nodes = v.nodes();
  const auto& ids = v.token_ids();
  std::vector<MatchState>& st = Scratch(v.max_depth());
  st[0] = start;
  for (uint32_t i = 1; i < nodes.size();) {
    const auto& n = nodes[i];
    if (!Matcher::StepByte(g, st[n.depth - 1], n.byte, st[n.depth])) {
      i = n.subtree_end;
      continue;
    }
    for (uint32_t t = n.token_begin; t < n.token_end; ++t) SetBit(mask, ids[t]);
    ++i;
  }
}

// Whether `start` accepts `bytes`, with the scratch states above depth `base` (a walk below it
// may be using the lower ones).
bool Accepts(const Grammar& g, const MatchState& start, std::string_view bytes, MatchState& a, MatchState& b) {
  const MatchState* cur = &start;
  MatchState* bufs[2] = {&a, &b};
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!Matcher::StepByte(g, *cur, static_cast<uint8_t>(bytes[i]), *bufs[i & 1])) return false;
    cur = bufs[i & 1];
  }
  return true;
}

}  // namespace

class TokenMaskCache {
 public:
  struct Entry {
    std::vector<uint32_t> accepted;  // tokens the top's rule accepts on its own
    // Tokens that only leave the top's rule: (token, bytes matched before it left). Sorted by
    // token; a token may appear with several offsets.
    std::vector<std::pair<int32_t, uint16_t>> uncertain;
    size_t bytes() const { return accepted.size() * 4 + uncertain.size() * 8 + 64; }
  };

  std::shared_ptr<const Entry> Get(const Grammar& g, const Vocabulary& v, uint32_t top) {
    std::lock_guard<std::mutex> lock(mu_);
    if (grammar_ == nullptr) {
      grammar_ = &g;
      vocab_ = &v;
    }
    GEMLET_CHECK_MSG(grammar_ == &g && vocab_ == &v, "a TokenMaskCache serves one grammar and vocabulary");
    auto it = entries_.find(top);
    if (it != entries_.end()) return it->second;
    auto e = Compute(g, v, top);
    if (bytes_ + e->bytes() > kMaxBytes) {
      entries_.clear();
      bytes_ = 0;
    }
    bytes_ += e->bytes();
    entries_.emplace(top, e);
    return e;
  }

  std::shared_ptr<const Entry> Find(uint32_t top) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(top);
    return it == entries_.end() ? nullptr : it->second;
  }

 private:
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  // The walk of the single-stack state [top]: a state that holds the empty stack has left the
  // top's rule (what follows depends on the stack below it).
  static std::shared_ptr<const Entry> Compute(const Grammar& g, const Vocabulary& v, uint32_t top) {
    auto e = std::make_shared<Entry>();
    e->accepted.assign(v.mask_words(), 0);
    const auto& nodes = v.nodes();
    const auto& ids = v.token_ids();
    std::vector<uint32_t> exits;  // nodes where the rule was left
    std::vector<MatchState>& st = Scratch(v.max_depth());
    st[0].stacks.assign(1, top);
    st[0].offsets.assign({0, 1});
    st[0].partial_missing = st[0].partial_length = 0;
    st[0].partial_value = 0;
    for (uint32_t i = 1; i < nodes.size();) {
      const auto& n = nodes[i];
      MatchState& out = st[n.depth];
      if (!Matcher::StepByte(g, st[n.depth - 1], n.byte, out)) {
        i = n.subtree_end;
        continue;
      }
      for (uint32_t t = n.token_begin; t < n.token_end; ++t) SetBit(e->accepted, ids[t]);
      if (HasEmptyStack(out)) {
        exits.push_back(i);
        if (out.num_stacks() == 1) {  // only the exit: nothing more inside the rule
          i = n.subtree_end;
          continue;
        }
      }
      ++i;
    }
    for (uint32_t x : exits) {
      const uint16_t k = nodes[x].depth;
      for (uint32_t j = x + 1; j < nodes[x].subtree_end; ++j) {
        for (uint32_t t = nodes[j].token_begin; t < nodes[j].token_end; ++t) {
          if (!GetBit(e->accepted, ids[t])) e->uncertain.push_back({ids[t], k});
        }
      }
    }
    std::sort(e->uncertain.begin(), e->uncertain.end());
    e->uncertain.erase(std::unique(e->uncertain.begin(), e->uncertain.end()), e->uncertain.end());
    return e;
  }

  std::mutex mu_;
  const Grammar* grammar_ = nullptr;
  const Vocabulary* vocab_ = nullptr;
  std::unordered_map<uint32_t, std::shared_ptr<const Entry>> entries_;
  size_t bytes_ = 0;
};

std::shared_ptr<TokenMaskCache> NewTokenMaskCache() { return std::make_shared<TokenMaskCache>(); }

TokenMatcher::TokenMatcher(std::shared_ptr<const Vocabulary> vocab, Matcher matcher,
                           std::shared_ptr<TokenMaskCache> cache)
    : vocab_(std::move(vocab)), matcher_(std::move(matcher)), cache_(std::move(cache)) {
  if (!cache_) cache_ = NewTokenMaskCache();
}

void TokenMatcher::FillMaskUncached(std::span<uint32_t> mask) const {
  GEMLET_CHECK(mask.size() == vocab_->mask_words());
  std::fill(mask.begin(), mask.end(), 0);
  const MatchState& s = matcher_.state();
  if (!s.empty()) FullWalk(matcher_.grammar(), *vocab_, s, mask);
  if (matcher_.IsAccepting()) {
    for (int32_t id : vocab_->end_ids()) SetBit(mask, id);
  }
}

void TokenMatcher::FillMask(std::span<uint32_t> mask) const {
  GEMLET_CHECK(mask.size() == vocab_->mask_words());
  const MatchState& s = matcher_.state();
  if (s.partial_missing != 0) {
    FillMaskUncached(mask);
    return;
  }
  std::fill(mask.begin(), mask.end(), 0);
  const Grammar& g = matcher_.grammar();
  MatchState a, b;
  for (size_t i = 0; i < s.num_stacks(); ++i) {
    const auto stack = s.stack(i);
    if (stack.empty()) continue;
    const auto e = cache_->Get(g, *vocab_, stack.back());
    const uint32_t* acc = e->accepted.data();
    for (size_t w = 0; w < mask.size(); ++w) mask[w] |= acc[w];
    if (e->uncertain.empty() || stack.size() == 1) continue;  // nothing below the top: no exits
    const MatchState below = Matcher::Expand(g, stack.first(stack.size() - 1));
    for (const auto& [id, k] : e->uncertain) {
      if (GetBit(mask, id)) continue;
      if (Accepts(g, below, vocab_->piece(id).substr(k), a, b)) SetBit(mask, id);
    }
  }
  if (matcher_.IsAccepting()) {
    for (int32_t id : vocab_->end_ids()) SetBit(mask, id);
  }
}

bool TokenMatcher::IsAllowed(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_->size()) return false;
  switch (vocab_->kind(id)) {
    case TokenKind::kSpecial:
      return false;
    case TokenKind::kEnd:
      return matcher_.IsAccepting();
    case TokenKind::kText:
      break;
  }
  const MatchState& s = matcher_.state();
  if (s.partial_missing == 0) {
    for (size_t i = 0; i < s.num_stacks(); ++i) {
      const auto stack = s.stack(i);
      if (stack.empty()) continue;
      const auto e = cache_->Find(stack.back());
      if (e && GetBit(e->accepted, id)) return true;
    }
  }
  return matcher_.CanAcceptBytes(vocab_->piece(id));
}

bool TokenMatcher::AcceptToken(int32_t id) {
  if (!IsAllowed(id)) return false;
  if (vocab_->kind(id) == TokenKind::kEnd) return matcher_.AcceptBytes("");
  return matcher_.AcceptBytes(vocab_->piece(id));
}

}  // namespace gemlet::grammar
