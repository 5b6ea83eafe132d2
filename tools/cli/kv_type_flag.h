// --kv-type of run, chat, bench, serve, logits and perplexity: the element type of the
// sessions' KV caches (runtime::EngineOptions::kv_type; runtime/kv_cache.h), for every layer
// or per layer kind:
//   --kv-type q8                     every layer
//   --kv-type full=q8,sliding=f16    the full-attention layers and the sliding-window layers
//   --kv-type full=q8                one kind; the other keeps the default
#pragma once

#include <optional>
#include <string>

#include "base/tensor_type.h"
#include "runtime/engine.h"

namespace gemlet::cli {

// One element type: "f32", "f16" or "q8". False for anything else.
inline bool ParseOneKvType(const std::string& s, std::optional<TensorType>* out) {
  if (s == "f32") {
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

// The flag's value into the engine options: "" (not given: the engine's default, f16 in the
// fast path and f32 with --exact), "T", or "full=T,sliding=T" (either part, in either order).
// False for anything else.
inline bool ParseKvType(const std::string& s, runtime::EngineOptions* eo) {
  eo->kv_type = eo->kv_type_full = eo->kv_type_sliding = std::nullopt;
  if (s.empty()) return true;
  if (s.find('=') == std::string::npos) return ParseOneKvType(s, &eo->kv_type);
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    const std::string part = s.substr(b, e - b);
    const size_t eq = part.find('=');
    if (eq == std::string::npos) return false;
    const std::string kind = part.substr(0, eq), type = part.substr(eq + 1);
    std::optional<TensorType>* slot = kind == "full" ? &eo->kv_type_full : kind == "sliding" ? &eo->kv_type_sliding : nullptr;
    if (slot == nullptr || slot->has_value() || !ParseOneKvType(type, slot)) return false;
    b = e + 1;
  }
  return true;
}

// Copies the KV types the flag set into `to`.
inline void SetKvTypes(const runtime::EngineOptions& from, runtime::EngineOptions* to) {
  to->kv_type = from.kv_type;
  to->kv_type_full = from.kv_type_full;
  to->kv_type_sliding = from.kv_type_sliding;
}

// "f16", or "full=q8,sliding=f16" when the kinds differ (bench's rows, stats).
inline std::string KvTypesName(const runtime::Engine& e) {
  if (e.kv_type() == e.kv_type_sliding()) return TensorTypeName(e.kv_type());
  return std::string("full=") + TensorTypeName(e.kv_type()) + ",sliding=" + TensorTypeName(e.kv_type_sliding());
}

inline std::string KvTypeError(const std::string& s) {
  return "--kv-type must be f32, f16 or q8, or per layer kind full=T,sliding=T (e.g. full=q8,sliding=f16), got '" +
         s + "'";
}

}  // namespace gemlet::cli
