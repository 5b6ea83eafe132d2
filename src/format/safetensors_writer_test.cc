#include "format/safetensors_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "base/half.h"
#include "format/safetensors.h"

namespace gemlet {
namespace safetensors_writer_test {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Parses a safetensors file by hand (independently of the writer): header length, JSON, data.
struct Parsed {
  nlohmann::json header;
  std::string data;
  uint64_t json_len = 0;
};
Parsed ParseByHand(const std::string& bytes) {
  Parsed p;
  EXPECT_GE(bytes.size(), 8u);
  for (int i = 7; i >= 0; --i) p.json_len = (p.json_len << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_LE(8 + p.json_len, bytes.size());
  p.header = nlohmann::json::parse(bytes.substr(8, p.json_len));
  p.data = bytes.substr(8 + p.json_len);
  return p;
}

TEST(SafetensorsWriter, WritesHeaderAndDataInPieces) {
  const std::string path = TempPath("pieces.safetensors");
  std::vector<SafetensorsTensorInfo> infos = {
      {"model.a.weight", "BF16", {3, 2}},
      {"model.b", "F32", {1}},
      {"model.c", "F16", {5}},
  };
  auto w = SafetensorsWriter::Create(path, infos);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->data_bytes(), 12u + 4u + 10u);
  EXPECT_EQ((*w)->header_bytes() % 8, 0u);
  EXPECT_EQ((*w)->tensor_bytes(0), 12u);
  EXPECT_EQ((*w)->tensor_bytes(2), 10u);
  EXPECT_FALSE(Exists(path));  // only PATH.tmp until Finish

  std::string expected;
  uint16_t a[6];
  for (int i = 0; i < 6; ++i) a[i] = F32ToBf16(0.5f * static_cast<float>(i) - 1.0f);
  expected.append(reinterpret_cast<const char*>(a), sizeof(a));
  const float b = 3.25f;
  expected.append(reinterpret_cast<const char*>(&b), 4);
  uint16_t c[5];
  for (int i = 0; i < 5; ++i) c[i] = F32ToF16(static_cast<float>(i) * 0.125f);
  expected.append(reinterpret_cast<const char*>(c), sizeof(c));

  // Appends of 5, 7, 1 and the rest bytes: pieces that straddle tensor boundaries.
  EXPECT_EQ((*w)->current_tensor(), 0u);
  ASSERT_TRUE((*w)->Append(expected.data(), 5).ok());
  ASSERT_TRUE((*w)->Append(expected.data() + 5, 7).ok());
  EXPECT_EQ((*w)->current_tensor(), 1u);
  ASSERT_TRUE((*w)->Append(expected.data() + 12, 1).ok());
  ASSERT_TRUE((*w)->Append(expected.data() + 13, expected.size() - 13).ok());
  EXPECT_EQ((*w)->current_tensor(), 3u);
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_TRUE(Exists(path));
  EXPECT_FALSE(Exists(path + ".tmp"));

  const std::string bytes = ReadAll(path);
  ASSERT_EQ(bytes.size(), (*w)->file_bytes());
  Parsed p = ParseByHand(bytes);
  EXPECT_EQ(p.json_len % 8, 0u);
  EXPECT_EQ(p.header["__metadata__"]["format"], "pt");
  EXPECT_EQ(p.header["model.a.weight"]["dtype"], "BF16");
  EXPECT_EQ(p.header["model.a.weight"]["shape"], nlohmann::json({3, 2}));
  EXPECT_EQ(p.header["model.a.weight"]["data_offsets"], nlohmann::json({0, 12}));
  EXPECT_EQ(p.header["model.b"]["data_offsets"], nlohmann::json({12, 16}));
  EXPECT_EQ(p.header["model.c"]["dtype"], "F16");
  EXPECT_EQ(p.header["model.c"]["data_offsets"], nlohmann::json({16, 26}));
  EXPECT_EQ(p.data, expected);
  float b_read;
  std::memcpy(&b_read, p.data.data() + 12, 4);
  EXPECT_EQ(b_read, 3.25f);
  std::remove(path.c_str());
}

TEST(SafetensorsWriter, RoundTripsThroughTheReader) {
  const std::string path = TempPath("roundtrip.safetensors");
  std::vector<uint16_t> w16(4 * 32);
  for (size_t i = 0; i < w16.size(); ++i) w16[i] = F32ToBf16(static_cast<float>(i) / 7.0f - 3.0f);
  const float scalar = 1.25f;
  {
    auto w = SafetensorsWriter::Create(
        path, {{"layers.0.w", "BF16", {4, 32}}, {"layers.0.layer_scalar", "F32", {1}}});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(w16.data(), w16.size() * 2).ok());
    ASSERT_TRUE((*w)->Append(&scalar, 4).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ((*f)->tensors().size(), 2u);
  const SafetensorsTensor* t = (*f)->Find("layers.0.w");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, "BF16");
  EXPECT_EQ(t->shape, (std::vector<int64_t>{4, 32}));
  ASSERT_EQ(t->nbytes, w16.size() * 2);
  EXPECT_EQ(std::memcmp(t->data, w16.data(), t->nbytes), 0);
  const SafetensorsTensor* s = (*f)->Find("layers.0.layer_scalar");
  ASSERT_NE(s, nullptr);
  float s_read;
  std::memcpy(&s_read, s->data, 4);
  EXPECT_EQ(s_read, 1.25f);
  EXPECT_EQ((*f)->metadata()["format"], "pt");
  std::remove(path.c_str());
}

TEST(SafetensorsWriter, ScalarAndEmptyTensorsAndNoMetadata) {
  const std::string path = TempPath("scalar.safetensors");
  auto w = SafetensorsWriter::Create(path, {{"empty", "F32", {0, 4}}, {"s", "F32", {}}, {"z", "I8", {0}}},
                                     nlohmann::json());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->current_tensor(), 1u);  // the empty tensor needs no bytes
  const float s = -7.0f;
  ASSERT_TRUE((*w)->Append(&s, 4).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  Parsed p = ParseByHand(ReadAll(path));
  EXPECT_FALSE(p.header.contains("__metadata__"));
  EXPECT_EQ(p.header["s"]["shape"], nlohmann::json::array());
  EXPECT_EQ(p.header["s"]["data_offsets"], nlohmann::json({0, 4}));
  EXPECT_EQ(p.header["empty"]["data_offsets"], nlohmann::json({0, 0}));
  EXPECT_EQ(p.header["z"]["data_offsets"], nlohmann::json({4, 4}));
  EXPECT_EQ(p.data.size(), 4u);
  std::remove(path.c_str());
}

TEST(SafetensorsWriter, RejectsBadTensorLists) {
  const std::string path = TempPath("bad.safetensors");
  auto dup = SafetensorsWriter::Create(path, {{"a", "F32", {1}}, {"a", "F32", {2}}});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("'a' listed twice"), std::string::npos);
  auto dtype = SafetensorsWriter::Create(path, {{"a", "Q4", {1}}});
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("unknown dtype 'Q4'"), std::string::npos);
  EXPECT_FALSE(SafetensorsWriter::Create(path, {{"a", "F32", {-1}}}).ok());
  EXPECT_FALSE(SafetensorsWriter::Create(path, {{"", "F32", {1}}}).ok());
  EXPECT_FALSE(SafetensorsWriter::Create(path, {{"__metadata__", "F32", {1}}}).ok());
  EXPECT_FALSE(SafetensorsWriter::Create(path, {{"huge", "F64", {int64_t{1} << 40, int64_t{1} << 40}}}).ok());
  EXPECT_FALSE(SafetensorsWriter::Create(path, {{std::string("bad\xff", 4), "F32", {1}}}).ok());
  EXPECT_FALSE(SafetensorsWriter::Create(path, {{"a", "F32", {1}}}, {{"format", 3}}).ok());
  EXPECT_FALSE(Exists(path + ".tmp"));
  EXPECT_FALSE(Exists(path));
}

