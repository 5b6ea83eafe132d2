#include "format/gguf.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/mapped_file.h"
#include "format/gguf_test_util.h"

namespace gemlet {
namespace gguf_test {

using testing::GgufBuilder;

std::string Floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

Result<std::unique_ptr<GgufFile>> Parse(const std::string& image) {
  return GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "t.gguf");
}

TEST(Gguf, EveryValueType) {
  using B = GgufBuilder;
  GgufBuilder b;
  b.Raw("u8", GgufValueType::kU8, B::Enc<uint8_t>(200))
      .Raw("i8", GgufValueType::kI8, B::Enc<int8_t>(-5))
      .Raw("u16", GgufValueType::kU16, B::Enc<uint16_t>(60000))
      .Raw("i16", GgufValueType::kI16, B::Enc<int16_t>(-30000))
      .U32("u32", 4000000000u)
      .I32("i32", -7)
      .F32("f32", 1.5f)
      .Bool("bool", true)
      .Str("str", "gemma4")
      .U64("u64", uint64_t{1} << 63)
      .Raw("i64", GgufValueType::kI64, B::Enc<int64_t>(INT64_MIN))
      .Raw("f64", GgufValueType::kF64, B::Enc<double>(0.1))
      .I32s("ints", {32, 32, 64})
      .F32s("floats", {1.0f, -2.0f})
      .Bools("bools", {true, false, true})
      .Strings("strings", {"a b", "", "c"});
  // [[1, 2], [3]] as an array of arrays of u32, and an empty array of strings.
  const std::string inner1 = B::EncArray(GgufValueType::kU32, 2, B::Enc<uint32_t>(1) + B::Enc<uint32_t>(2));
  const std::string inner2 = B::EncArray(GgufValueType::kU32, 1, B::Enc<uint32_t>(3));
  b.Raw("nested", GgufValueType::kArray, B::EncArray(GgufValueType::kArray, 2, inner1 + inner2));
  b.Raw("empty", GgufValueType::kArray, B::EncArray(GgufValueType::kString, 0, ""));
  const std::string image = b.Build();
  auto r = Parse(image);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& g = **r;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.keys().size(), 18u);
  EXPECT_EQ(g.keys()[0], "u8");
  EXPECT_EQ(*g.GetU32("u8"), 200u);
  EXPECT_EQ(*g.GetI64("i8"), -5);
  EXPECT_EQ(*g.GetU32("u16"), 60000u);
  EXPECT_EQ(*g.GetI64("i16"), -30000);
  EXPECT_EQ(*g.GetU32("u32"), 4000000000u);
  EXPECT_EQ(*g.GetI64("i32"), -7);
  EXPECT_EQ(*g.GetF32("f32"), 1.5f);
  EXPECT_TRUE(*g.GetBool("bool"));
  EXPECT_EQ(*g.GetString("str"), "gemma4");
  EXPECT_EQ(*g.GetU64("u64"), uint64_t{1} << 63);
  EXPECT_EQ(*g.GetI64("i64"), INT64_MIN);
  EXPECT_EQ(*g.GetF64("f64"), 0.1);
  EXPECT_EQ(*g.GetIntArray("ints"), (std::vector<int64_t>{32, 32, 64}));
  EXPECT_EQ(*g.GetF32Array("floats"), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(*g.GetBoolArray("bools"), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(*g.GetStringArray("strings"), (std::vector<std::string>{"a b", "", "c"}));
  EXPECT_EQ(*g.GetArrayLength("nested"), 2u);
  auto elems = g.ArrayElements(*g.Find("nested"));
  ASSERT_TRUE(elems.ok());
  ASSERT_EQ(elems->size(), 2u);
  EXPECT_EQ((*elems)[0].count, 2u);
  EXPECT_EQ((*elems)[1].count, 1u);
  EXPECT_EQ(g.ValueToJson(*g.Find("nested")), nlohmann::json::parse("[[1,2],[3]]"));
  EXPECT_EQ(g.ValueToJson(*g.Find("strings"), 1), nlohmann::json::parse(R"(["a b", "... 2 more"])"));
  EXPECT_EQ(g.ValueToJson(*g.Find("i64")), nlohmann::json(INT64_MIN));
  EXPECT_TRUE(g.GetStringArray("empty")->empty());
  EXPECT_TRUE(g.tensors().empty());
}

TEST(Gguf, GettersRejectWrongTypesWithTheKeyInTheMessage) {
  GgufBuilder b;
  b.I32("neg", -1).Str("s", "x").F32("f", 2.0f).U64("big", uint64_t{1} << 40).I32s("ints", {1});
  const std::string image = b.Build();
  auto r = Parse(image);
  ASSERT_TRUE(r.ok());
  const GgufFile& g = **r;
  auto e1 = g.GetU32("neg");
  ASSERT_FALSE(e1.ok());
  EXPECT_NE(e1.status().message().find("neg"), std::string::npos);
  EXPECT_FALSE(g.GetU32("s").ok());
  EXPECT_FALSE(g.GetU32("f").ok());
  EXPECT_FALSE(g.GetU32("big").ok());
  EXPECT_EQ(*g.GetU64("big"), uint64_t{1} << 40);
  EXPECT_FALSE(g.GetString("f").ok());
  EXPECT_FALSE(g.GetF64("s").ok());
  EXPECT_FALSE(g.GetBool("s").ok());
  EXPECT_FALSE(g.GetStringArray("ints").ok());
  EXPECT_FALSE(g.GetF32Array("ints").ok());
  auto missing = g.GetU32("gemma4.block_count");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("t.gguf"), std::string::npos);
  EXPECT_NE(missing.status().message().find("gemma4.block_count"), std::string::npos);
}

TEST(Gguf, TensorsShapesOffsetsAlignment) {
  GgufBuilder b;
  b.Alignment(64);
  std::string q8(2 * 34, '\x11');
  b.Tensor("a", {3, 2}, 0, Floats({1, 2, 3, 4, 5, 6}))  // ne {3, 2} -> shape [2, 3]
      .Tensor("b", {32, 2}, 8, q8)
      .Tensor("c", {4}, 99, std::string(16, '\0'));  // an unknown ggml type
  const std::string image = b.Build();
  auto r = Parse(image);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& g = **r;
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.data_offset() % 64, 0u);
  ASSERT_EQ(g.tensors().size(), 3u);
  const GgufTensorInfo* a = g.FindTensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->rows(), 2);
  EXPECT_EQ(a->cols(), 3);
  EXPECT_EQ(a->nbytes, 24u);
  EXPECT_EQ(a->offset, g.data_offset());
  float v[6];
  std::memcpy(v, a->data, 24);
  EXPECT_EQ(v[5], 6.0f);
  const GgufTensorInfo* bq = g.FindTensor("b");
  EXPECT_EQ(bq->type_name(), "Q8_0");
  EXPECT_EQ(bq->nbytes, 68u);
  EXPECT_EQ(bq->offset % 64, 0u);
  EXPECT_EQ(*GgmlToTensorType(bq->ggml_type), TensorType::kQ8);
  EXPECT_EQ(std::memcmp(bq->data, q8.data(), 68), 0);
  const GgufTensorInfo* c = g.FindTensor("c");
  EXPECT_FALSE(c->known_type);
  EXPECT_EQ(c->type_name(), "type 99");
  EXPECT_FALSE(GgmlToTensorType(12).has_value());  // Q4_K has no lossless gemlet type
  EXPECT_EQ(GgmlTypeName(14), "Q6_K");
}

