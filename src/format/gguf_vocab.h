// The tokenizer of a GGUF file (tokenizer.ggml.* and tokenizer.chat_template) as a
// TokenizerInfo: pieces, scores, token types, BPE merges as id pairs, the special-token ids and
// the chat template.
#pragma once

#include "base/status.h"
#include "format/gguf.h"
#include "format/tokenizer_info.h"

namespace gemlet {

// Requires tokenizer.ggml.tokens (unique pieces); scores, token_type and merges are optional
// but must match the token count / name tokens of the vocabulary. Each merge "left right" is
// split at the space that leaves two known pieces. `special` gets model, bos/eos/pad/unk ids,
// eog_ids (eos, then `<turn|>` and `<|tool_response>` when present: what llama.cpp detects by
// text for gemma4) and add_bos (false for gemma4, whose chat template writes `<bos>` itself,
// although llama.cpp's converter forces tokenizer.ggml.add_bos_token on).
Result<TokenizerInfo> TokenizerFromGguf(const GgufFile& gguf);

}  // namespace gemlet
