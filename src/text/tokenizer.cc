#include "text/tokenizer.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "format/gemlet_file.h"
#include "text/tokenizer_data.h"
#include "text/utf8.h"

namespace gemlet {

using tokenizer_internal::HashBytes;
using tokenizer_internal::kEmptySlot;
using tokenizer_internal::kSpaceMark;
using tokenizer_internal::Mix;

namespace {

uint64_t TableSize(uint64_t n) {
  uint64_t s = 16;
  while (s < 2 * n) s <<= 1;
  return s;
}

// ASCII without "\n": valid UTF-8 with no boundary characters. 8 bytes at a time.
bool IsPlainAscii(std::string_view p) {
  constexpr uint64_t kHigh = 0x8080808080808080ull, kOnes = 0x0101010101010101ull;
  size_t i = 0;
  for (; i + 8 <= p.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, p.data() + i, 8);
    const uint64_t nl = w ^ (kOnes * '\n');  // a zero byte where w has '\n'
    if ((w & kHigh) || ((nl - kOnes) & ~nl & kHigh)) return false;
  }
  for (; i < p.size(); ++i) {
    if (static_cast<uint8_t>(p[i]) >= 0x80 || p[i] == '\n') return false;
  }
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xNN>" piece (HF ByteFallback's test), or -1.
int ParseBytePiece(std::string_view p) {
  if (p.size() != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>') return -1;
  const int hi = HexDigit(p[3]), lo = HexDigit(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Status ReadId(const nlohmann::json& special, const char* key, int32_t n, int32_t* out) {
  *out = -1;
  if (!special.contains(key) || special[key].is_null()) return Status::Ok();
  const auto& v = special[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n) {
    return Corrupt(std::string("tokenizer metadata: \"") + key + "\" is " + v.dump() +
                   ", not an id below the vocabulary size " + std::to_string(n));
  }
  *out = v.get<int32_t>();
  return Status::Ok();
}

Status ReadSpecial(const nlohmann::json& special, Tokenizer::Data* d) {
  if (!special.is_object()) return Corrupt("tokenizer metadata is not a JSON object");
  if (special.contains("model")) {
    const auto& m = special["model"];
    if (!m.is_string() || m.get<std::string>() != "gemma4") {
      return Unsupported("tokenizer model " + m.dump() + " is not supported (expected \"gemma4\")");
    }
  }
  RETURN_IF_ERROR(ReadId(special, "bos_id", d->n, &d->bos));
  RETURN_IF_ERROR(ReadId(special, "eos_id", d->n, &d->eos));
  RETURN_IF_ERROR(ReadId(special, "pad_id", d->n, &d->pad));
  RETURN_IF_ERROR(ReadId(special, "unk_id", d->n, &d->unk));
  if (special.contains("eog_ids")) {
    const auto& e = special["eog_ids"];
    if (!e.is_array()) return Corrupt("tokenizer metadata: \"eog_ids\" is not an array");
    for (const auto& v : e) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= d->n) {
        return Corrupt("tokenizer metadata: \"eog_ids\" holds " + v.dump() +
                       ", not an id below the vocabulary size " + std::to_string(d->n));
      }
      const int32_t id = v.get<int32_t>();
      if (std::find(d->eog.begin(), d->eog.end(), id) == d->eog.end()) d->eog.push_back(id);
    }
  } else if (d->eos >= 0) {
    d->eog.push_back(d->eos);
  }
  if (special.contains("add_bos")) {
    if (!special["add_bos"].is_boolean()) {
      return Corrupt("tokenizer metadata: \"add_bos\" is not a boolean");
    }
    d->add_bos = special["add_bos"].get<bool>();
  }
  return Status::Ok();
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Data> d) : d_(std::move(d)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::Create(const Vocab& vocab, const nlohmann::json& special) {
  auto d = std::make_unique<Data>();
  if (vocab.empty()) return Corrupt("the vocabulary is empty");
  if (vocab.size() >= static_cast<size_t>(INT32_MAX)) return Corrupt("the vocabulary is too large");
  if (vocab.types.size() != vocab.size()) {
    return Corrupt("the vocabulary has " + std::to_string(vocab.size()) + " pieces but " +
                   std::to_string(vocab.types.size()) + " token types");
  }
  d->n = static_cast<int32_t>(vocab.size());
  const int32_t n = d->n;
  // Loading speed matters (< 50 ms for 262k pieces and 515k merges): one sequential pass over
  // the pieces, then hash-table inserts with software prefetch, and merged ids resolved lazily
  // (Data::Merge).

  // Pass 1: copy, validate, classify, hash, and note one-character pieces and boundary chars.
  size_t total = 0;
  for (const auto& p : vocab.pieces) total += p.size();
  if (total >= UINT32_MAX) return Corrupt("the vocabulary pieces are too large");
  d->blob.resize(total);
  d->offs.resize(n + 1);
  d->special.resize(n);
  d->types.resize(n);
  d->byte_value.resize(n);
  d->ascii_ids.fill(-1);
  d->bmp_ids.assign(0x10000, -1);
  struct Hashed {
    uint64_t hash;
    int32_t id;
  };
  std::vector<Hashed> hashes(n);
  size_t pos = 0;
  for (int32_t i = 0; i < n; ++i) {
    const std::string& src = vocab.pieces[i];
    d->offs[i] = static_cast<uint32_t>(pos);
    std::memcpy(d->blob.data() + pos, src.data(), src.size());
    const std::string_view p(d->blob.data() + pos, src.size());
    pos += src.size();
    hashes[i] = {HashBytes(p.data(), p.size()), i};
    const TokenType t = vocab.types[i];
    d->special[i] = (t == TokenType::kControl || t == TokenType::kUserDefined) ? 1 : 0;
    d->types[i] = t;
    d->byte_value[i] = static_cast<int16_t>(ParseBytePiece(p));
    // Characters: validity, and the code points next to "▁" and "\n" (boundary sets; from
    // every piece, a superset of the merge results, which keeps the splitting safe).
    uint32_t prev = 0, cp = 0;
    int chars = 0;
    if (p.size() > 1 && IsPlainAscii(p)) {  // the common case: nothing to check
      continue;
    }
    for (size_t k = 0; k < p.size(); ++chars) {
      const uint8_t b = static_cast<uint8_t>(p[k]);
      int len = 1;
      cp = b;
      if (b >= 0x80 && (len = utf8::DecodeChar(p, k, &cp)) == 0) {
        return Corrupt("vocabulary piece " + std::to_string(i) + " is not valid UTF-8");
      }
      if (k > 0) {
        if (cp == kSpaceMark && prev != kSpaceMark) d->before_space.Insert(prev);
        if (cp == '\n' && prev != '\n') d->before_nl.Insert(prev);
        if (prev == '\n' && cp != '\n') d->after_nl.Insert(cp);
      }
      prev = cp;
      k += len;
    }
    if (chars == 1) {  // the first of duplicate pieces wins, as in the piece table
      int32_t* slot = cp < 128 ? &d->ascii_ids[cp] : cp < 0x10000 ? &d->bmp_ids[cp] : nullptr;
      if (slot && *slot < 0) *slot = i;
      if (!slot) d->astral_ids.emplace(cp, i);
    }
  }
  d->offs[n] = static_cast<uint32_t>(pos);
  // The normaliser turns " " into "▁"; an unknown "▁" falls back to its bytes (Encode).
  d->ascii_ids[' '] = d->bmp_ids[kSpaceMark];

  // Pass 2: piece -> id (the first of duplicate pieces wins). Prefetching the slot a few
  // inserts ahead hides most of the cache misses of the random inserts.
  constexpr size_t kAhead = 16;
  const uint64_t psize = TableSize(n);
  d->piece_slots.assign(psize, 0);
  d->piece_mask = psize - 1;
  for (size_t i = 0; i < hashes.size(); ++i) {
    if (i + kAhead < hashes.size()) {
      __builtin_prefetch(&d->piece_slots[hashes[i + kAhead].hash & d->piece_mask], 1);
    }
    const Hashed& e = hashes[i];
    const uint64_t h = e.hash;
    const uint64_t slot_val = (h & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(e.id + 1);
    for (uint64_t s = h & d->piece_mask;; s = (s + 1) & d->piece_mask) {
      const uint64_t cur = d->piece_slots[s];
      if (cur == 0) {
        d->piece_slots[s] = slot_val;
        break;
      }
      if ((cur >> 32) == (h >> 32) &&
          d->Piece(static_cast<int32_t>(cur & 0xFFFFFFFF) - 1) == d->Piece(e.id)) {
        break;  // duplicate
      }
    }
  }
  std::vector<Hashed>().swap(hashes);

  RETURN_IF_ERROR(ReadSpecial(special, d.get()));
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    d->byte_ids[b] = d->Find(name);
    if (d->byte_ids[b] < 0) d->byte_ids[b] = d->unk >= 0 ? d->unk : 0;
  }

  // Pass 3: merges, (left, right) -> rank. A later duplicate overrides an earlier one, as in
  // Hugging Face's BPE loader.
  const size_t nm = vocab.merges.size();
  d->id_bits = std::bit_width(static_cast<uint32_t>(n));
  d->rank_bits = std::max(1, static_cast<int>(std::bit_width(nm)));
  if (2 * d->id_bits + d->rank_bits > 64) {
    return Unsupported("a vocabulary of " + std::to_string(n) + " pieces and " +
                       std::to_string(nm) + " merges is too large");
  }
  const uint64_t msize = TableSize(nm);
  d->merge_slots.assign(msize, kEmptySlot);
  d->merge_mask = msize - 1;
  d->merged_by_rank.assign(nm, tokenizer_internal::kUnresolved);
  std::vector<uint64_t> vals(nm);  // packed slots, in rank order
  const Data& cd = *d;
  for (size_t r = 0; r < nm; ++r) {
    const auto [l, rt] = vocab.merges[r];
    if (l < 0 || l >= n || rt < 0 || rt >= n) {
      return Corrupt("merge " + std::to_string(r) + " names a token outside the vocabulary");
    }
    vals[r] = (cd.MergeKey(l, rt) << d->rank_bits) | r;
  }
  const int rank_bits = d->rank_bits;
  const uint64_t mmask = d->merge_mask;
  for (size_t r = 0; r < nm; ++r) {
    if (r + kAhead < nm) {
      __builtin_prefetch(&d->merge_slots[Mix(vals[r + kAhead] >> rank_bits) & mmask], 1);
    }
    const uint64_t key = vals[r] >> rank_bits;
    for (uint64_t s = Mix(key) & mmask;; s = (s + 1) & mmask) {
      uint64_t& slot = d->merge_slots[s];
      if (slot == kEmptySlot || (slot >> rank_bits) == key) {
        slot = vals[r];  // a later duplicate overrides
        break;
      }
    }
  }

  // Special tokens, longest first at each first byte.
  std::vector<int32_t> specials;
  for (int32_t i = 0; i < n; ++i) {
    if (d->special[i] && d->offs[i + 1] > d->offs[i] && d->Find(d->Piece(i)) == i) {
      specials.push_back(i);
    }
  }
  std::stable_sort(specials.begin(), specials.end(),
                   [&](int32_t a, int32_t b) { return d->Piece(a).size() > d->Piece(b).size(); });
  for (int32_t id : specials) {
    const uint8_t first = static_cast<uint8_t>(d->Piece(id)[0]);
    d->special_by_first[first].push_back(id);
    d->special_first[first] = true;
  }
  return Tokenizer(std::move(d));
}

Result<Tokenizer> Tokenizer::FromGemlet(const GemletFile& file) {
  const auto& meta = file.metadata();
  if (!meta.is_object() || !meta.contains("tokenizer")) {
    return Corrupt(file.path() + ": the metadata has no \"tokenizer\" object");
  }
  if (!file.has_vocab()) return Corrupt(file.path() + ": the file has no vocabulary");
  auto t = Create(file.ReadVocab(), meta["tokenizer"]);
  if (!t.ok()) return t.status().WithContext(file.path());
  return t;
}

int32_t Tokenizer::size() const { return d_->n; }

std::string_view Tokenizer::Piece(int32_t id) const {
  if (id < 0 || id >= d_->n) return {};
  return d_->Piece(id);
}

int32_t Tokenizer::PieceToId(std::string_view piece) const { return d_->Find(piece); }

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < d_->n && d_->special[id] != 0;
}

TokenType Tokenizer::Type(int32_t id) const {
  return id >= 0 && id < d_->n ? d_->types[id] : TokenType::kNormal;
}

int Tokenizer::ByteValue(int32_t id) const {
  return id >= 0 && id < d_->n ? d_->byte_value[id] : -1;
}

bool Tokenizer::IsEog(int32_t id) const {
  return std::find(d_->eog.begin(), d_->eog.end(), id) != d_->eog.end();
}
const std::vector<int32_t>& Tokenizer::eog_ids() const { return d_->eog; }
int32_t Tokenizer::bos_id() const { return d_->bos; }
int32_t Tokenizer::eos_id() const { return d_->eos; }
int32_t Tokenizer::pad_id() const { return d_->pad; }
int32_t Tokenizer::unk_id() const { return d_->unk; }
bool Tokenizer::add_bos() const { return d_->add_bos; }
void Tokenizer::SetEncodeTuning(const EncodeTuning& tuning) {
  d_->linear_limit = std::max(1, tuning.linear_limit);
  d_->split_parts = tuning.split_parts;
}

namespace {

// Appends the text of a non-byte piece: "▁" becomes " ".
void AppendPieceText(std::string_view p, std::string* out) {
  size_t i = 0;
  while (i < p.size()) {
    const size_t j = p.find("\xE2\x96\x81", i);
    if (j == std::string_view::npos) {
      out->append(p.data() + i, p.size() - i);
      return;
    }
    out->append(p.data() + i, j - i);
    out->push_back(' ');
    i = j + 3;
  }
}

// A finished run of byte tokens: its text if valid UTF-8 as a whole, else U+FFFD per byte.
void FlushByteRun(std::string* run, std::string* out) {
  if (run->empty()) return;
  if (utf8::IsValid(*run)) {
    out->append(*run);
  } else {
    for (size_t i = 0; i < run->size(); ++i) out->append(utf8::kReplacement);
  }
  run->clear();
}

Status BadId(int32_t id, int32_t n) {
  return InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                         std::to_string(n) + ")");
}

}  // namespace

Result<std::string> Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  for (int32_t id : ids) {
    if (id < 0 || id >= d_->n) return BadId(id, d_->n);
  }
  std::string out, run;
  for (int32_t id : ids) {
    if (skip_special && d_->special[id]) continue;
    const int b = d_->byte_value[id];
    if (b >= 0) {
      run.push_back(static_cast<char>(b));
      continue;
    }
    FlushByteRun(&run, &out);
    AppendPieceText(d_->Piece(id), &out);
  }
  FlushByteRun(&run, &out);
  return out;
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tok_(&tokenizer), skip_special_(skip_special) {}

Status StreamDecoder::Push(int32_t id, std::string* out) {
  const Tokenizer::Data& d = *tok_->d_;
  if (id < 0 || id >= d.n) return BadId(id, d.n);
  if (skip_special_ && d.special[id]) return Status::Ok();
  const int b = d.byte_value[id];
  if (b >= 0) {
    pending_.push_back(static_cast<char>(b));
    return Status::Ok();
  }
  FlushByteRun(&pending_, out);
  AppendPieceText(d.Piece(id), out);
  return Status::Ok();
}

void StreamDecoder::Flush(std::string* out) { FlushByteRun(&pending_, out); }

void StreamDecoder::Peek(std::string* out) const {
  std::string run = pending_;
  FlushByteRun(&run, out);
}

}  // namespace gemlet
