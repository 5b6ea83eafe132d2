// What a model importer learns about the tokenizer, from either a Hugging Face folder
// (format/tokenizer_json.h: LoadHfTokenizer) or a GGUF file (format/gguf_vocab.h:
// TokenizerFromGguf). The converter stores it in the .gemlet file: `vocab` in the vocabulary
// section, `special` as metadata "tokenizer", `chat_template` as metadata "chat_template".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "format/vocab.h"

namespace gemlet {

struct TokenizerInfo {
  Vocab vocab;
  // The metadata "tokenizer" object (docs/file-format.md §2):
  // {"model": "gemma4", "bos_id": 2, "eos_id": 1, "pad_id": 0, "unk_id": 3,
  //  "eog_ids": [1, 106, 50], "add_bos": false}
  nlohmann::json special = nlohmann::json::object();
  std::string chat_template;  // Jinja source; empty if the source has none
};

}  // namespace gemlet
