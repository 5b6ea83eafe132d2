// Opens a Hugging Face Gemma 4 checkpoint folder for conversion: config.json (a nested
// "text_config" or a flat text config), the safetensors weights (one file or index + shards),
// and, through format/tokenizer_json.h, the tokenizer (tokenizer.json, tokenizer_config.json,
// generation_config.json) and the chat template (chat_template.jinja, else
// tokenizer_config.json's "chat_template").
#pragma once

#include <string>

#include "base/status.h"
#include "tools/convert/source.h"

namespace gemlet::convert {

// Every tensor of ExpectedTensors(config) must be present with exactly the expected shape and a
// float dtype (F32/F16/BF16); a text tensor that is neither expected nor skipped by
// model::IsSkippedHfTensor is an error, so are tokenizer pieces beyond vocab_size. Vision and
// audio tensors go to Checkpoint::multimodal.
Result<Checkpoint> LoadHfCheckpoint(const std::string& folder);

// The text config of a config.json object: its "text_config" if present, else the object.
// An error if model_type names another architecture.
Result<nlohmann::json> HfTextConfig(const nlohmann::json& config_json, const std::string& where);

}  // namespace gemlet::convert
