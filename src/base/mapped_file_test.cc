#include "base/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace gemlet {
namespace mapped_file_test {

// Resident bytes of the mapping that starts at `p` (/proc/self/smaps), or -1 if not found.
int64_t MappingRss(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's header line
      in = lo == reinterpret_cast<uintptr_t>(p);
      continue;
    }
    long kb = 0;
    if (in && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) return kb * 1024;
  }
  return -1;
}

TEST(MappedFileTest, DropPagesLeavesTheResidentSetAndKeepsTheBytes) {
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  const int64_t n = 64 * page;
  const std::string path = ::testing::TempDir() + "/mapped_file_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (int64_t i = 0; i < n; ++i) out.put(static_cast<char>(i * 13 + i / page));
  }
  auto f = MappedFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const MappedFile& m = **f;
  ASSERT_EQ(m.size(), static_cast<size_t>(n));
  volatile uint8_t sink = 0;
  for (int64_t i = 0; i < n; i += page) sink = sink ^ m.data()[i];  // every page resident
  const int64_t before = MappingRss(m.data());
  ASSERT_EQ(before, n) << "the mapping should be resident after reading every page";

  // Half a page in to 40.5 pages: only the whole pages inside, 1 to 39, leave.
  m.DropPages(static_cast<size_t>(page / 2), static_cast<size_t>(40 * page));
  EXPECT_EQ(MappingRss(m.data()), n - 39 * page);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(m.data()[i], static_cast<uint8_t>(i * 13 + i / page)) << i;  // faulted in again, the same
  }
  EXPECT_EQ(MappingRss(m.data()), n);

  m.DropPages(static_cast<size_t>(n + 10), 5);  // outside: nothing
  EXPECT_EQ(MappingRss(m.data()), n);
  m.DropPages(static_cast<size_t>(page), ~size_t{0});  // clipped to the end
  EXPECT_EQ(MappingRss(m.data()), page);
  std::remove(path.c_str());
}

}  // namespace mapped_file_test
}  // namespace gemlet
