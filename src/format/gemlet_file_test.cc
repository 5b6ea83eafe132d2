#include "format/gemlet_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "base/half.h"
#include "format/file_layout.h"
#include "format/gemlet_writer.h"

namespace gemlet {
namespace gemlet_file_test {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A small file with a float tensor, a q4 tensor and a vocabulary.
std::string WriteSample() {
  const std::string path = TempPath("sample.gemlet");
  auto w = GemletWriter::Create(path);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  std::vector<float> f(6);
  for (int i = 0; i < 6; ++i) f[i] = 0.5f * i;
  EXPECT_TRUE((*w)->AddTensor("a", TensorType::kF32, {2, 3}, f.data(), f.size() * 4).ok());
  std::vector<BlockQ4> q(4);
  for (int b = 0; b < 4; ++b) {
    q[b].d = F32ToF16(0.25f * (b + 1));
    for (int j = 0; j < 16; ++j) q[b].qs[j] = static_cast<uint8_t>(j * 17);
  }
  EXPECT_TRUE((*w)->BeginTensor("b", TensorType::kQ4, {2, 64}).ok());
  EXPECT_TRUE((*w)->AppendTensorData(q.data(), 2 * sizeof(BlockQ4)).ok());
  EXPECT_TRUE((*w)->AppendTensorData(q.data() + 2, 2 * sizeof(BlockQ4)).ok());
  EXPECT_TRUE((*w)->EndTensor().ok());
  Vocab v;
  v.pieces = {"<pad>", "a", "b", "ab"};
  v.scores = {0, -1, -2, -3};
  v.types = {TokenType::kControl, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal};
  v.merges = {{1, 2}};
  (*w)->SetVocab(v);
  (*w)->SetMetadata({{"config", {{"hidden_size", 3}}}, {"chat_template", "x"}});
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

TEST(GemletFile, RoundTrip) {
  const std::string path = WriteSample();
  auto f = GemletFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GemletFile& g = **f;
  EXPECT_EQ(g.metadata()["config"]["hidden_size"], 3);
  ASSERT_EQ(g.tensors().size(), 2u);
  const TensorView* a = g.Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % kGemletAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<const float*>(a->data)[5], 2.5f);
  const TensorView* b = g.Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, TensorType::kQ4);
  EXPECT_EQ(b->nbytes, 4 * sizeof(BlockQ4));
  EXPECT_EQ(b->rows(), 2);
  EXPECT_EQ(F16ToF32(reinterpret_cast<const BlockQ4*>(b->data)[3].d), 1.0f);
  EXPECT_EQ(reinterpret_cast<const BlockQ4*>(b->data)[3].qs[1], 17);
  ASSERT_TRUE(g.has_vocab());
  const Vocab vocab = g.ReadVocab();
  EXPECT_EQ(vocab.pieces[3], "ab");
  EXPECT_EQ(vocab.types[0], TokenType::kControl);
  ASSERT_EQ(vocab.merges.size(), 1u);
  EXPECT_EQ(vocab.merges[0], (std::pair<int32_t, int32_t>{1, 2}));
  EXPECT_EQ(g.Find("missing"), nullptr);
}

TEST(GemletFile, WriterRefusesBadShapes) {
  auto w = GemletWriter::Create(TempPath("bad.gemlet"));
  ASSERT_TRUE(w.ok());
  float x[3] = {};
  EXPECT_FALSE((*w)->AddTensor("q", TensorType::kQ8, {1, 3}, x, sizeof(x)).ok());
  EXPECT_FALSE((*w)->AddTensor("z", TensorType::kF32, {0}, x, 0).ok());
  EXPECT_FALSE((*w)->AddTensor("n", TensorType::kF32, {2}, x, sizeof(x)).ok());
}

// Every truncation of a valid file is rejected with a message that names the file.
TEST(GemletFile, EveryTruncationIsAnError) {
  const std::string bytes = ReadAll(WriteSample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto f = GemletFile::FromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), n, "cut.gemlet");
    ASSERT_FALSE(f.ok()) << "accepted a file cut to " << n << " bytes";
    EXPECT_NE(f.status().message().find("cut.gemlet"), std::string::npos);
  }
}

// Single-byte corruptions anywhere never crash (ASan/UBSan builds check the reads).
TEST(GemletFile, ByteFlipsNeverCrash) {
  const std::string good = ReadAll(WriteSample());
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::string bytes = good;
      bytes[i] = static_cast<char>(bytes[i] ^ x);
      auto f = GemletFile::FromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "f");
      if (f.ok()) {
        for (const auto& t : (*f)->tensors()) {
          ASSERT_LE(t.offset + t.nbytes, bytes.size());
        }
      }
    }
  }
}

TEST(GemletFile, HeaderLies) {
  std::string bytes = ReadAll(WriteSample());
  layout::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  auto open = [&](const layout::FileHeader& hh) {
    std::string b = bytes;
    std::memcpy(b.data(), &hh, sizeof(hh));
    return GemletFile::FromMemory(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "lie.gemlet");
  };
  {
    auto x = h;
    x.magic[0] = 'X';
    auto f = open(x);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.status().message().find("magic"), std::string::npos);
  }
  {
    auto x = h;
    x.version = 99;
    auto f = open(x);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.status().message().find("version 99"), std::string::npos);
  }
  {
    auto x = h;
    x.section_table_offset = ~0ull - 8;
    EXPECT_FALSE(open(x).ok());
  }
  {
    auto x = h;
    x.tensor_data_size = 1 << 30;
    EXPECT_FALSE(open(x).ok());
  }
}

