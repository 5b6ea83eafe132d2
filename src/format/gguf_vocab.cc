#include "format/gguf_vocab.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "format/gemma4_tokens.h"

namespace gemlet {

namespace {

// Optional u32 token id: -1 if absent; an error if present and outside the vocabulary.
Result<int64_t> OptionalId(const GgufFile& g, const char* key, size_t n_tokens) {
  if (!g.Has(key)) return int64_t{-1};
  ASSIGN_OR_RETURN(uint32_t id, g.GetU32(key));
  if (id >= n_tokens) {
    return Corrupt(g.path() + ": " + key + " = " + std::to_string(id) + " is outside the " +
                   std::to_string(n_tokens) + "-token vocabulary");
  }
  return int64_t{id};
}

}  // namespace

Result<TokenizerInfo> TokenizerFromGguf(const GgufFile& g) {
  TokenizerInfo info;
  Vocab& v = info.vocab;
  const std::string& path = g.path();
  std::string model = "llama";
  if (g.Has("tokenizer.ggml.model")) {
    ASSIGN_OR_RETURN(model, g.GetString("tokenizer.ggml.model"));
  }
  ASSIGN_OR_RETURN(v.pieces, g.GetStringArray("tokenizer.ggml.tokens"));
  const size_t n = v.pieces.size();
  if (n == 0) return Corrupt(path + ": tokenizer.ggml.tokens is empty");
  if (n > (size_t{1} << 31)) return Corrupt(path + ": tokenizer.ggml.tokens is too long");
  std::unordered_map<std::string, int32_t> ids;
  ids.reserve(n);
  size_t max_len = 0;
  for (size_t i = 0; i < n; ++i) {
    max_len = std::max(max_len, v.pieces[i].size());
    auto [it, inserted] = ids.emplace(v.pieces[i], static_cast<int32_t>(i));
    if (!inserted) {
      return Corrupt(path + ": tokenizer.ggml.tokens has the piece '" + v.pieces[i] + "' twice (ids " +
                     std::to_string(it->second) + " and " + std::to_string(i) + ")");
    }
  }

  if (g.Has("tokenizer.ggml.scores")) {
    ASSIGN_OR_RETURN(v.scores, g.GetF32Array("tokenizer.ggml.scores"));
    if (v.scores.size() != n) {
      return Corrupt(path + ": tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                     " entries for " + std::to_string(n) + " tokens");
    }
  } else {
    v.scores.assign(n, 0.0f);
  }

  v.types.assign(n, TokenType::kNormal);
  if (g.Has("tokenizer.ggml.token_type")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> types, g.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return Corrupt(path + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                     " entries for " + std::to_string(n) + " tokens");
    }
    for (size_t i = 0; i < n; ++i) {
      if (types[i] == 0) continue;  // LLAMA_TOKEN_TYPE_UNDEFINED: treat as normal
      if (types[i] < 1 || types[i] > 6) {
        return Corrupt(path + ": tokenizer.ggml.token_type[" + std::to_string(i) +
                       "] = " + std::to_string(types[i]) + " is not a token type (1..6)");
      }
      v.types[i] = static_cast<TokenType>(types[i]);
    }
  }

  if (g.Has("tokenizer.ggml.merges")) {
    ASSIGN_OR_RETURN(std::vector<std::string> merges, g.GetStringArray("tokenizer.ggml.merges"));
    v.merges.reserve(merges.size());
    for (size_t m = 0; m < merges.size(); ++m) {
      const std::string& s = merges[m];
      bool found = false;
      // Pieces may hold spaces in other vocabularies: take the first split that names two
      // pieces (only splits whose halves are no longer than the longest piece).
      for (size_t pos = s.find(' ', 1); pos != std::string::npos && pos <= max_len && !found;
           pos = s.find(' ', pos + 1)) {
        if (s.size() - pos - 1 > max_len) continue;
        auto l = ids.find(s.substr(0, pos));
        auto r = ids.find(s.substr(pos + 1));
        if (l != ids.end() && r != ids.end()) {
          v.merges.emplace_back(l->second, r->second);
          found = true;
        }
      }
      if (!found) {
        return Corrupt(path + ": tokenizer.ggml.merges[" + std::to_string(m) + "] '" + s +
                       "' is not two vocabulary pieces separated by a space");
      }
    }
  }

  ASSIGN_OR_RETURN(int64_t bos, OptionalId(g, "tokenizer.ggml.bos_token_id", n));
  ASSIGN_OR_RETURN(int64_t eos, OptionalId(g, "tokenizer.ggml.eos_token_id", n));
  ASSIGN_OR_RETURN(int64_t pad, OptionalId(g, "tokenizer.ggml.padding_token_id", n));
  ASSIGN_OR_RETURN(int64_t unk, OptionalId(g, "tokenizer.ggml.unknown_token_id", n));
  ASSIGN_OR_RETURN(int64_t eot, OptionalId(g, "tokenizer.ggml.eot_token_id", n));
  nlohmann::json eog = nlohmann::json::array();
  auto add_eog = [&](int64_t id) {
    if (id < 0) return;
    for (const auto& e : eog) {
      if (e == id) return;
    }
    eog.push_back(id);
  };
  add_eog(eos);
  add_eog(eot);
  for (std::string_view text : {gemma4::kTurnClose, gemma4::kToolResponseOpen}) {
    auto it = ids.find(std::string(text));
    if (it != ids.end()) add_eog(it->second);
  }
  bool add_bos = false;
  if (model != "gemma4" && g.Has("tokenizer.ggml.add_bos_token")) {
    ASSIGN_OR_RETURN(add_bos, g.GetBool("tokenizer.ggml.add_bos_token"));
  }
  info.special = {{"model", model}, {"bos_id", bos},  {"eos_id", eos},     {"pad_id", pad},
                  {"unk_id", unk},  {"eog_ids", eog}, {"add_bos", add_bos}};
  if (g.Has("tokenizer.chat_template")) {
    ASSIGN_OR_RETURN(info.chat_template, g.GetString("tokenizer.chat_template"));
  }
  return info;
}

}  // namespace gemlet
