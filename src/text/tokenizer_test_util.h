// Test helpers shared by the tokenizer and chat tests: the real Gemma 4 tokenizer and the
// vectors from ../shared/tokenizer, each loaded once per test binary.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/tokenizer_json.h"
#include "text/tokenizer.h"

namespace gemlet::testing_util {

inline std::string SharedPath(const std::string& rel) {
  return std::string(GEMLET_SHARED_DIR) + "/" + rel;
}

// Aborts the test binary if the ground truth cannot be read: every test needs it.
inline const TokenizerInfo& RealTokenizerInfo() {
  static const TokenizerInfo* info = [] {
    auto r = LoadHfTokenizer(SharedPath("tokenizer/gemma4"));
    if (!r.ok()) {
      std::fprintf(stderr, "cannot load the Gemma 4 tokenizer: %s\n",
                   r.status().ToString().c_str());
      std::abort();
    }
    return new TokenizerInfo(std::move(r).value());
  }();
  return *info;
}

inline const Tokenizer& RealTokenizer() {
  static const Tokenizer* tok = [] {
    const TokenizerInfo& info = RealTokenizerInfo();
    auto r = Tokenizer::Create(info.vocab, info.special);
    if (!r.ok()) {
      std::fprintf(stderr, "cannot build the Gemma 4 tokenizer: %s\n",
                   r.status().ToString().c_str());
      std::abort();
    }
    return new Tokenizer(std::move(r).value());
  }();
  return *tok;
}

inline const nlohmann::json& LoadSharedJson(const std::string& rel) {
  static std::map<std::string, nlohmann::json>* cache = new std::map<std::string, nlohmann::json>();
  auto it = cache->find(rel);
  if (it != cache->end()) return it->second;
  auto text = ReadFileToString(SharedPath(rel));
  if (!text.ok()) {
    std::fprintf(stderr, "cannot read %s: %s\n", rel.c_str(), text.status().ToString().c_str());
    std::abort();
  }
  return (*cache)[rel] = nlohmann::json::parse(*text);
}

inline const nlohmann::json& Vectors() { return LoadSharedJson("tokenizer/vectors.json"); }
inline const nlohmann::json& LlamaCppCases() {
  return LoadSharedJson("tokenizer/external_gemma4_llamacpp_cases.json");
}

inline std::string IdsToString(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  s += ']';
  return s;
}

}  // namespace gemlet::testing_util
