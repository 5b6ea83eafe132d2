#include "grammar/token_matcher.h"


#include <algorithm>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "grammar/step_table.h"

namespace gemlet::grammar {

namespace {

// A trie in preorder from (bytes, id) pairs sorted by bytes (none empty): `path` holds the
// nodes of the previous piece. Returns the longest piece's length.
size_t BuildTrie(std::span<const std::pair<std::string_view, int32_t>> sorted, std::vector<Vocabulary::Node>& nodes,
                 std::vector<int32_t>& ids, std::vector<uint32_t>* node_of) {
  nodes.assign(1, {0, 0, 0, 0, 0});
  ids.clear();
  size_t max_depth = 0;
  std::vector<uint32_t> path{0};
  std::string_view prev;
  for (const auto& [p, id] : sorted) {
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    while (path.size() > common + 1) {
      nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
      path.pop_back();
    }
    for (size_t d = common; d < p.size(); ++d) {
      const uint32_t t = static_cast<uint32_t>(ids.size());
      nodes.push_back({0, t, t, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(p[d])});
      path.push_back(static_cast<uint32_t>(nodes.size() - 1));
    }
    ids.push_back(id);
    nodes[path.back()].token_end = static_cast<uint32_t>(ids.size());
    if (node_of) (*node_of)[id] = path.back();
    max_depth = std::max(max_depth, p.size());
    prev = p;
  }
  while (!path.empty()) {
    nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
    path.pop_back();
  }
  return max_depth;
}

}  // namespace

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
  std::vector<std::pair<std::string_view, int32_t>> sorted;
  sorted.reserve(text.size());
  for (int32_t id : text) sorted.push_back({v->piece(id), id});
  std::sort(sorted.begin(), sorted.end());  // by bytes, then id
  v->node_of_.assign(pieces.size(), 0);
  v->max_depth_ = BuildTrie(sorted, v->nodes_, v->token_ids_, &v->node_of_);
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

// A trie walk's states, one per depth: each an id in a StepTable (the steps looked up, most
// walks meet few distinct states) or, once the table is full, a state of its own.
class WalkStates {
 public:
  WalkStates(const Grammar& g, size_t max_depth, const MatchState& start) : table_(g), g_(g) {
    ids_.resize(max_depth + 1);
    own_.resize(max_depth + 1);
    ids_[0] = table_.Intern(start);  // an empty table has room
  }
  // Steps the state at depth d - 1 by `byte` into depth d; false if it died.
  bool Step(size_t d, uint8_t byte) {
    const int32_t from = ids_[d - 1];
    if (from >= 0) {
      ids_[d] = table_.Step(from, byte, &own_[d]);
      return ids_[d] != StepTable::kDead;
    }
    ids_[d] = StepTable::kUnlisted;
    return Matcher::StepByte(g_, own_[d - 1], byte, own_[d]);
  }
  bool HasEmptyStack(size_t d) const {
    return ids_[d] >= 0 ? table_.has_empty_stack(ids_[d]) : grammar::HasEmptyStack(own_[d]);
  }
  size_t NumStacks(size_t d) const {
    return ids_[d] >= 0 ? table_.num_stacks(ids_[d]) : own_[d].num_stacks();
  }

 private:
  StepTable table_;
  const Grammar& g_;
  std::vector<int32_t> ids_;
  std::vector<MatchState> own_;
};

// Sets the bits of every token of the trie whose bytes `start` can accept.
void Walk(const Grammar& g, const std::vector<Vocabulary::Node>& nodes, const std::vector<int32_t>& ids,
          size_t max_depth, const MatchState& start, std::span<uint32_t> mask) {
  // A small trie (the tokens that leave a cached position) is walked directly: setting up a
  // table would cost more than it saves.
  constexpr size_t kSmallTrie = 512;
  if (nodes.size() < kSmallTrie) {
    std::vector<MatchState>& st = Scratch(max_depth);
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
    return;
  }
  WalkStates st(g, max_depth, start);
  for (uint32_t i = 1; i < nodes.size();) {
    const auto& n = nodes[i];
    if (!st.Step(n.depth, n.byte)) {
      i = n.subtree_end;
      continue;
    }
    for (uint32_t t = n.token_begin; t < n.token_end; ++t) SetBit(mask, ids[t]);
    ++i;
  }
}

}  // namespace

class TokenMaskCache {
 public:
  // The results for the top of a stack: its top `frames` positions (a key), walked on their own.
  struct Entry {
    // Leaving the top frames is too common for them to be judged alone (the top rule is a small
    // helper, as a repetition's body is): use one frame more. Nothing else is filled then.
    bool deeper = false;
    std::vector<uint32_t> accepted;  // tokens the top frames accept on their own
    // The tokens that only leave the top frames, by what is left of them when they leave
    // (a token may leave at several offsets): a trie to walk from the state below the frames.
    std::vector<Vocabulary::Node> exit_nodes;
    std::vector<int32_t> exit_ids;
    size_t exit_depth = 0;
    size_t bytes() const { return accepted.size() * 4 + exit_nodes.size() * 16 + exit_ids.size() * 4 + 64; }
  };
  static constexpr size_t kMaxFrames = 8;

