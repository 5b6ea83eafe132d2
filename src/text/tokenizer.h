// The Gemma 4 tokenizer: BPE with byte fallback, exactly as Hugging Face `tokenizers` runs the
// Gemma 4 tokenizer.json (shared/tokenizer, spec §4.1):
//  * added/special tokens (types kControl and kUserDefined) are matched wherever they appear in
//    the text, leftmost first, the longest at a position;
//  * the text between them is normalised (" " → "▁" U+2581, nothing else: no prefix space, no
//    Unicode normalisation) and split into characters; a character without a piece becomes
//    the `<0xNN>` byte tokens of its UTF-8 bytes;
//  * merges are applied by rank (lowest first; ties: leftmost), over the whole segment.
// Input is bytes, not necessarily UTF-8: an invalid byte becomes the byte token of that byte
// (Hugging Face cannot receive such input at all; this is our documented extension).
//
// Decoding: "▁" → " ", and each run of consecutive byte tokens is emitted as its text if the
// run is valid UTF-8 as a whole, else as one U+FFFD per byte token (HF ByteFallback + Fuse).
// With skip_special, special tokens are dropped before that (a run may fuse across them).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/vocab.h"

namespace gemlet {

class GemletFile;

class Tokenizer {
 public:
  // `special` is the .gemlet metadata "tokenizer" object: {"model": "gemma4", "bos_id": 2,
  // "eos_id": 1, "pad_id": 0, "unk_id": 3, "eog_ids": [1, 106, 50], "add_bos": false}.
  // Fails (kCorrupt) on pieces that are not UTF-8 and on ids outside the vocabulary (in merges
  // or `special`). A merge whose concatenation is not a piece is ignored: merged ids are looked
  // up on first use, which keeps loading fast (the converter rejects such merges).
  static Result<Tokenizer> Create(const Vocab& vocab, const nlohmann::json& special);
  // The vocabulary and metadata "tokenizer" object of an opened .gemlet file.
  static Result<Tokenizer> FromGemlet(const GemletFile& file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of `text`; never adds <bos> (see add_bos()). Fails only for text over 2 GiB.
  Result<std::vector<int32_t>> Encode(std::string_view text) const;
  // Text of `ids`. Fails (kInvalidArgument) on an id outside the vocabulary.
  Result<std::string> Decode(std::span<const int32_t> ids, bool skip_special = false) const;

  int32_t size() const;  // number of ids
  // The vocabulary piece of `id` as stored ("▁" for spaces, "<0x0A>" for byte tokens); empty
  // for an id outside the vocabulary.
  std::string_view Piece(int32_t id) const;
  // The id of a piece, or -1.
  int32_t PieceToId(std::string_view piece) const;
  // Added/special tokens (kControl, kUserDefined): matched in text, dropped by skip_special.
  bool IsSpecial(int32_t id) const;
  // The token's type in the vocabulary (kNormal for an id outside it).
  TokenType Type(int32_t id) const;
  // The byte value of a `<0xNN>` byte token, or -1.
  int ByteValue(int32_t id) const;
  bool IsEog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const;
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t pad_id() const;
  int32_t unk_id() const;
  bool add_bos() const;  // whether callers should put <bos> first (false for Gemma 4)

  // Encoding strategies that must not change the ids; exposed so tests, the fuzzer and the
  // benchmark can compare them. linear_limit: parts of at most this many symbols are merged
  // by a linear scan, longer ones with a heap. split_parts: cut segments at boundaries no
  // merge crosses (tokenizer_encode.cc) instead of running BPE over each whole segment.
  struct EncodeTuning {
    int linear_limit = 24;
    bool split_parts = true;
  };
  void SetEncodeTuning(const EncodeTuning& tuning);

  struct Data;  // implementation (tokenizer.cc)

 private:
  explicit Tokenizer(std::unique_ptr<Data> d);
  friend class StreamDecoder;
  std::unique_ptr<Data> d_;
};

// Streaming decode: push ids one by one, get the text that is complete so far. The
// concatenation of every Push() result and the final Flush() equals Tokenizer::Decode of the
// same ids. Byte tokens are held until their run ends (a run is all-or-nothing valid), so no
// output ever ends in half a UTF-8 character.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  // Appends the newly completed text to *out. Fails on an id outside the vocabulary (nothing is
  // appended then and the decoder state is unchanged).
  Status Push(int32_t id, std::string* out);
  // Appends what is still held back (an unfinished byte run) and resets the run.
  void Flush(std::string* out);
  // Appends what Flush() would append now, keeping the run: the text the ids pushed so far
  // end in if no more come (a stop string may be complete in it while the run goes on).
  void Peek(std::string* out) const;
  // True if byte tokens are being held back.
  bool pending() const { return !pending_.empty(); }
  void Reset() { pending_.clear(); }

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::string pending_;  // bytes of the current byte-token run
};

}  // namespace gemlet
