// The synthetic tokenizer of `gemlet synth` (used when no real tokenizer.json is given): a
// 512-piece vocabulary shaped like Gemma 4's, written as a valid Hugging Face tokenizer.json
// (BPE, byte_fallback, normalizer " " -> "▁", decoder Replace/ByteFallback/Fuse, the same
// sections as ../shared/tokenizer/gemma4/tokenizer.json).
//
// Layout: the real control ids (<pad> 0, <eos> 1, <bos> 2, <unk> 3, <mask> 4, <|tool> 46 …
// <|"|> 52, <|think|> 98, <|channel> 100, <channel|> 101, <|turn> 105, <turn|> 106), "\n" 107,
// "\n\n" 108, byte pieces <0x00>..<0xFF> at 238..493 (so any text tokenizes), <unusedN> where
// the real file has them, and in the remaining slots runs of newlines and spaces, "▁", letters,
// digits, punctuation and a few dozen merged English pieces (▁the, ▁and, ing, ▁Hello, …).
// Larger vocabularies (full-size presets) are padded with <unusedN> pieces, and then also get
// the real multimodal control ids (<|image> 255999, …) when they fit.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "base/status.h"

namespace gemlet::convert {

constexpr int64_t kSynthTokenizerMinVocab = 512;

// tokenizer.json for a vocabulary of `vocab_size` (>= 512) ids.
Result<nlohmann::json> SyntheticTokenizerJson(int64_t vocab_size);

// A minimal tokenizer_config.json naming the special tokens (like the oracle's).
nlohmann::json SyntheticTokenizerConfigJson();

// The number of ids a tokenizer.json defines: 1 + the largest id in model.vocab and
// added_tokens. An error names what is malformed.
Result<int64_t> TokenizerJsonVocabSize(const nlohmann::json& tokenizer);

}  // namespace gemlet::convert