TEST(Gguf, Version2ReadsLikeVersion3) {
  GgufBuilder b(2);
  b.U32("k", 1).Tensor("t", {2}, 0, Floats({1, 2}));
  const std::string image = b.Build();
  auto r = Parse(image);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->version(), 2u);
}

void ExpectError(const std::string& image, const std::string& needle, ErrorCode code = ErrorCode::kCorrupt) {
  auto r = Parse(image);
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("t.gguf"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(Gguf, MalformedFiles) {
  using B = GgufBuilder;
  ExpectError("GGUX" + B::Enc<uint32_t>(3), "bad magic");
  ExpectError(GgufBuilder(1).Build(), "version 1", ErrorCode::kUnsupported);
  ExpectError(GgufBuilder(0x03000000).Build(), "big-endian", ErrorCode::kUnsupported);
  ExpectError(GgufBuilder(7).Build(), "version 7", ErrorCode::kUnsupported);
  ExpectError(GgufBuilder().U32("a", 1).U32("a", 2).Build(), "duplicate metadata key 'a'");
  ExpectError(GgufBuilder().Alignment(48).Build(), "general.alignment 48");
  ExpectError(GgufBuilder().Str("general.alignment", "x").Build(), "general.alignment is not a u32");
  ExpectError(GgufBuilder().Raw("k", static_cast<GgufValueType>(13), "").Build(), "unknown value type 13");
  ExpectError(
      GgufBuilder().Raw("k", GgufValueType::kArray, B::EncArray(GgufValueType::kU32, 1u << 30, "")).Build(),
      "runs past the end");
  ExpectError(GgufBuilder().Raw("k", GgufValueType::kString, B::Enc<uint64_t>(1000) + "abc").Build(),
              "runs past the end");
  // Arrays nested deeper than the limit.
  std::string nested = B::EncArray(GgufValueType::kU8, 0, "");
  for (int i = 0; i < 10; ++i) nested = B::EncArray(GgufValueType::kArray, 1, nested);
  ExpectError(GgufBuilder().Raw("deep", GgufValueType::kArray, nested).Build(), "nested too deeply");
  // Header counts that cannot fit the file.
  ExpectError("GGUF" + B::Enc<uint32_t>(3) + B::Enc<uint64_t>(0) + B::Enc<uint64_t>(uint64_t{1} << 60),
              "metadata entries");
  ExpectError("GGUF" + B::Enc<uint32_t>(3) + B::Enc<uint64_t>(uint64_t{1} << 60) + B::Enc<uint64_t>(0),
              "tensors");
  // Tensors.
  ExpectError(GgufBuilder().Tensor("t", {1, 1, 1, 1, 1}, 0, Floats({1})).Build(), "5 dimensions");
  ExpectError(GgufBuilder().Tensor("t", {-1}, 0, "").Build(), "dimension -1");
  ExpectError(GgufBuilder().Tensor("t", {16}, 8, std::string(34, '\0')).Build(),
              "not a multiple of the Q8_0 block size 32");
  ExpectError(GgufBuilder().Tensor("t", {2}, 0, Floats({1, 2}), 4).Build(),
              "is not a multiple of the alignment 32");
  ExpectError(GgufBuilder().Tensor("t", {8}, 0, Floats({1, 2})).Build(), "lies past the end");
  ExpectError(GgufBuilder().Tensor("t", {2}, 0, Floats({1, 2})).Tensor("t", {2}, 0, Floats({1, 2})).Build(),
              "duplicate tensor 't'");
  ExpectError(
      GgufBuilder().Tensor("a", {16}, 0, Floats(std::vector<float>(16))).Tensor("b", {8}, 0, "", 32).Build(),
      "overlap");
}

// Every truncation of a valid file fails cleanly (no crash, an error naming the file).
TEST(Gguf, EveryTruncationFails) {
  GgufBuilder b;
  b.Str("general.architecture", "gemma4").Strings("tokens", {"a", "b"}).I32s("ff", {1, 2});
  b.Tensor("x", {4}, 0, Floats({1, 2, 3, 4})).Tensor("y", {32}, 2, std::string(18, '\x7'));
  const std::string image = b.Build();
  ASSERT_TRUE(Parse(image).ok());
  for (size_t n = 0; n < image.size(); ++n) {
    auto r = Parse(image.substr(0, n));
    ASSERT_FALSE(r.ok()) << "truncated to " << n << " bytes";
    EXPECT_NE(r.status().message().find("t.gguf"), std::string::npos);
  }
}

TEST(Gguf, OracleFile) {
  const std::string path = std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/model-q4_0.gguf";
  auto r = GgufFile::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& g = **r;
  EXPECT_EQ(*g.GetString("general.architecture"), "gemma4");
  EXPECT_EQ(*g.GetU32("gemma4.block_count"), 7u);
  EXPECT_EQ(*g.GetIntArray("gemma4.feed_forward_length"), (std::vector<int64_t>{32, 32, 32, 32, 64, 64, 64}));
  EXPECT_EQ(*g.GetBoolArray("gemma4.attention.sliding_window_pattern"),
            (std::vector<bool>{true, true, true, false, true, true, false}));
  EXPECT_EQ(*g.GetArrayLength("tokenizer.ggml.tokens"), 512u);
  EXPECT_EQ(g.tensors().size(), 125u);
  const GgufTensorInfo* t = g.FindTensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(t->type_name(), "Q4_0");
  EXPECT_EQ(t->nbytes, 512u * 2 * 18);
  const GgufTensorInfo* rf = g.FindTensor("rope_freqs.weight");
  ASSERT_NE(rf, nullptr);
  float f[32];
  std::memcpy(f, rf->data, sizeof(f));
  EXPECT_EQ(f[7], 1.0f);
  EXPECT_EQ(f[8], 1e30f);
}

}  // namespace gguf_test
}  // namespace gemlet
