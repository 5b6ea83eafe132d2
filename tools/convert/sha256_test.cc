#include "tools/convert/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace gemlet::convert {
namespace sha256_test {

// FIPS 180-4 / NIST example vectors.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnop"
                      "qrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Padding edge cases (55, 56, 63, 64 bytes) agree however the input is split into Update calls.
TEST(Sha256, SplitUpdatesAgree) {
  for (size_t len : {size_t{55}, size_t{56}, size_t{63}, size_t{64}, size_t{65}, size_t{200}}) {
    std::string s(len, '\0');
    for (size_t i = 0; i < len; ++i) s[i] = static_cast<char>(i * 7 + 1);
    const std::string whole = Sha256Hex(s);
    for (size_t cut = 0; cut <= len; ++cut) {
      Sha256 h;
      h.Update(s.data(), cut);
      h.Update(s.data() + cut, len - cut);
      EXPECT_EQ(h.FinishHex(), whole) << len << " " << cut;
    }
  }
  // Reset makes the object reusable.
  Sha256 h;
  h.Update("x", 1);
  h.FinishHex();
  h.Reset();
  h.Update("abc", 3);
  EXPECT_EQ(h.FinishHex(), Sha256Hex("abc"));
}

// The CPU's SHA instructions (when present) and the portable code agree on every length,
// including the known vectors.
TEST(Sha256, HardwareAndPortableAgree) {
  std::printf("hardware SHA-256: %s\n", Sha256::HardwareAccelerated() ? "yes" : "no (portable only)");
  std::string data(5000, '\0');
  uint32_t x = 12345;
  for (char& c : data) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
  for (size_t len = 0; len <= data.size(); len += (len < 300 ? 1 : 97)) {
    const std::string_view v(data.data(), len);
    Sha256::force_portable = true;
    const std::string portable = Sha256Hex(v);
    Sha256::force_portable = false;
    ASSERT_EQ(Sha256Hex(v), portable) << len;
  }
  Sha256::force_portable = true;
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256::force_portable = false;
}

TEST(Sha256, FileMatchesCasesJson) {
  const std::string dir = std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e4b/";
  auto cases = ReadFileToString(dir + "cases.json");
  ASSERT_TRUE(cases.ok());
  const auto files = nlohmann::json::parse(*cases)["files"];
  for (const char* f : {"model.safetensors", "model-q4_0.gguf", "tokenizer.json"}) {
    auto h = Sha256File(dir + f);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(*h, files[f]["sha256"]) << f;
  }
  auto missing = Sha256File(dir + "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  std::atomic<bool> cancel{true};
  EXPECT_EQ(Sha256File(dir + "model.safetensors", &cancel).status().code(), ErrorCode::kCancelled);
}

}  // namespace sha256_test
}  // namespace gemlet::convert
