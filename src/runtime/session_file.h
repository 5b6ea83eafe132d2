// Session files: a session's state — its tokens, its KV cache and the position — plus a JSON
// object the caller owns (a conversation's messages), saved so that a long conversation
// resumes without prefilling it again (`gemlet chat` /save and /load).
//
// Layout (little-endian; docs in the README's chat section):
//   "GEMLETSS"  magic, 8 bytes
//   u32 version (kSessionFileVersion), u32 reserved 0
//   u64 model fingerprint (ModelFingerprint), u32 n + n bytes: the model's provenance
//       source_sha256 (may be empty)
//   u64 n + n bytes: the caller's JSON (UTF-8)
//   u64 n_tokens, i32 tokens[n_tokens]            the session's history; position = n_tokens
//   u32 n_layers, then per cached layer:
//     u32 layer, u64 pos0, u64 count, u64 row_floats, f32 k[count·row], f32 v[count·row]
//       (the rows the cache still keeps: every position for full-attention layers, the last
//        sliding_window ones for sliding layers)
//   u64 FNV-1a 64 of every byte before it
// Loading checks everything against the file's length before it allocates, and refuses a file
// made by another model, another version, or one that does not fit the session's limit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace gemlet::runtime {

constexpr uint32_t kSessionFileVersion = 1;

// Identifies the weights a KV state belongs to: FNV-1a 64 over the metadata "config", the
// quantization plan, the provenance source_sha256 and every tensor's name, type, layout and
// shape. Files converted alike from the same checkpoint share it.
uint64_t ModelFingerprint(const GemletFile& file);

// The file's trailing checksum: FNV-1a 64 of every byte before it.
uint64_t SessionFileChecksum(const void* data, size_t n);

// Writes `session`'s state and `extra` to `path` (through a temporary file and a rename, so an
// existing file is replaced only by a complete one).
Status SaveSessionFile(const std::string& path, const Session& session, const nlohmann::json& extra);

// Replaces `session`'s state with the file's and returns its JSON. `check_extra` (optional)
// vets the JSON first. On any error the session is left as it was. Errors name the file and
// what does not match (kCorrupt for a damaged file, kInvalidArgument for a file of another
// model or a too-small context limit).
Result<nlohmann::json> LoadSessionFile(const std::string& path, Session* session,
                                       const std::function<Status(const nlohmann::json&)>& check_extra = nullptr);
// The same from the file's bytes; `name` stands for the file in errors (fuzzing, tests).
Result<nlohmann::json> LoadSessionBytes(const uint8_t* data, size_t size, const std::string& name, Session* session,
                                        const std::function<Status(const nlohmann::json&)>& check_extra = nullptr);

}  // namespace gemlet::runtime