  // `frames`: the top of a stack, bottom first; `has_below`: the stack goes on below them.
  std::shared_ptr<const Entry> Get(const Grammar& g, const Vocabulary& v, std::span<const uint32_t> frames,
                                   bool has_below) {
    const std::string key = Key(frames, has_below);
    std::lock_guard<std::mutex> lock(mu_);
    if (grammar_ == nullptr) {
      grammar_ = &g;
      vocab_ = &v;
    }
    GEMLET_CHECK_MSG(grammar_ == &g && vocab_ == &v, "a TokenMaskCache serves one grammar and vocabulary");
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    auto e = Compute(g, v, frames, has_below);
    if (bytes_ + e->bytes() > kMaxBytes) {
      entries_.clear();
      bytes_ = 0;
    }
    bytes_ += e->bytes();
    entries_.emplace(key, e);
    return e;
  }

  std::shared_ptr<const Entry> Find(std::span<const uint32_t> frames, bool has_below) {
    const std::string key = Key(frames, has_below);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second;
  }

 private:
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  static std::string Key(std::span<const uint32_t> frames, bool has_below) {
    std::string k(reinterpret_cast<const char*>(frames.data()), frames.size() * sizeof(uint32_t));
    k += has_below ? 'b' : '-';
    return k;
  }

  // The walk of the single-stack state `frames`: a state that holds the empty stack has left
  // them (what follows depends on the stack below).
  static std::shared_ptr<const Entry> Compute(const Grammar& g, const Vocabulary& v, std::span<const uint32_t> frames,
                                              bool has_below) {
    auto e = std::make_shared<Entry>();
    e->accepted.assign(v.mask_words(), 0);
    const auto& nodes = v.nodes();
    const auto& ids = v.token_ids();
    std::vector<uint32_t> exits;  // nodes where the frames were left
    MatchState start;
    start.stacks.assign(frames.begin(), frames.end());
    start.offsets.assign({0, static_cast<uint32_t>(frames.size())});
    WalkStates st(g, v.max_depth(), start);
    for (uint32_t i = 1; i < nodes.size();) {
      const auto& n = nodes[i];
      if (!st.Step(n.depth, n.byte)) {
        i = n.subtree_end;
        continue;
      }
      for (uint32_t t = n.token_begin; t < n.token_end; ++t) SetBit(e->accepted, ids[t]);
      if (st.HasEmptyStack(n.depth)) {
        exits.push_back(i);
        if (st.NumStacks(n.depth) == 1) {  // only the exit: nothing more inside the frames
          i = n.subtree_end;
          continue;
        }
      }
      ++i;
    }
    if (!has_below) return e;  // leaving the whole stack ends the grammar: nothing may follow
    // The tokens below an exit node are a contiguous run of the trie's token list (preorder):
    // count those not already accepted first, so that a position left too often is told
    // "deeper" without gathering their pieces.
    const size_t limit = frames.size() < kMaxFrames ? v.size() / 16 : SIZE_MAX;
    auto below_exit = [&](uint32_t x) {
      const uint32_t end = nodes[x].subtree_end;
      return std::pair<uint32_t, uint32_t>(nodes[x].token_end,
                                           end < nodes.size() ? nodes[end].token_begin : static_cast<uint32_t>(ids.size()));
    };
    size_t count = 0;
    for (uint32_t x : exits) {
      const auto [b, end] = below_exit(x);
      for (uint32_t t = b; t < end; ++t) count += !GetBit(e->accepted, ids[t]);
      if (count > limit) {
        auto d = std::make_shared<Entry>();
        d->deeper = true;
        return d;
      }
    }
    std::vector<std::pair<std::string_view, int32_t>> rest;
    rest.reserve(count);
    for (uint32_t x : exits) {
      const uint16_t k = nodes[x].depth;
      const auto [b, end] = below_exit(x);
      for (uint32_t t = b; t < end; ++t) {
        if (!GetBit(e->accepted, ids[t])) rest.push_back({v.piece(ids[t]).substr(k), ids[t]});
      }
    }
    std::sort(rest.begin(), rest.end());
    rest.erase(std::unique(rest.begin(), rest.end()), rest.end());
    e->exit_depth = BuildTrie(rest, e->exit_nodes, e->exit_ids, nullptr);
    return e;
  }

  std::mutex mu_;
  const Grammar* grammar_ = nullptr;
  const Vocabulary* vocab_ = nullptr;
  std::unordered_map<std::string, std::shared_ptr<const Entry>> entries_;
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
  if (!s.empty()) Walk(matcher_.grammar(), vocab_->nodes(), vocab_->token_ids(), vocab_->max_depth(), s, mask);
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
  for (size_t i = 0; i < s.num_stacks(); ++i) {
    const auto stack = s.stack(i);
    if (stack.empty()) continue;
    for (size_t k = 1;; ++k) {
      const bool has_below = k < stack.size();
      const auto e = cache_->Get(g, *vocab_, stack.last(k), has_below);
      if (e->deeper) continue;
      const uint32_t* acc = e->accepted.data();
      for (size_t w = 0; w < mask.size(); ++w) mask[w] |= acc[w];
      if (has_below && !e->exit_ids.empty()) {
        const MatchState below = Matcher::Expand(g, stack.first(stack.size() - k));
        Walk(g, e->exit_nodes, e->exit_ids, e->exit_depth, below, mask);
      }
      break;
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
      const auto e = cache_->Find(stack.last(1), stack.size() > 1);
      if (e && !e->deeper && GetBit(e->accepted, id)) return true;
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
