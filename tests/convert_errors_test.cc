// Malformed inputs to the converter: each gives a one-line error that names the file and the
// problem, and leaves no output file behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "format/gguf.h"
#include "format/gguf_test_util.h"
#include "format/safetensors.h"
#include "tools/convert/convert.h"

namespace gemlet {
namespace convert_errors_test {

namespace fs = std::filesystem;

const std::string kOracle = std::string(GEMLET_SHARED_DIR) + "/oracle/";

struct StEntry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
  nlohmann::json offsets;  // null: computed
};

std::vector<StEntry> ReadEntries(const std::string& path) {
  auto f = SafetensorsFile::Open(path);
  EXPECT_TRUE(f.ok());
  std::vector<StEntry> out;
  for (const auto& t : (*f)->tensors()) {
    out.push_back(
        {t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes), nullptr});
  }
  return out;
}

std::string WriteSafetensors(const std::vector<StEntry>& entries) {
  nlohmann::json h = {{"__metadata__", {{"format", "pt"}}}};
  std::string data;
  for (const auto& e : entries) {
    const uint64_t b = data.size();
    data += e.bytes;
    h[e.name] = {{"dtype", e.dtype},
                 {"shape", e.shape},
                 {"data_offsets", e.offsets.is_null() ? nlohmann::json::array({b, data.size()}) : e.offsets}};
  }
  const std::string header = h.dump();
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

class ConvertErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/convert_errors." + std::to_string(::getpid()) + "." +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/ckpt");
    for (const char* f :
         {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
      fs::copy_file(kOracle + "tiny-e2b/" + f, dir_ + "/ckpt/" + f);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The oracle model.safetensors, changed by `edit`.
  void WriteModel(const std::function<void(std::vector<StEntry>&)>& edit) {
    auto e = ReadEntries(kOracle + "tiny-e2b/model.safetensors");
    edit(e);
    ASSERT_TRUE(WriteStringToFile(dir_ + "/ckpt/model.safetensors", WriteSafetensors(e)).ok());
  }

  // Converts `src` and expects a one-line error containing every needle.
  void ExpectError(const std::string& src, const std::vector<std::string>& needles) {
    convert::ConvertOptions o;
    o.src = src;
    o.out = dir_ + "/out.gemlet";
    o.plan = "keep";
    o.progress = false;
    auto r = convert::Convert(o);
    ASSERT_FALSE(r.ok());
    const std::string& m = r.status().message();
    for (const auto& n : needles) EXPECT_NE(m.find(n), std::string::npos) << "'" << n << "' not in: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_FALSE(fs::exists(o.out));
    EXPECT_FALSE(fs::exists(o.out + ".tmp"));
  }

  std::string dir_;
};

StEntry* Find(std::vector<StEntry>& e, const std::string& name) {
  for (auto& x : e) {
    if (x.name == name) return &x;
  }
  ADD_FAILURE() << name;
  return &e[0];
}

const std::string kPre = "model.language_model.";

TEST_F(ConvertErrors, UnchangedCopyConverts) {
  WriteModel([](std::vector<StEntry>&) {});
  convert::ConvertOptions o;
  o.src = dir_ + "/ckpt";
  o.out = dir_ + "/ok.gemlet";
  o.plan = "keep";
  o.progress = false;
  auto r = convert::Convert(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(ConvertErrors, TruncatedSafetensors) {
  auto full = ReadFileToString(kOracle + "tiny-e2b/model.safetensors");
  ASSERT_TRUE(full.ok());
  ASSERT_TRUE(WriteStringToFile(dir_ + "/ckpt/model.safetensors", full->substr(0, full->size() / 2)).ok());
  ExpectError(dir_ + "/ckpt", {dir_ + "/ckpt/model.safetensors", "lies past the", "truncated"});
}

TEST_F(ConvertErrors, HeaderLiesAboutSize) {
  WriteModel([](auto& e) {
    StEntry* t = Find(e, kPre + "layers.1.mlp.up_proj.weight");
    t->shape = {32, 65};  // 2080 elements, but the offsets span 2048 values
  });
  ExpectError(dir_ + "/ckpt", {"model.safetensors", "layers.1.mlp.up_proj.weight",
                               "span 4096 bytes but BF16 × 2080 elements need 4160"});
}

TEST_F(ConvertErrors, HeaderOffsetsOverlap) {
  WriteModel([](auto& e) {
    // Point norm.weight's offsets into the bytes of the tensor before it.
    size_t start = 0;
    for (auto& x : e) {
      if (x.name == kPre + "norm.weight") {
        x.offsets = nlohmann::json::array({start - 64, start - 64 + x.bytes.size()});
        break;
      }
      start += x.bytes.size();
    }
  });
  ExpectError(dir_ + "/ckpt", {"model.safetensors", "overlap", "norm.weight"});
}

TEST_F(ConvertErrors, OffsetsPastTheData) {
  WriteModel([](auto& e) {
    StEntry* t = &e.back();
    size_t total = 0;
    for (auto& x : e) total += x.bytes.size();
    t->offsets = nlohmann::json::array({total, total + t->bytes.size()});
  });
  ExpectError(dir_ + "/ckpt", {"model.safetensors", "lies past the"});
}

TEST_F(ConvertErrors, UnknownDtypeOfANeededTensor) {
  WriteModel([](auto& e) { Find(e, kPre + "layers.0.self_attn.q_proj.weight")->dtype = "I16"; });
  ExpectError(dir_ + "/ckpt",
              {"model.safetensors", "layers.0.self_attn.q_proj.weight", "dtype I16", "F32, F16 and BF16"});
  WriteModel([](auto& e) { Find(e, kPre + "embed_tokens.weight")->dtype = "Q9_WEIRD"; });
  ExpectError(dir_ + "/ckpt", {"model.safetensors", "embed_tokens.weight", "dtype Q9_WEIRD"});
}

// The vision tower is converted with the text model (model/gemma4_vision_tensors.h), so a
// dtype we cannot read there is an error naming the tensor, as for a text tensor.
TEST_F(ConvertErrors, UnknownDtypeOfAVisionTensor) {
  WriteModel([](auto& e) { Find(e, "model.embed_vision.embedding_projection.weight")->dtype = "I16"; });
  convert::ConvertOptions o;
  o.src = dir_ + "/ckpt";
  o.out = dir_ + "/text.gemlet";
  o.progress = false;
  auto r = convert::Convert(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("embed_vision.embedding_projection.weight"), std::string::npos);
  EXPECT_NE(r.status().message().find("I16"), std::string::npos);
}

TEST_F(ConvertErrors, MissingTensor) {
  WriteModel([](auto& e) {
    e.erase(std::remove_if(e.begin(), e.end(),
                           [](const StEntry& x) { return x.name == kPre + "layers.2.mlp.up_proj.weight"; }),
            e.end());
  });
  ExpectError(dir_ + "/ckpt",
              {dir_ + "/ckpt", "model.language_model.layers.2.mlp.up_proj.weight is missing"});
}

TEST_F(ConvertErrors, ExtraTensor) {
  WriteModel([](auto& e) {
    e.push_back({kPre + "layers.0.self_attn.extra.weight", "BF16", {4}, std::string(8, '\0'), nullptr});
  });
  ExpectError(
      dir_ + "/ckpt",
      {"model.safetensors", "unexpected text tensor model.language_model.layers.0.self_attn.extra.weight"});
  WriteModel([](auto& e) {
    e.push_back({kPre + "layers.7.input_layernorm.weight", "BF16", {64}, std::string(128, '\0'), nullptr});
  });
  ExpectError(
      dir_ + "/ckpt",
      {"model.safetensors", "unexpected text tensor model.language_model.layers.7.input_layernorm.weight"});
}

TEST_F(ConvertErrors, ShapeContradictsConfig) {
  WriteModel([](std::vector<StEntry>&) {});
  auto text = ReadFileToString(dir_ + "/ckpt/config.json");
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  j["text_config"]["intermediate_size"] = 48;
  ASSERT_TRUE(WriteStringToFile(dir_ + "/ckpt/config.json", j.dump()).ok());
  ExpectError(dir_ + "/ckpt",
              {"model.safetensors",
               "layers.0.mlp.gate_proj.weight has shape [32, 64] but the config needs [48, 64]"});
}

TEST_F(ConvertErrors, BadConfig) {
  WriteModel([](std::vector<StEntry>&) {});
  ASSERT_TRUE(
      WriteStringToFile(dir_ + "/ckpt/config.json", R"({"model_type": "llama", "hidden_size": 8})").ok());
  ExpectError(dir_ + "/ckpt", {dir_ + "/ckpt/config.json", "model_type 'llama' is not gemma4"});
  ASSERT_TRUE(WriteStringToFile(dir_ + "/ckpt/config.json", R"({"text_config": {"hidden_size": 8}})").ok());
  ExpectError(dir_ + "/ckpt", {dir_ + "/ckpt/config.json", "vocab_size"});
}

// Replaces the bytes `from` (which must occur once after `after`) in a copy of a GGUF file.
std::string PatchGguf(const std::string& src, const std::string& after, const std::string& from,
                      const std::string& to) {
  std::string s = ReadFileToString(src).value();
  const size_t a = s.find(after);
  EXPECT_NE(a, std::string::npos);
  const size_t p = s.find(from, a);
  EXPECT_NE(p, std::string::npos);
  EXPECT_EQ(from.size(), to.size());
  s.replace(p, from.size(), to);
  return s;
}

TEST_F(ConvertErrors, GgufOfAnotherArchitecture) {
  const std::string path = dir_ + "/llama.gguf";
  ASSERT_TRUE(WriteStringToFile(path, PatchGguf(kOracle + "tiny-e2b/model-q8_0.gguf", "general.architecture",
                                                "gemma4", "llama3"))
                  .ok());
  ExpectError(path, {path, "general.architecture is 'llama3', not gemma4"});
}

TEST_F(ConvertErrors, GgufMissingTensor) {
  const std::string path = dir_ + "/renamed.gguf";
  ASSERT_TRUE(WriteStringToFile(path, PatchGguf(kOracle + "tiny-e2b/model-bf16.gguf", "blk.5.ffn_gate",
                                                "blk.5.ffn_gate", "blk.5.ffn_xxxx"))
                  .ok());
  ExpectError(path, {path, "blk.5.ffn_gate.weight is missing"});
}

// The oracle GGUF re-emitted key by key and tensor by tensor, with `edit` applied on top.
std::string RebuildGguf(const std::string& src, const std::function<void(testing::GgufBuilder&)>& edit) {
  auto g = GgufFile::Open(src);
  EXPECT_TRUE(g.ok());
  testing::GgufBuilder b;
  for (const std::string& k : (*g)->keys()) {
    const GgufValue* v = (*g)->Find(k);
    b.Raw(k, v->type, std::string(reinterpret_cast<const char*>(v->raw), v->raw_size));
  }
  for (const auto& t : (*g)->tensors()) {
    b.Tensor(t.name, std::vector<int64_t>(t.shape.rbegin(), t.shape.rend()), t.ggml_type,
             std::string(reinterpret_cast<const char*>(t.data), t.nbytes));
  }
  edit(b);
  return b.Build();
}

TEST_F(ConvertErrors, GgufRebuiltConvertsWithItsChatTemplate) {
  const std::string path = dir_ + "/rebuilt.gguf";
  ASSERT_TRUE(WriteStringToFile(path, RebuildGguf(kOracle + "tiny-e2b/model-q8_0.gguf",
                                                  [](auto& b) {
                                                    b.Str(
                                                        "tokenizer.chat_template",
                                                        "{{ bos_token }}{% for m in messages %}{% endfor %}");
                                                  }))
                  .ok());
  convert::ConvertOptions o;
  o.src = path;
  o.out = dir_ + "/rebuilt.gemlet";
  o.progress = false;
  ASSERT_TRUE(convert::Convert(o).ok());
  auto g = GemletFile::Open(o.out);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->metadata()["chat_template"], "{{ bos_token }}{% for m in messages %}{% endfor %}");
}

TEST_F(ConvertErrors, GgufChatTemplateNotUtf8) {
  const std::string path = dir_ + "/bad_utf8.gguf";
  ASSERT_TRUE(WriteStringToFile(
                  path, RebuildGguf(kOracle + "tiny-e2b/model-q8_0.gguf",
                                    [](auto& b) { b.Str("tokenizer.chat_template", "ok \xff\xfe bad"); }))
                  .ok());
  ExpectError(path, {path, "not valid UTF-8"});
}

TEST_F(ConvertErrors, GgufExtraTensor) {
  const std::string path = dir_ + "/extra.gguf";
  ASSERT_TRUE(WriteStringToFile(path, RebuildGguf(kOracle + "tiny-e2b/model-bf16.gguf",
                                                  [](auto& b) {
                                                    b.Tensor("blk.0.attn_extra.weight", {4}, 0,
                                                             std::string(16, '\0'));
                                                  }))
                  .ok());
  ExpectError(path, {path, "unexpected tensor blk.0.attn_extra.weight [4]"});
}

TEST_F(ConvertErrors, GgufShapeContradictsConfig) {
  const std::string path = dir_ + "/ff.gguf";
  // Layer 1's MLP declared 64 wide while its tensors are 32: the metadata key is replaced.
  auto g = GgufFile::Open(kOracle + "tiny-e2b/model-bf16.gguf");
  ASSERT_TRUE(g.ok());
  testing::GgufBuilder b;
  for (const std::string& k : (*g)->keys()) {
    const GgufValue* v = (*g)->Find(k);
    if (k == "gemma4.feed_forward_length") {
      b.I32s(k, {48, 48, 48, 48, 96, 96, 96});
    } else {
      b.Raw(k, v->type, std::string(reinterpret_cast<const char*>(v->raw), v->raw_size));
    }
  }
  for (const auto& t : (*g)->tensors()) {
    b.Tensor(t.name, std::vector<int64_t>(t.shape.rbegin(), t.shape.rend()), t.ggml_type,
             std::string(reinterpret_cast<const char*>(t.data), t.nbytes));
  }
  ASSERT_TRUE(WriteStringToFile(path, b.Build()).ok());
  ExpectError(path, {path, "tensor blk.0.ffn_gate.weight has shape [32, 64] but the config needs [48, 64]"});
}

TEST_F(ConvertErrors, GgufCutInHalf) {
  auto full = ReadFileToString(kOracle + "tiny-e4b/model-q4_0.gguf");
  ASSERT_TRUE(full.ok());
  const std::string path = dir_ + "/half.gguf";
  ASSERT_TRUE(WriteStringToFile(path, full->substr(0, full->size() / 2)).ok());
  ExpectError(path, {path, "lies past the end", "truncated"});
}

TEST_F(ConvertErrors, GemletCutInHalf) {
  convert::ConvertOptions o;
  o.src = kOracle + "tiny-e2b";
  o.out = dir_ + "/full.gemlet";
  o.progress = false;
  ASSERT_TRUE(convert::Convert(o).ok());
  auto full = ReadFileToString(o.out);
  ASSERT_TRUE(full.ok());
  const std::string half = dir_ + "/half.gemlet";
  ASSERT_TRUE(WriteStringToFile(half, full->substr(0, full->size() / 2)).ok());
  auto g = GemletFile::Open(half);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find(half), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("truncated"), std::string::npos) << g.status().message();
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos);
}

