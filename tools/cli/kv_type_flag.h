// --kv-type f32|f16|q8 of run, chat, bench, serve, logits and perplexity: the element type
// of the sessions' KV caches (runtime::EngineOptions::kv_type; runtime/kv_cache.h).
#pragma once

#include <optional>
#include <string>

#include "base/tensor_type.h"

namespace gemlet::cli {

// The flag's value: "" (not given: the engine's default, f16 in the fast path and f32 with
// --exact), "f32", "f16" or "q8". False for anything else.
inline bool ParseKvType(const std::string& s, std::optional<TensorType>* out) {
  if (s.empty()) {
    *out = std::nullopt;
  } else if (s == "f32") {
    *out = TensorType::kF32;
  } else if (s == "f16") {
    *out = TensorType::kF16;
  } else if (s == "q8") {
    *out = TensorType::kQ8;
  } else {
    return false;
  }
  return true;
}

inline std::string KvTypeError(const std::string& s) { return "--kv-type must be f32, f16 or q8, got '" + s + "'"; }

}  // namespace gemlet::cli
