// Tokenizer::Encode. Hugging Face runs BPE over each whole text segment between special
// tokens (the Gemma pre-tokenizer splits on " ", which the normaliser has already replaced).
// A long segment is cut here into parts at boundaries that no merge can cross: between
// characters a and b such that no merge result contains "ab", checked for b = "▁", b = "\n"
// and a = "\n" from the vocabulary itself (Create). Merges never span such a boundary, and
// merges on the two sides do not influence each other, so BPE per part gives exactly the ids
// of BPE over the whole segment, in a fraction of the time.
//
// BPE on a part repeatedly merges the adjacent pair of lowest rank, the leftmost on a tie
// (HF's priority queue order). Parts of up to linear_limit symbols use a linear scan over
// cached pair ranks; longer ones a binary heap with lazy invalidation.
#include <algorithm>
#include <cstring>

#include "text/tokenizer.h"
#include "text/tokenizer_data.h"
#include "text/utf8.h"

namespace gemlet {

using tokenizer_internal::kNoRank;
using tokenizer_internal::kSpaceMark;

namespace {

struct Scratch {
  std::vector<int32_t> part;    // symbol ids of the current part
  std::vector<int32_t> ranks;   // [part.size() - 1] rank of (i, i + 1), kNoRank if none
  std::vector<int32_t> merged;  // [part.size() - 1] id of the merge of (i, i + 1)
  struct Node {
    int32_t id, prev, next;
  };
  std::vector<Node> nodes;
  struct Entry {
    int32_t rank, pos, left, right, merged;
  };
  std::vector<Entry> heap;
};

void BpeLinear(const Tokenizer::Data& d, Scratch* s, std::vector<int32_t>* out) {
  auto& ids = s->part;
  auto& ranks = s->ranks;
  auto& merged = s->merged;
  size_t m = ids.size();
  ranks.resize(m - 1);
  merged.resize(m - 1);
  auto pair = [&](size_t i) {
    if (!d.Merge(ids[i], ids[i + 1], &ranks[i], &merged[i])) ranks[i] = kNoRank;
  };
  for (size_t i = 0; i + 1 < m; ++i) pair(i);
  while (m > 1) {
    size_t best = 0;
    int32_t best_rank = ranks[0];
    for (size_t i = 1; i + 1 < m; ++i) {
      if (ranks[i] < best_rank) {
        best_rank = ranks[i];
        best = i;
      }
    }
    if (best_rank == kNoRank) break;
    ids[best] = merged[best];
    // Drop symbol best + 1 and pair best + 1 (now inside the merged symbol).
    std::memmove(ids.data() + best + 1, ids.data() + best + 2, (m - best - 2) * sizeof(int32_t));
    if (best + 2 < m) {
      const size_t tail = (m - best - 3) * sizeof(int32_t);
      std::memmove(ranks.data() + best + 1, ranks.data() + best + 2, tail);
      std::memmove(merged.data() + best + 1, merged.data() + best + 2, tail);
    }
    --m;
    if (best + 1 < m) pair(best);
    if (best > 0) pair(best - 1);
  }
  out->insert(out->end(), ids.begin(), ids.begin() + m);
}

void BpeHeap(const Tokenizer::Data& d, Scratch* s, std::vector<int32_t>* out) {
  const int32_t m = static_cast<int32_t>(s->part.size());
  auto& nodes = s->nodes;
  auto& heap = s->heap;
  nodes.resize(m);
  heap.clear();
  // Min-heap on (rank, pos).
  auto later = [](const Scratch::Entry& a, const Scratch::Entry& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  auto push = [&](int32_t pos) {
    const int32_t nx = nodes[pos].next;
    if (nx < 0) return;
    int32_t rank, mg;
    if (!d.Merge(nodes[pos].id, nodes[nx].id, &rank, &mg)) return;
    heap.push_back({rank, pos, nodes[pos].id, nodes[nx].id, mg});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i < m; ++i) nodes[i] = {s->part[i], i - 1, i + 1 < m ? i + 1 : -1};
  for (int32_t i = 0; i + 1 < m; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Scratch::Entry e = heap.back();
    heap.pop_back();
    auto& left = nodes[e.pos];
    // Stale if either symbol changed since the entry was pushed (removed symbols have id -1).
    if (left.id != e.left || left.next < 0 || nodes[left.next].id != e.right) continue;
    const int32_t gone = left.next;
    left.id = e.merged;
    left.next = nodes[gone].next;
    if (left.next >= 0) nodes[left.next].prev = e.pos;
    nodes[gone].id = -1;
    if (left.prev >= 0) push(left.prev);
    push(e.pos);
  }
  for (int32_t i = 0; i >= 0; i = nodes[i].next) out->push_back(nodes[i].id);
}

void Bpe(const Tokenizer::Data& d, Scratch* s, std::vector<int32_t>* out) {
  const size_t m = s->part.size();
  if (m == 0) return;
  if (m == 1) {
    out->push_back(s->part[0]);
  } else if (m <= static_cast<size_t>(d.linear_limit)) {
    BpeLinear(d, s, out);
  } else {
    BpeHeap(d, s, out);
  }
  s->part.clear();
}

// True if no merge can join a symbol ending in code point a with one starting with b.
inline bool SafeBoundary(const Tokenizer::Data& d, uint32_t a, uint32_t b) {
  if (!d.split_parts) return false;
  if (b == kSpaceMark) return a != kSpaceMark && !d.before_space.Contains(a);
  if (b == '\n') return a != '\n' && !d.before_nl.Contains(a);
  if (a == '\n') return !d.after_nl.Contains(b);
  return false;
}

// BPE over one segment without special tokens.
void EncodeSegment(const Tokenizer::Data& d, std::string_view seg, Scratch* s,
                   std::vector<int32_t>* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(seg.data());
  const size_t n = seg.size();
  uint32_t prev_last = 0;  // last code point of the previous character's pieces
  size_t i = 0;
  while (i < n) {
    uint32_t cp;
    int len;
    int32_t id;
    if (p[i] < 0x80) {
      cp = p[i] == ' ' ? kSpaceMark : p[i];
      len = 1;
      id = d.ascii_ids[p[i]];
    } else {
      len = utf8::DecodeChar(seg, i, &cp);
      id = len > 0 ? d.CharId(cp) : -1;
    }
    if (id >= 0) {
      if (!s->part.empty() && SafeBoundary(d, prev_last, cp)) Bpe(d, s, out);
      s->part.push_back(id);
      prev_last = cp;
    } else {
      // Byte fallback: the character's UTF-8 bytes (after normalisation), or one invalid byte.
      if (!s->part.empty() && SafeBoundary(d, prev_last, '<')) Bpe(d, s, out);
      if (len == 0) {
        s->part.push_back(d.byte_ids[p[i]]);
        len = 1;
      } else if (cp == kSpaceMark) {  // " " or "▁" without a piece
        for (uint8_t b : {0xE2, 0x96, 0x81}) s->part.push_back(d.byte_ids[b]);
      } else {
        for (int k = 0; k < len; ++k) s->part.push_back(d.byte_ids[p[i + k]]);
      }
      prev_last = '>';
    }
    i += len;
  }
  Bpe(d, s, out);
}

// The leftmost special token at or after `pos` (the longest one there). False if none.
bool FindSpecial(const Tokenizer::Data& d, std::string_view text, size_t pos, size_t* start,
                 size_t* len, int32_t* id) {
  const size_t n = text.size();
  for (size_t i = pos; i < n; ++i) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    if (!d.special_first[b]) continue;
    for (int32_t cand : d.special_by_first[b]) {
      const std::string_view piece = d.Piece(cand);
      if (piece.size() <= n - i && std::memcmp(text.data() + i, piece.data(), piece.size()) == 0) {
        *start = i;
        *len = piece.size();
        *id = cand;
        return true;
      }
    }
  }
  return false;
}

}  // namespace

Result<std::vector<int32_t>> Tokenizer::Encode(std::string_view text) const {
  if (text.size() > static_cast<size_t>(INT32_MAX)) {
    return OutOfRange("text of " + std::to_string(text.size()) + " bytes is too long to encode");
  }
  const Data& d = *d_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  Scratch s;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.size(), len = 0;
    int32_t id = -1;
    const bool found = FindSpecial(d, text, pos, &start, &len, &id);
    EncodeSegment(d, text.substr(pos, start - pos), &s, &out);
    if (!found) break;
    out.push_back(id);
    pos = start + len;
  }
  return out;
}

}  // namespace gemlet
