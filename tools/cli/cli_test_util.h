// Helpers of the tests that run the `gemlet` binary (GEMLET_BINARY) as users do: a scratch
// folder per test binary, files written there, `gemlet ARGS` with stdout and stderr captured,
// and a tiny random model converted once.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/mapped_file.h"

namespace gemlet::cli::testing_util {

// A scratch folder named after `stem` and the process (callers keep it in a static).
inline std::string MakeScratchDir(const char* stem) {
  const std::string p = ::testing::TempDir() + "/" + stem + "." + std::to_string(::getpid());
  std::filesystem::create_directories(p);
  return p;
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

// `gemlet ARGS <stdin_file` run in `dir` (XDG_CACHE_HOME there, so a demo model is made there),
// stdout and stderr to files; the exit code (-1 if it did not exit).
inline int RunGemlet(const std::string& dir, const std::string& args, std::string* out, std::string* err,
                     const std::string& stdin_file = "/dev/null") {
  const std::string o = dir + "/out", e = dir + "/err";
  const std::string cmd = "XDG_CACHE_HOME=" + dir + "/cache " + std::string(GEMLET_BINARY) + " " + args + " <" +
                          stdin_file + " >" + o + " 2>" + e;
  const int rc = std::system(cmd.c_str());
  auto text = ReadFileToString(o);
  *out = text.ok() ? *text : "";
  if (err) {
    auto etext = ReadFileToString(e);
    *err = etext.ok() ? *etext : "";
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// `gemlet synth --preset tiny --seed SEED` converted into DIR/tiny.gemlet; its path (callers
// keep it in a static, so it is made once).
inline std::string MakeTinyModel(const std::string& dir, int seed) {
  const std::string src = dir + "/tiny-src", model = dir + "/tiny.gemlet";
  std::string out, err;
  EXPECT_EQ(RunGemlet(dir, "synth --preset tiny --seed " + std::to_string(seed) + " -o " + src + " -q", &out, &err),
            0) << err;
  EXPECT_EQ(RunGemlet(dir, "convert " + src + " -o " + model + " --quiet", &out, &err), 0) << err;
  return model;
}

}  // namespace gemlet::cli::testing_util