// A vocabulary whose 64-bit blob size makes the section's size sum wrap around (found by
// gemlet_file_fuzz: the reader then took pieces from a blob it never had).
TEST(GemletFile, VocabBlobSizeThatWrapsIsAnError) {
  std::string bytes = ReadAll(WriteSample());
  layout::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  uint64_t vocab_offset = 0;
  for (uint32_t i = 0; i < h.section_count; ++i) {
    layout::SectionEntry e;
    std::memcpy(&e, bytes.data() + h.section_table_offset + i * sizeof(e), sizeof(e));
    if (e.kind == static_cast<uint32_t>(SectionKind::kVocab)) vocab_offset = e.offset;
  }
  ASSERT_NE(vocab_offset, 0u);
  layout::VocabHeader vh;
  std::memcpy(&vh, bytes.data() + vocab_offset, sizeof(vh));
  for (uint64_t blob_size : {~uint64_t{0}, ~uint64_t{0} - 40, uint64_t{1} << 63}) {
    layout::VocabHeader lie = vh;
    lie.blob_size = blob_size;
    std::string b = bytes;
    std::memcpy(b.data() + vocab_offset, &lie, sizeof(lie));
    auto f = GemletFile::FromMemory(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "lie.gemlet");
    ASSERT_FALSE(f.ok()) << blob_size;
    EXPECT_NE(f.status().message().find("vocabulary section truncated"), std::string::npos)
        << f.status().ToString();
  }
}

// A q4 / q8 matrix stored interleaved (layout q4x8 / q8x8, docs/file-format.md §6): the
// reader accepts it, reports the layout, and rejects every truncation of the file.
std::string WriteInterleavedSample(TensorType type, std::vector<int64_t> shape, uint64_t nbytes, TensorLayout layout) {
  const std::string path = TempPath(std::string(TensorLayoutName(layout)) + ".gemlet");
  auto w = GemletWriter::Create(path);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  std::vector<uint8_t> data(nbytes);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  EXPECT_TRUE((*w)->AddTensor("m", type, shape, data.data(), data.size(), layout).ok());
  (*w)->SetMetadata({{"config", {{"hidden_size", 64}}}});
  EXPECT_TRUE((*w)->Finish().ok());
  return path;
}

TEST(GemletFile, AcceptsInterleavedLayouts) {
  struct Case {
    TensorType type;
    TensorLayout layout;
    const char* name;
    uint64_t block_bytes;
  };
  for (const Case& c : {Case{TensorType::kQ4, TensorLayout::kQ4x8, "q4x8", sizeof(BlockQ4)},
                        Case{TensorType::kQ8, TensorLayout::kQ8x8, "q8x8", sizeof(BlockQ8)}}) {
    const std::string path = WriteInterleavedSample(c.type, {16, 64}, 16 * 2 * c.block_bytes, c.layout);
    auto f = GemletFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const TensorView* m = (*f)->Find("m");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->layout, c.layout);
    EXPECT_STREQ(TensorLayoutName(m->layout), c.name);
    EXPECT_EQ(m->rows(), 16);
    EXPECT_EQ(m->nbytes, 32 * c.block_bytes);

    const std::string bytes = ReadAll(path);
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto g = GemletFile::FromMemory(reinterpret_cast<const uint8_t*>(bytes.data()), n, "cut.gemlet");
      ASSERT_FALSE(g.ok()) << "accepted a " << c.name << " file cut to " << n << " bytes";
    }
  }
}

TEST(GemletFile, RejectsInterleavedLayoutsOnWrongTensors) {
  struct Case {
    TensorLayout layout;
    TensorType type;
    std::vector<int64_t> shape;
    uint64_t nbytes;
  };
  const Case cases[] = {
      {TensorLayout::kQ4x8, TensorType::kQ4, {12, 64}, 12 * 2 * sizeof(BlockQ4)},  // rows not a multiple of 8
      {TensorLayout::kQ4x8, TensorType::kQ8, {8, 32}, 8 * sizeof(BlockQ8)},        // not q4
      {TensorLayout::kQ4x8, TensorType::kF32, {8, 4}, 8 * 4 * 4},                  // not q4
      {TensorLayout::kQ4x8, TensorType::kQ4, {256}, 8 * sizeof(BlockQ4)},          // a vector
      {TensorLayout::kQ8x8, TensorType::kQ8, {12, 64}, 12 * 2 * sizeof(BlockQ8)},  // rows not a multiple of 8
      {TensorLayout::kQ8x8, TensorType::kQ4, {8, 32}, 8 * sizeof(BlockQ4)},        // not q8
      {TensorLayout::kQ8x8, TensorType::kF16, {8, 4}, 8 * 4 * 2},                  // not q8
      {TensorLayout::kQ8x8, TensorType::kQ8, {256}, 8 * sizeof(BlockQ8)},          // a vector
  };
  for (const Case& c : cases) {
    auto f = GemletFile::Open(WriteInterleavedSample(c.type, c.shape, c.nbytes, c.layout));
    ASSERT_FALSE(f.ok()) << TensorTypeName(c.type);
    EXPECT_NE(f.status().message().find(TensorLayoutName(c.layout)), std::string::npos) << f.status().ToString();
    EXPECT_NE(f.status().message().find("'m'"), std::string::npos) << f.status().ToString();
  }
}

TEST(GemletFile, MissingFile) {
  auto f = GemletFile::Open("/nonexistent/x.gemlet");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("/nonexistent/x.gemlet"), std::string::npos);
}

}  // namespace gemlet_file_test
}  // namespace gemlet
