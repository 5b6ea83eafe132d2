#include "format/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"

namespace gemlet {
namespace npy_test {

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// A .npy v1.0 image written by hand the way NumPy writes it.
std::string MakeNpy(const std::string& dict, const std::string& payload, uint8_t major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  if (major != 1) out += std::string(2, '\0');
  return out + header + payload;
}

TEST(NpyTest, RoundTripF32) {
  std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 1e-8f, -7.0f};
  const std::string img = EncodeNpyF32(v.data(), {2, 3});
  EXPECT_EQ(img.size() % 64, (6 * 4) % 64) << "header is padded to 64 bytes";
  EXPECT_NE(img.find("'shape': (2, 3)"), std::string::npos);
  auto a = ParseNpy(Bytes(img), img.size(), "x.npy");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->data, v);

  const std::string one = EncodeNpyF32(v.data(), {6});
  EXPECT_NE(one.find("'shape': (6,)"), std::string::npos);
  auto b = ParseNpy(Bytes(one), one.size(), "y.npy");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->shape, (std::vector<int64_t>{6}));
}

TEST(NpyTest, WritesAndReadsFile) {
  const std::string path = ::testing::TempDir() + "/npy_test." + std::to_string(::getpid()) + ".npy";
  std::vector<float> v(4 * 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i) - 2;
  ASSERT_TRUE(WriteNpyF32(path, v.data(), {4, 5}).ok());
  auto a = ReadNpy(path);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(a->data, v);
  ::unlink(path.c_str());
}

TEST(NpyTest, ReadsFloat16AndFloat64AndV2) {
  std::string f16;
  for (float x : {1.0f, -0.5f, 65504.0f}) {
    uint16_t h = F32ToF16(x);
    f16.append(reinterpret_cast<const char*>(&h), 2);
  }
  const std::string img = MakeNpy("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", f16);
  auto a = ParseNpy(Bytes(img), img.size(), "h.npy");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->data, (std::vector<float>{1.0f, -0.5f, 65504.0f}));

  double d[2] = {0.125, -3.0};
  const std::string img8 = MakeNpy("{'shape': (1, 2), 'fortran_order': False, 'descr': '<f8'}",
                                   std::string(reinterpret_cast<const char*>(d), 16), 2);
  auto b = ParseNpy(Bytes(img8), img8.size(), "d.npy");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(b->data, (std::vector<float>{0.125f, -3.0f}));
}

// The oracle's golden files read with the expected shapes (float32 ref, float16 llama).
TEST(NpyTest, ReadsOracleFiles) {
  const std::string dir = std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/";
  auto ref = ReadNpy(dir + "logits-ref.npy");
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(ref->shape, (std::vector<int64_t>{59, 512}));
  auto llama = ReadNpy(dir + "logits-llama-f32.npy");
  ASSERT_TRUE(llama.ok()) << llama.status().ToString();
  EXPECT_EQ(llama->shape, (std::vector<int64_t>{59, 512}));
  // The two references agree to ~1e-2 (cases.json agreement); a decoding slip would not.
  double max_abs = 0;
  for (size_t i = 0; i < ref->data.size(); ++i) {
    max_abs = std::max(max_abs, static_cast<double>(std::abs(ref->data[i] - llama->data[i])));
  }
  EXPECT_LT(max_abs, 0.05);
  EXPECT_GT(max_abs, 0.0);
}

TEST(NpyTest, ReadsTokenIds) {
  int32_t w[3] = {2, 105, 511};
  std::string p4(reinterpret_cast<const char*>(w), sizeof(w));
  auto a = ParseNpyIds(Bytes(MakeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", p4)),
                       MakeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", p4).size(), "a.npy");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, (std::vector<int32_t>{2, 105, 511}));
  int64_t q[2] = {7, 262143};
  const std::string i8 =
      MakeNpy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", std::string(reinterpret_cast<const char*>(q), 16));
  auto b = ParseNpyIds(Bytes(i8), i8.size(), "b.npy");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b, (std::vector<int32_t>{7, 262143}));
  // The oracle's long prompt: 32768 int32 ids, <bos> first and nowhere else.
  auto ids = ReadNpyIds(std::string(GEMLET_SHARED_DIR) + "/oracle/long/tokens-e2b-32k.npy");
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  ASSERT_EQ(ids->size(), 32768u);
  EXPECT_EQ((*ids)[0], 2);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 2), 1);
  auto expect_error = [](const std::string& img, const std::string& needle) {
    auto r = ParseNpyIds(Bytes(img), img.size(), "bad.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("bad.npy"), std::string::npos);
  };
  expect_error(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd"), "int32");
  expect_error(MakeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1), }", "abcd"), "one-dimensional");
  expect_error(MakeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", "abcd"), "shape needs");
  expect_error(MakeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", "\xff\xff\xff\xff"),
               "not a valid id");
  const std::string good = MakeNpy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", p4);
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(ParseNpyIds(Bytes(good), n, "t.npy").ok()) << n;
}

TEST(NpyTest, RejectsMalformed) {
  const std::string good = EncodeNpyF32(std::vector<float>(6, 1.0f).data(), {2, 3});
  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ParseNpy(Bytes(good), n, "t.npy").ok()) << "truncated to " << n;
  }
  auto expect_error = [](const std::string& img, const std::string& needle) {
    auto r = ParseNpy(Bytes(img), img.size(), "bad.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("bad.npy"), std::string::npos);
  };
  expect_error("NOTNUMPY" + std::string(100, ' '), "magic");
  expect_error(MakeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "abcd"), "dtype");
  expect_error(MakeNpy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", "abcdefgh"), "dtype");
  expect_error(MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", "abcd"), "Fortran");
  expect_error(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }", "abcd"),
               "shape needs");
  expect_error(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, "
                       "99999999999), }",
                       "abcd"),
               "overflow");
  // An empty array (a zero dimension) whose other dimensions multiply past int64_t: numel()
  // multiplies in order, so the leading product must fit (npy_fuzz's crash input).
  expect_error(
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (709551615, 60100, 5, 51615, 0), }", ""),
      "overflow");
  const std::string big_empty =
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 0), }", "");
  auto empty = ParseNpy(Bytes(big_empty), big_empty.size(), "empty.npy");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();  // 2^62 × 0: fits, empty
  EXPECT_EQ(empty->numel(), 0);
  EXPECT_TRUE(empty->data.empty());
  expect_error(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }", "abcd"), "non-integer");
  expect_error(MakeNpy("{'descr': '<f4', 'fortran_order': False}", "abcd"), "lacks");
  expect_error(MakeNpy("{'descr': '<f4", "abcd"), "unterminated");
}

}  // namespace npy_test
}  // namespace gemlet