TEST(SafetensorsWriter, RejectsOverflowAndIncompleteData) {
  const std::string path = TempPath("short.safetensors");
  {
    auto w = SafetensorsWriter::Create(path, {{"a", "F32", {2}}, {"b", "BF16", {3}}});
    ASSERT_TRUE(w.ok());
    const char zeros[32] = {};
    Status over = (*w)->Append(zeros, 15);
    EXPECT_FALSE(over.ok());
    EXPECT_NE(over.message().find("past the end"), std::string::npos);
    ASSERT_TRUE((*w)->Append(zeros, 10).ok());
    Status fin = (*w)->Finish();
    ASSERT_FALSE(fin.ok());
    EXPECT_NE(fin.message().find("tensor 'b' is incomplete (4 bytes missing)"), std::string::npos)
        << fin.message();
    EXPECT_TRUE(Exists(path + ".tmp"));
  }  // the destructor removes the partial file
  EXPECT_FALSE(Exists(path + ".tmp"));
  EXPECT_FALSE(Exists(path));
}

TEST(SafetensorsWriter, ReportsUnwritableDirectory) {
  auto w = SafetensorsWriter::Create("/nonexistent-dir-gemlet/x.safetensors", {{"a", "F32", {1}}});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), ErrorCode::kIo);
  EXPECT_NE(w.status().message().find("/nonexistent-dir-gemlet/x.safetensors.tmp"), std::string::npos);
}

}  // namespace safetensors_writer_test
}  // namespace gemlet
