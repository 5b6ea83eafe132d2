// The tokenizer from each place it can come from gives the same ids: tokenizer.json
// (format/tokenizer_json), a GGUF's tokenizer.ggml.* (format/gguf_vocab) and the vocabulary
// stored in a .gemlet (format/gemlet_writer + gemlet_file), run by text/tokenizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "format/gemlet_writer.h"
#include "format/gguf.h"
#include "format/gguf_vocab.h"
#include "format/tokenizer_json.h"
#include "text/tokenizer.h"

namespace gemlet {
namespace tokenizer_sources_test {

using nlohmann::json;

const std::string kShared = GEMLET_SHARED_DIR;

Tokenizer Make(const TokenizerInfo& info) {
  auto t = Tokenizer::Create(info.vocab, info.special);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) std::abort();
  return std::move(t).value();
}

const json& Vectors() {
  static const json* v =
      new json(json::parse(*ReadFileToString(kShared + "/tokenizer/vectors.json")));
  return *v;
}

std::vector<std::string> Texts() {
  std::vector<std::string> texts;
  for (const json& c : Vectors()["cases"]) texts.push_back(c["text"]);
  for (const json& c : Vectors()["chat"]) {
    if (c.contains("prompt")) texts.push_back(c["prompt"]);
  }
  return texts;
}

// The tiny oracle checkpoints ship the same 512-piece vocabulary as tokenizer.json and inside
// every GGUF that llama.cpp made from them.
TEST(TokenizerSources, GgufMatchesTokenizerJson) {
  for (const char* variant : {"tiny-e2b", "tiny-e4b"}) {
    const std::string dir = kShared + "/oracle/" + variant;
    auto hf = LoadHfTokenizer(dir);
    ASSERT_TRUE(hf.ok()) << hf.status().ToString();
    const Tokenizer a = Make(*hf);
    for (const char* file : {"model-bf16.gguf", "model-q8_0.gguf", "model-q4_0.gguf"}) {
      auto g = GgufFile::Open(dir + "/" + file);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      auto info = TokenizerFromGguf(**g);
      ASSERT_TRUE(info.ok()) << info.status().ToString();
      EXPECT_EQ(info->vocab.pieces, hf->vocab.pieces) << variant << "/" << file;
      EXPECT_EQ(info->vocab.merges, hf->vocab.merges) << variant << "/" << file;
      const Tokenizer b = Make(*info);
      EXPECT_EQ(b.eog_ids(), a.eog_ids());
      EXPECT_EQ(b.bos_id(), a.bos_id());
      EXPECT_EQ(b.add_bos(), a.add_bos());
      for (int32_t id = 0; id < a.size(); ++id) {
        EXPECT_EQ(a.IsSpecial(id), b.IsSpecial(id)) << "id " << id << " in " << file;
      }
      for (const std::string& t : Texts()) {
        auto ia = a.Encode(t), ib = b.Encode(t);
        ASSERT_TRUE(ia.ok() && ib.ok());
        EXPECT_EQ(*ia, *ib) << variant << "/" << file << ": " << t;
        EXPECT_EQ(*a.Decode(*ia), *b.Decode(*ib));
      }
    }
  }
}

// The real vocabulary survives the .gemlet file: every vectors.json encode case still passes.
TEST(TokenizerSources, GemletStoredVocabularyPassesTheVectors) {
  auto hf = LoadHfTokenizer(kShared + "/tokenizer/gemma4");
  ASSERT_TRUE(hf.ok()) << hf.status().ToString();
  const std::string path =
      ::testing::TempDir() + "/tok_sources." + std::to_string(::getpid()) + ".gemlet";
  {
    auto w = GemletWriter::Create(path);
    ASSERT_TRUE(w.ok());
    (*w)->SetVocab(hf->vocab);
    (*w)->SetMetadata({{"config", json::object()},
                       {"tokenizer", hf->special},
                       {"chat_template", hf->chat_template}});
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto f = GemletFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto t = Tokenizer::FromGemlet(**f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*f)->metadata()["chat_template"], hf->chat_template);
  for (const json& c : Vectors()["cases"]) {
    auto ids = t->Encode(c["text"].get<std::string>());
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << c["name"];
  }
  EXPECT_EQ(t->eog_ids(), (std::vector<int32_t>{1, 106, 50}));
  std::remove(path.c_str());

  // A file without the "tokenizer" metadata object is refused with its name.
  const std::string bare = path + ".bare";
  {
    auto w = GemletWriter::Create(bare);
    ASSERT_TRUE(w.ok());
    (*w)->SetVocab(hf->vocab);
    (*w)->SetMetadata({{"config", json::object()}});
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto g = GemletFile::Open(bare);
  ASSERT_TRUE(g.ok());
  auto bad = Tokenizer::FromGemlet(**g);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(bare), std::string::npos);
  std::remove(bare.c_str());
}

}  // namespace tokenizer_sources_test
}  // namespace gemlet
