#include "tools/convert/tensor_stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/half.h"
#include "format/gemlet_file.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"

namespace gemlet::convert {
namespace tensor_stream_test {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/ts_" + name + "." + std::to_string(::getpid());
}

// A BF16 source tensor over a buffer the test owns (not a mapping: pages are never dropped).
SourceTensor Bf16Source(std::vector<uint16_t>& buf, int64_t rows, int64_t cols) {
  buf.resize(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = F32ToBf16(std::sin(0.001f * static_cast<float>(i)) * 3.0f);
  SourceTensor s;
  s.source_name.assign(1, 'w');
  s.type = SourceType::kBF16;
  s.shape = {rows, cols};
  s.data = reinterpret_cast<const uint8_t*>(buf.data());
  s.nbytes = buf.size() * 2;
  return s;
}

// A tensor of several chunks through each target type, read back and compared with the
// reference encoders applied to the whole tensor at once; with a row count that is a multiple
// of 8 the q4 / q8 tensors are interleaved chunk by chunk, otherwise row-major.
void StreamEveryTargetType(int64_t rows, int64_t cols) {
  std::vector<uint16_t> buf;
  const SourceTensor src = Bf16Source(buf, rows, cols);
  std::vector<float> x(buf.size());
  for (size_t i = 0; i < buf.size(); ++i) x[i] = Bf16ToF32(buf[i]);
  const std::string path = TempPath("all" + std::to_string(rows) + ".gemlet");
  ThreadPool pool(2);
  {
    auto w = GemletWriter::Create(path);
    ASSERT_TRUE(w.ok());
    uint64_t done = 0;
    for (TensorType t :
         {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8, TensorType::kQ4}) {
      ASSERT_TRUE(StreamTensor(**w, TensorTypeName(t), {rows, cols}, src, t, pool, [&](uint64_t b) {
                    done += b;
                  }).ok());
    }
    EXPECT_EQ(done, 5 * src.nbytes);
    (*w)->SetMetadata({{"config", nlohmann::json::object()}});
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto g = GemletFile::Open(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const TensorView* f32 = (*g)->Find("f32");
  EXPECT_EQ(std::memcmp(f32->data, x.data(), x.size() * 4), 0);
  const TensorView* bf16 = (*g)->Find("bf16");
  EXPECT_EQ(std::memcmp(bf16->data, buf.data(), buf.size() * 2), 0);  // lossless copy
  const TensorView* f16 = (*g)->Find("f16");
  for (size_t i = 0; i < x.size(); i += 997) {
    uint16_t h;
    std::memcpy(&h, f16->data + 2 * i, 2);
    EXPECT_EQ(h, F32ToF16(x[i]));
  }
  // q4 / q8 matrices of 8k rows are stored interleaved (kQ4x8 / kQ8x8): the same blocks.
  std::vector<uint8_t> buf_q8, buf_q4;
  std::vector<BlockQ8> q8(x.size() / 32);
  kernels::QuantizeRowQ8Ref(x.data(), q8.data(), static_cast<int64_t>(x.size()));
  const TensorView* tq8 = (*g)->Find("q8");
  EXPECT_EQ(tq8->layout, rows % 8 == 0 ? TensorLayout::kQ8x8 : TensorLayout::kRowMajor);
  EXPECT_EQ(std::memcmp(kernels::RowMajorBytes(tq8->data, tq8->type, tq8->layout, tq8->rows(), tq8->cols(), &buf_q8),
                        q8.data(), q8.size() * sizeof(BlockQ8)),
            0);
  std::vector<BlockQ4> q4(x.size() / 32);
  kernels::QuantizeRowQ4Ref(x.data(), q4.data(), static_cast<int64_t>(x.size()));
  const TensorView* tq4 = (*g)->Find("q4");
  EXPECT_EQ(tq4->layout, rows % 8 == 0 ? TensorLayout::kQ4x8 : TensorLayout::kRowMajor);
  EXPECT_EQ(std::memcmp(kernels::RowMajorBytes(tq4->data, tq4->type, tq4->layout, tq4->rows(), tq4->cols(), &buf_q4),
                        q4.data(), q4.size() * sizeof(BlockQ4)),
            0);
  g->reset();  // unmapped before the file goes
  std::remove(path.c_str());
}

TEST(TensorStream, EveryTargetTypeAcrossChunks) {
  const int64_t cols = 2048, rows = static_cast<int64_t>(kChunkBytes / (cols * 4)) * 2;  // 3 chunks
  StreamEveryTargetType(rows + 3, cols);                                                  // row-major
  StreamEveryTargetType(rows + 8, cols);                                                  // interleaved
}

TEST(TensorStream, RowsThatDoNotFillBlocksAreAnError) {
  std::vector<uint16_t> buf;
  const SourceTensor src = Bf16Source(buf, 2, 48);
  auto w = GemletWriter::Create(TempPath("bad.gemlet"));
  ASSERT_TRUE(w.ok());
  ThreadPool pool(1);
  Status st = StreamTensor(**w, "blk.0.x", {2, 48}, src, TensorType::kQ4, pool, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("blk.0.x"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("q4"), std::string::npos) << st.message();
}

// The same result for any thread count.
TEST(TensorStream, ThreadCountDoesNotChangeBytes) {
  std::vector<uint16_t> buf;
  const SourceTensor src = Bf16Source(buf, 300, 256);
  std::string images[2];
  for (int i = 0; i < 2; ++i) {
    const std::string path = TempPath("threads" + std::to_string(i));
    ThreadPool pool(i == 0 ? 1 : 2);
    auto w = GemletWriter::Create(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(StreamTensor(**w, "t", {300, 256}, src, TensorType::kQ4, pool, nullptr).ok());
    (*w)->SetMetadata({{"config", nlohmann::json::object()}});
    ASSERT_TRUE((*w)->Finish().ok());
    images[i] = ReadFileToString(path).value();
  }
  EXPECT_EQ(images[0], images[1]);
}

}  // namespace tensor_stream_test
}  // namespace gemlet::convert
