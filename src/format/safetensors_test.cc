#include "format/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "base/half.h"

namespace gemlet {
namespace safetensors_test {

namespace fs = std::filesystem;

std::string Image(const std::string& header, const std::string& data) {
  std::string s(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(s.data(), &n, 8);
  return s + header + data;
}

Result<std::unique_ptr<SafetensorsFile>> Parse(const std::string& image) {
  return SafetensorsFile::FromMemory(reinterpret_cast<const uint8_t*>(image.data()), image.size(),
                                     "m.safetensors");
}

std::string Bf16(const std::vector<float>& v) {
  std::string s(v.size() * 2, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = F32ToBf16(v[i]);
    std::memcpy(&s[2 * i], &h, 2);
  }
  return s;
}

TEST(Safetensors, ParsesTensorsInFileOrder) {
  const std::string header = R"({"__metadata__": {"format": "pt"},
    "z.w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
    "a.scalar": {"dtype": "F32", "shape": [], "data_offsets": [12, 16]},
    "ids": {"dtype": "I64", "shape": [2], "data_offsets": [16, 32]},
    "empty": {"dtype": "F16", "shape": [0, 4], "data_offsets": [32, 32]},
    "odd": {"dtype": "F9_NEW", "shape": [3], "data_offsets": [32, 35]}})";
  float one = 1.0f;
  std::string data = Bf16({1, 2, 3, 4, 5, 6}) + std::string(reinterpret_cast<char*>(&one), 4) +
                     std::string(16, '\0') + "xyz";
  const std::string image = Image(header, data);
  auto r = Parse(image);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SafetensorsFile& f = **r;
  ASSERT_EQ(f.tensors().size(), 5u);
  EXPECT_EQ(f.tensors()[0].name, "z.w");  // file order, not name order
  EXPECT_EQ(f.tensors()[1].name, "a.scalar");
  EXPECT_EQ(f.metadata()["format"], "pt");
  const SafetensorsTensor* w = f.Find("z.w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->element_bytes, 2);
  EXPECT_EQ(w->offset, 8 + header.size());
  uint16_t h;
  std::memcpy(&h, w->data + 10, 2);
  EXPECT_EQ(Bf16ToF32(h), 6.0f);
  EXPECT_EQ(*f.FloatType(*w), TensorType::kBF16);
  const SafetensorsTensor* s = f.Find("a.scalar");
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->numel(), 1);
  EXPECT_EQ(*f.FloatType(*s), TensorType::kF32);
  EXPECT_EQ(f.Find("empty")->numel(), 0);
  // Unknown and non-float dtypes are listed; reading them as floats is the error.
  const SafetensorsTensor* odd = f.Find("odd");
  EXPECT_EQ(odd->element_bytes, 0);
  auto bad = f.FloatType(*f.Find("ids"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m.safetensors"), std::string::npos);
  EXPECT_NE(bad.status().message().find("'ids'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("I64"), std::string::npos);
  EXPECT_FALSE(f.FloatType(*odd).ok());
}

void ExpectError(const std::string& image, const std::string& needle) {
  auto r = Parse(image);
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("m.safetensors"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(Safetensors, MalformedHeaders) {
  const std::string d8(8, '\0');
  ExpectError("abc", "shorter than the 8-byte header length");
  ExpectError(Image("{}", "").substr(0, 9), "runs past the end");
  std::string huge(8, '\0');
  const uint64_t big = uint64_t{1} << 40;
  std::memcpy(huge.data(), &big, 8);
  ExpectError(huge + "{}", "above 100 MiB");
  ExpectError(Image("[1, 2]", ""), "not a JSON object");
  ExpectError(Image("{not json", ""), "not a JSON object");
  ExpectError(Image(R"({"__metadata__": 3})", ""), "\"__metadata__\" is not an object");
  ExpectError(Image(R"({"t": 3})", ""), "tensor 't' is not an object");
  ExpectError(Image(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", d8), "no string \"dtype\"");
  ExpectError(Image(R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})", d8), "no \"shape\" array");
  ExpectError(Image(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", d8), "two-element");
  ExpectError(Image(R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", d8),
              "non-negative integer");
  ExpectError(Image(R"({"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", d8),
              "non-negative integer");
  ExpectError(Image(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 4]}})", d8), "data_offsets");
  ExpectError(Image(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", d8), "reversed");
  // The header lies: the data area is 8 bytes.
  ExpectError(Image(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", d8),
              "lies past the 8-byte data area");
  ExpectError(Image(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", d8),
              "span 8 bytes but F32 × 3 elements need 12");
  ExpectError(
      Image(R"({"t": {"dtype": "BF16", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 8]}})",
            d8),
      "too many elements");
  ExpectError(Image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                        "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                    d8),
              "overlap");
}

TEST(Safetensors, EveryTruncationOfTheOracleHeaderFails) {
  auto full = ReadFileToString(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/model.safetensors");
  ASSERT_TRUE(full.ok());
  ASSERT_TRUE(Parse(*full).ok());
  // Any cut inside the header or the data makes a tensor (or the header) run past the end.
  for (size_t n : {size_t{0}, size_t{7}, size_t{8}, size_t{100}, size_t{20495}, size_t{20496},
                   full->size() / 2, full->size() - 1}) {
    auto r = Parse(full->substr(0, n));
    EXPECT_FALSE(r.ok()) << n;
  }
}

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/st_" + name + "." + std::to_string(::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void Write(const std::string& path, const std::string& data) {
  ASSERT_TRUE(WriteStringToFile(path, data).ok());
}

std::string OneTensor(const std::string& name, float v) {
  return Image(R"({")" + name + R"(": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
               std::string(reinterpret_cast<const char*>(&v), 4));
}

TEST(SafetensorsFolder, SingleFile) {
  const std::string d = TempDir("single");
  Write(d + "/model.safetensors", OneTensor("a", 1.0f));
  auto r = SafetensorsFolder::Open(d);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_NE((*r)->Find("a"), nullptr);
  EXPECT_EQ((*r)->files().size(), 1u);
}

TEST(SafetensorsFolder, ShardsWithIndex) {
  const std::string d = TempDir("sharded");
  Write(d + "/model-00001-of-00002.safetensors", OneTensor("a", 1.0f));
  Write(d + "/model-00002-of-00002.safetensors", OneTensor("b", 2.0f));
  Write(d + "/model.safetensors.index.json",
        R"({"metadata": {"total_size": 8}, "weight_map": {"a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors"}})");
  auto r = SafetensorsFolder::Open(d);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->files().size(), 2u);
  const auto* b = (*r)->Find("b");
  ASSERT_NE(b, nullptr);
  float v;
  std::memcpy(&v, b->tensor->data, 4);
  EXPECT_EQ(v, 2.0f);
  EXPECT_NE(b->file->path().find("00002"), std::string::npos);
}

void ExpectFolderError(const std::string& d, const std::string& needle) {
  auto r = SafetensorsFolder::Open(d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(SafetensorsFolder, BadIndexes) {
  {
    const std::string d = TempDir("missing_shard");
    Write(d + "/model-00001-of-00002.safetensors", OneTensor("a", 1.0f));
    Write(
        d + "/model.safetensors.index.json",
        R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
    ExpectFolderError(d, "shard model-00002-of-00002.safetensors named in weight_map does not exist");
  }
  {
    const std::string d = TempDir("twice");
    Write(d + "/s1.safetensors", OneTensor("a", 1.0f));
    Write(d + "/s2.safetensors", OneTensor("a", 2.0f));
    Write(d + "/model.safetensors.index.json",
          R"({"weight_map": {"a": "s1.safetensors", "x": "s2.safetensors"}})");
    ExpectFolderError(d, "tensor 'a' is in both");
  }
  {
    const std::string d = TempDir("wrong_shard");
    Write(d + "/s1.safetensors", OneTensor("a", 1.0f));
    Write(d + "/s2.safetensors", OneTensor("b", 2.0f));
    Write(d + "/model.safetensors.index.json",
          R"({"weight_map": {"a": "s2.safetensors", "b": "s1.safetensors"}})");
    ExpectFolderError(d, "weight_map puts tensor 'a' in s2.safetensors, which does not hold it");
  }
  {
    const std::string d = TempDir("escape");
    Write(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "../x.safetensors"}})");
    ExpectFolderError(d, "invalid shard");
  }
  {
    const std::string d = TempDir("not_json");
    Write(d + "/model.safetensors.index.json", R"({"weight_map": [)");
    ExpectFolderError(d, "weight_map");
  }
  {
    const std::string d = TempDir("empty");
    ExpectFolderError(d, "no model.safetensors");
  }
}

}  // namespace safetensors_test
}  // namespace gemlet
