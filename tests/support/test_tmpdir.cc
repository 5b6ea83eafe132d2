// Linked into every test binary (cmake/gemlet.cmake, gemlet_test_compile_setup): a fresh
// scratch folder per test process, removed when the process ends.
//
// The tests write their files under ::testing::TempDir() (converted checkpoints, .gemlet files,
// transcripts), which is $TEST_TMPDIR, else $TMPDIR, else /tmp. Before main() this makes
// "<that folder>/gemlet-test.XXXXXX" (mkdtemp) and points TEST_TMPDIR at it, so every test of
// the binary, and every `gemlet` child process a test starts, writes inside it; at exit the
// whole folder goes. Without it each run left its files behind (1.4 GB of /tmp after a day of
// runs). GEMLET_KEEP_TEST_TMPDIR=1 keeps the folder (its path is printed) to look at a failure.
// A process that crashes leaves its folder, with a name that says whose it is.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace gemlet_test_support {

class TestTmpdir {
 public:
  TestTmpdir() : owner_(::getpid()) {
    const std::string base = ::testing::TempDir();  // the folder the tests would use: ends in '/'
    std::string templ = base + "gemlet-test.XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      // The tests then write to the base folder itself, as without this file.
      std::perror(("gemlet tests: cannot make a scratch folder in " + base).c_str());
      return;
    }
    path_ = templ;
    ::setenv("TEST_TMPDIR", path_.c_str(), /*overwrite=*/1);
  }

  ~TestTmpdir() {
    // A forked child that exits (not through exec) must not take its parent's folder.
    if (path_.empty() || ::getpid() != owner_) return;
    const char* keep = std::getenv("GEMLET_KEEP_TEST_TMPDIR");
    if (keep != nullptr && *keep != '\0' && std::string(keep) != "0") {
      std::fprintf(stderr, "gemlet tests: kept the scratch folder %s\n", path_.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  TestTmpdir(const TestTmpdir&) = delete;
  TestTmpdir& operator=(const TestTmpdir&) = delete;

 private:
  pid_t owner_;
  std::string path_;
};

// Constructed before main(); destroyed after every function-local static of the tests (they
// are constructed later), so the tests' own scratch objects clean up first.
TestTmpdir g_test_tmpdir;

}  // namespace gemlet_test_support
