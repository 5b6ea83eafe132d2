#include "format/mapped_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

namespace gemlet {
namespace mapped_reader_test {

// A reader of files that start with "OK" and say how many bytes follow in the next byte.
class ToyReader : public MappedReader<ToyReader> {
 public:
  int payload() const { return payload_; }

 private:
  friend class MappedReader<ToyReader>;
  ToyReader() = default;
  Status Parse() {
    if (size_ < 3 || std::memcmp(data_, "OK", 2) != 0) return Corrupt(name_ + ": not a toy file");
    payload_ = data_[2];
    if (size_ != 3u + payload_) return Corrupt(name_ + ": the size byte says " + std::to_string(payload_));
    return Status::Ok();
  }
  int payload_ = 0;
};

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(MappedReader, OpenMapsAndParsesTheFile) {
  const std::string path = WriteFile("toy-good.bin", std::string("OK\x02xy", 5));
  auto r = ToyReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->path(), path);
  EXPECT_EQ((*r)->size(), 5u);
  ASSERT_NE((*r)->mapping(), nullptr);
  EXPECT_EQ((*r)->base(), (*r)->mapping()->data());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*r)->base()) + 3, 2), "xy");
  EXPECT_EQ((*r)->payload(), 2);
}

TEST(MappedReader, FromMemoryReadsTheCallersBytesInPlace) {
  static const uint8_t kBytes[] = {'O', 'K', 1, 'z'};
  auto r = ToyReader::FromMemory(kBytes, sizeof(kBytes), "in memory");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->path(), "in memory");
  EXPECT_EQ((*r)->base(), kBytes);
  EXPECT_EQ((*r)->mapping(), nullptr);
  EXPECT_EQ((*r)->payload(), 1);
}

TEST(MappedReader, ParseErrorsComeBackNamingTheFile) {
  const std::string path = WriteFile("toy-bad.bin", "OK\x05");
  auto r = ToyReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": the size byte says 5");
  static const uint8_t kBad[] = {'N', 'O', 0};
  auto m = ToyReader::FromMemory(kBad, sizeof(kBad), "buffer");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "buffer: not a toy file");
}

TEST(MappedReader, AMissingFileIsAnErrorNamingIt) {
  const std::string path = ::testing::TempDir() + "/no-such-toy.bin";
  auto r = ToyReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no-such-toy.bin"), std::string::npos) << r.status().message();
}

TEST(MappedReader, AnEmptyFileReachesParseWithNoBytes) {
  auto r = ToyReader::Open(WriteFile("toy-empty.bin", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a toy file"), std::string::npos) << r.status().message();
}

}  // namespace mapped_reader_test
}  // namespace gemlet
