// Reads a Hugging Face tokenizer (tokenizer.json, plus the optional tokenizer_config.json,
// chat_template.jinja and generation_config.json beside it) into a TokenizerInfo.
//
// Only the pipeline the Gemma 4 tokenizer uses is accepted, since that is what the runtime
// tokenizer implements: model BPE with byte_fallback, normaliser Replace(" " → "▁"),
// pre-tokenizer none or Split(" ", MergedWithPrevious), decoder Replace("▁" → " ") +
// ByteFallback + Fuse. Anything else fails with kUnsupported naming the field.
//
// Token types (format/vocab.h, GGUF numbering): added special tokens kControl, added
// non-special tokens kUserDefined, "<0xNN>" pieces kByte, the rest kNormal. Scores are 0.
#pragma once

#include <string>

#include "base/status.h"
#include "format/tokenizer_info.h"

namespace gemlet {

// `path` is a tokenizer.json file or a folder holding one. The optional files are read from the
// same folder. special: bos/eos/pad/unk from tokenizer_config.json's *_token names (else the
// pieces "<bos>", "<eos>", "<pad>", "<unk>"); eog_ids from generation_config.json's
// eos_token_id if present, else eos + eot_token ("<turn|>") + str_token ("<|tool_response>");
// add_bos from add_bos_token (default false). chat_template: chat_template.jinja, else
// tokenizer_config.json's "chat_template".
Result<TokenizerInfo> LoadHfTokenizer(const std::string& path);

// The same from the text of the files (for tests and fuzzing); `config` and
// `generation_config` may be empty. `name` is used in error messages.
Result<TokenizerInfo> ParseHfTokenizer(const std::string& tokenizer_json,
                                       const std::string& config_json,
                                       const std::string& generation_config_json,
                                       const std::string& name);

}  // namespace gemlet
