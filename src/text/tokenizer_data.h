// Internal tables of Tokenizer (tokenizer.cc builds them, tokenizer_encode.cc encodes with
// them). Not part of the public API.
#pragma once

#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer.h"

namespace gemlet {
namespace tokenizer_internal {

constexpr uint32_t kSpaceMark = 0x2581;  // "▁", what " " is normalised to
constexpr int32_t kNoRank = INT32_MAX;

// Hash of a piece, 8 bytes at a time (pieces are short; this runs 262k times per load).
inline uint64_t Mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 29;
  return h;
}
inline uint64_t HashBytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  for (size_t i = 0; i < n; ++i) w |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return Mix((h ^ w) * 0x94d049bb133111ebull);
}

// Sets of code points with a fast ASCII path. A set that grows past kMaxOther is switched off
// (Contains() then answers true for everything: the conservative answer).
struct CharSet {
  static constexpr size_t kMaxOther = 256;
  bool all = false;
  std::array<bool, 128> ascii{};
  std::vector<uint32_t> other;
  void Insert(uint32_t cp) {
    if (cp < 128) {
      ascii[cp] = true;
    } else if (!all) {
      for (uint32_t x : other) {
        if (x == cp) return;
      }
      other.push_back(cp);
      if (other.size() > kMaxOther) all = true;
    }
  }
  bool Contains(uint32_t cp) const {
    if (all) return true;
    if (cp < 128) return ascii[cp];
    for (uint32_t x : other) {
      if (x == cp) return true;
    }
    return false;
  }
};

// Merge table slots pack ((left << id_bits | right) << rank_bits) | rank into 64 bits; id_bits
// is wide enough for n itself, so a valid slot is never all ones (kEmptySlot).
constexpr uint64_t kEmptySlot = ~0ull;
constexpr int32_t kUnresolved = -1;  // merged id not looked up yet
constexpr int32_t kInvalid = -2;     // the concatenation is not a piece

}  // namespace tokenizer_internal

struct Tokenizer::Data {
  int32_t n = 0;
  std::string blob;                 // every piece, concatenated
  std::vector<uint32_t> offs;       // [n + 1] piece i is blob[offs[i], offs[i+1])
  std::vector<uint8_t> special;     // [n] 1 for kControl / kUserDefined
  std::vector<TokenType> types;     // [n]
  std::vector<int16_t> byte_value;  // [n] the byte of a <0xNN> piece, or -1

  // piece -> id: open addressing; slot = (hash tag << 32) | (id + 1), 0 = empty.
  std::vector<uint64_t> piece_slots;
  uint64_t piece_mask = 0;

  // (left, right) -> rank: open addressing over packed 64-bit slots (8 MiB for 515k merges).
  std::vector<uint64_t> merge_slots;
  uint64_t merge_mask = 0;
  int id_bits = 0, rank_bits = 0;
  // [n_merges] the id of left + right by rank, found on first use (a string lookup) so that
  // loading stays fast; `mutable` for that cache, written with relaxed atomics (every writer
  // stores the same value).
  mutable std::vector<int32_t> merged_by_rank;

  // One-character pieces. ASCII " " maps to the "▁" piece (the normaliser's job).
  std::array<int32_t, 128> ascii_ids{};
  std::vector<int32_t> bmp_ids;  // [0x10000], -1 if no piece
  std::unordered_map<uint32_t, int32_t> astral_ids;
  std::array<int32_t, 256> byte_ids{};  // <0xNN> pieces, or the unk id if missing

  // Special tokens to match in text: by first byte, longest first.
  std::array<std::vector<int32_t>, 256> special_by_first;
  std::array<bool, 256> special_first{};

  // Safe split points (see tokenizer_encode.cc): code points x for which some merge result
  // contains "x▁", "x\n" or "\nx".
  tokenizer_internal::CharSet before_space, before_nl, after_nl;

  int linear_limit = 24;
  bool split_parts = true;
  int32_t bos = -1, eos = -1, pad = -1, unk = -1;
  std::vector<int32_t> eog;
  bool add_bos = false;

  std::string_view Piece(int32_t id) const {
    return std::string_view(blob.data() + offs[id], offs[id + 1] - offs[id]);
  }
  int32_t Find(std::string_view s) const {
    const uint64_t h = tokenizer_internal::HashBytes(s.data(), s.size());
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t i = h & piece_mask;; i = (i + 1) & piece_mask) {
      const uint64_t slot = piece_slots[i];
      if (slot == 0) return -1;
      if (static_cast<uint32_t>(slot >> 32) != tag) continue;
      const int32_t id = static_cast<int32_t>(static_cast<uint32_t>(slot)) - 1;
      if (Piece(id) == s) return id;
    }
  }
  // The id of the piece a + b, or -1.
  int32_t FindConcat(std::string_view a, std::string_view b) const {
    char buf[128];
    if (a.size() + b.size() <= sizeof(buf)) {
      std::memcpy(buf, a.data(), a.size());
      std::memcpy(buf + a.size(), b.data(), b.size());
      return Find(std::string_view(buf, a.size() + b.size()));
    }
    return Find(std::string(a) + std::string(b));
  }
  int32_t CharId(uint32_t cp) const {
    if (cp < 128) return ascii_ids[cp];
    if (cp < 0x10000) return bmp_ids[cp];
    auto it = astral_ids.find(cp);
    return it == astral_ids.end() ? -1 : it->second;
  }
  uint64_t MergeKey(int32_t l, int32_t r) const {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << id_bits) | static_cast<uint32_t>(r);
  }
  // Rank and merged id of the pair (l, r); false if the pair never merges. A merge whose
  // concatenation is not a piece (only a corrupt file has one) never merges.
  bool Merge(int32_t l, int32_t r, int32_t* rank, int32_t* merged) const {
    const uint64_t key = MergeKey(l, r);
    for (uint64_t i = tokenizer_internal::Mix(key) & merge_mask;; i = (i + 1) & merge_mask) {
      const uint64_t slot = merge_slots[i];
      if (slot == tokenizer_internal::kEmptySlot) return false;
      if ((slot >> rank_bits) != key) continue;
      const int32_t rk = static_cast<int32_t>(slot & ((uint64_t{1} << rank_bits) - 1));
      std::atomic_ref<int32_t> cached(merged_by_rank[rk]);
      int32_t m = cached.load(std::memory_order_relaxed);
      if (m == tokenizer_internal::kUnresolved) {
        m = FindConcat(Piece(l), Piece(r));
        if (m < 0) m = tokenizer_internal::kInvalid;
        cached.store(m, std::memory_order_relaxed);
      }
      if (m < 0) return false;
      *rank = rk;
      *merged = m;
      return true;
    }
  }
};

}  // namespace gemlet