TEST_F(ConvertErrors, NotACheckpoint) {
  ExpectError(dir_ + "/nothing-here", {dir_ + "/nothing-here", "no such file"});
  ExpectError(kOracle + "tiny-e2b/model.safetensors", {"give the checkpoint folder"});
  ExpectError(kOracle + "tiny-e2b/config.json", {"neither a GGUF file nor"});
  convert::ConvertOptions o;
  o.src = kOracle + "tiny-e2b/model-q8_0.gguf";
  o.out = dir_ + "/x.gemlet";
  o.multimodal_out = dir_ + "/mm.gemlet";
  o.progress = false;
  auto r = convert::Convert(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mmproj"), std::string::npos);
}

// --multimodal writes the vision/audio tensors (0-d ones as [1]) at their source types.
TEST_F(ConvertErrors, MultimodalSideFile) {
  convert::ConvertOptions o;
  o.src = kOracle + "tiny-e2b";
  o.out = dir_ + "/text.gemlet";
  o.multimodal_out = dir_ + "/mm.gemlet";
  o.progress = false;
  auto r = convert::Convert(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto g = GemletFile::Open(o.multimodal_out);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto st = SafetensorsFile::Open(kOracle + "tiny-e2b/model.safetensors");
  ASSERT_TRUE(st.ok());
  size_t n = 0, scalars = 0;
  for (const auto& t : (*st)->tensors()) {
    if (t.name.rfind(kPre, 0) == 0) continue;
    ++n;
    const TensorView* v = (*g)->Find(t.name);
    ASSERT_NE(v, nullptr) << t.name;
    EXPECT_EQ(v->type, TensorType::kBF16);
    ASSERT_EQ(v->nbytes, t.nbytes);
    EXPECT_EQ(std::memcmp(v->data, t.data, t.nbytes), 0) << t.name;
    if (t.shape.empty()) {
      ++scalars;
      EXPECT_EQ(v->shape, std::vector<int64_t>{1});
    }
  }
  EXPECT_EQ((*g)->tensors().size(), n);
  EXPECT_EQ(r->multimodal.size(), n);
  EXPECT_GT(scalars, 0u);
  EXPECT_EQ((*g)->metadata()["config"]["vision_config"]["patch_size"], 4);
}

}  // namespace convert_errors_test
}  // namespace gemlet
