// Shared helpers of the oracle tests (tests/oracle_*_test.cc): the cases and golden logits of
// ../shared/oracle, conversion of its checkpoints (once per process, into a temp folder
// removed at exit), running a case through a session, and the exact-tier comparison of
// ../shared/oracle/README.md ("Recommended tolerances").
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/npy.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "tools/convert/convert.h"

namespace gemlet::oracle {

// Runs a shell command (stderr discarded); returns its exit code and stdout.
inline int RunCommand(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Runs a shell command with its stderr in the returned text (the tests that check a command's
// one-line error).
inline int RunBoth(const std::string& cmd, std::string* out) { return RunCommand("{ " + cmd + " 2>&1; }", out); }

// The gemlet binary of this build, for the tests that drive it as a user would.
inline const std::string kGemlet = std::string(GEMLET_BINARY_DIR) + "/tools/cli/gemlet";

// max |a[i] - b[i]| (the sizes must match).
inline double MaxAbs(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

// The image and audio decoders are optional libraries (format/CMakeLists.txt; every build of
// scripts/test.sh has them, the Arm64 one through Debian's :arm64 packages): in a build without
// them, the tests that decode the oracle's files say they were skipped and why.
#if !(GEMLET_HAVE_PNG && GEMLET_HAVE_JPEG)
#define GEMLET_NEED_IMAGE_LIBS() GTEST_SKIP() << "built without libpng/libjpeg: the oracle images cannot be decoded"
#else
#define GEMLET_NEED_IMAGE_LIBS() (void)0
#endif
#if !(GEMLET_HAVE_SNDFILE && GEMLET_HAVE_SOXR)
#define GEMLET_NEED_AUDIO_LIBS() GTEST_SKIP() << "built without libsndfile/libsoxr: the oracle clips cannot be decoded"
#else
#define GEMLET_NEED_AUDIO_LIBS() (void)0
#endif

inline const std::string& OracleDir() {
  static const std::string d = std::string(GEMLET_SHARED_DIR) + "/oracle/";
  return d;
}

// The parsed cases.json of the oracle folder `variant` (e.g. "tiny-e2b-vision"), read once.
inline const nlohmann::json& OracleCases(const std::string& variant) {
  static std::mutex mu;
  static std::map<std::string, nlohmann::json> cache;
  std::lock_guard<std::mutex> lk(mu);
  auto it = cache.find(variant);
  if (it == cache.end()) {
    auto text = ReadFileToString(OracleDir() + variant + "/cases.json");
    GEMLET_CHECK_MSG(text.ok(), "the oracle's cases.json is readable");
    it = cache.emplace(variant, nlohmann::json::parse(*text)).first;
  }
  return it->second;
}

struct Greedy {
  std::vector<int32_t> tokens;
  std::vector<double> gaps;
};

struct Case {
  int id = 0;
  std::vector<int32_t> tokens;
  int64_t row_offset = 0;
  std::map<std::string, Greedy> greedy;  // by source: "ref", "ref-q8_0", ...
};

struct Oracle {
  std::string variant;
  std::vector<Case> cases;
  int64_t rows = 0;
  int64_t window = 0;
};

inline const Oracle& LoadOracle(const std::string& variant) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Oracle>> cache;
  std::lock_guard<std::mutex> lk(mu);
  auto& slot = cache[variant];
  if (!slot) {
    slot = std::make_unique<Oracle>();
    slot->variant = variant;
    auto text = ReadFileToString(OracleDir() + variant + "/cases.json");
    GEMLET_CHECK_MSG(text.ok(), "cases.json of the oracle is readable");
    const auto j = nlohmann::json::parse(*text);
    slot->window = j["summary"]["sliding_window"].get<int64_t>();
    for (const auto& c : j["cases"]) {
      Case k;
      k.id = c["id"].get<int>();
      k.tokens = c["tokens"].get<std::vector<int32_t>>();
      k.row_offset = c["row_offset"].get<int64_t>();
      for (const auto& [src, g] : c["greedy"].items()) {
        k.greedy[src] = Greedy{g["tokens"].get<std::vector<int32_t>>(), g["gaps"].get<std::vector<double>>()};
      }
      slot->rows = std::max<int64_t>(slot->rows, k.row_offset + static_cast<int64_t>(k.tokens.size()));
      slot->cases.push_back(std::move(k));
    }
  }
  return *slot;
}

// logits-<name>.npy of a variant: "ref", "ref-q8_0", "ref-q4_0", "llama-f32", ...
inline const NpyArray& Golden(const std::string& variant, const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, NpyArray> cache;
  std::lock_guard<std::mutex> lk(mu);
  const std::string key = variant + "/" + name;
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto a = ReadNpy(OracleDir() + variant + "/logits-" + name + ".npy");
    GEMLET_CHECK_MSG(a.ok(), "oracle logits are readable");
    it = cache.emplace(key, std::move(*a)).first;
  }
  return it->second;
}

// A folder under the test temp dir, removed when the process exits.
inline const std::string& ScratchDir() {
  struct Dir {
    std::string path;
    Dir() {
      path = ::testing::TempDir() + "/gemlet_oracle." + std::to_string(::getpid());
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

// Converts ../shared/oracle/<variant>/<source> with `plan` (default keep; source
// "model.safetensors" means the checkpoint folder) once per process; returns the .gemlet path.
inline std::string Converted(const std::string& variant, const std::string& source,
                             const std::string& plan = "keep") {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lk(mu);
  const std::string key = variant + "/" + source + "/" + plan;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  convert::ConvertOptions o;
  o.src = source == "model.safetensors" ? OracleDir() + variant : OracleDir() + variant + "/" + source;
  o.out = ScratchDir() + "/" + variant + "-" + source + "-" + plan + ".gemlet";
  o.plan = plan;
  o.progress = false;
  o.threads = 2;
  auto r = convert::Convert(o);
  EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
  if (!r.ok()) return "";
  cache[key] = o.out;
  return o.out;
}

inline std::unique_ptr<runtime::Engine> OpenEngine(const std::string& path, int threads) {
  runtime::EngineOptions eo;
  eo.threads = threads;
  eo.mode = ops::MatMulMode::kExact;
  auto e = runtime::Engine::Open(path, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

// The logits at every position of `tokens` [T, V], fed in chunks of `chunk` (0 = all at once).
inline std::vector<float> RunAllRows(runtime::Session& s, const std::vector<int32_t>& tokens, int64_t chunk) {
  s.set_prefill_chunk(chunk == 0 ? static_cast<int64_t>(tokens.size()) : chunk);
  std::vector<float> logits;
  Status st = s.Prefill(tokens, &logits, /*all_rows=*/true);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return logits;
}

struct Stats {
  double max_abs = 0;
  double sum_abs = 0;
  int64_t values = 0;
  int64_t rows = 0;
  int64_t argmax_checked = 0;  // rows whose golden top-1/top-2 gap exceeds the threshold
  int64_t argmax_equal = 0;
  double mean_abs() const { return values ? sum_abs / values : 0; }
  void Add(const Stats& o) {
    max_abs = std::max(max_abs, o.max_abs);
    sum_abs += o.sum_abs;
    values += o.values;
    rows += o.rows;
    argmax_checked += o.argmax_checked;
    argmax_equal += o.argmax_equal;
  }
  std::string ToString() const {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "max |d| %.2e, mean |d| %.2e, argmax %lld/%lld (of %lld rows)", max_abs,
                  mean_abs(), static_cast<long long>(argmax_equal), static_cast<long long>(argmax_checked),
                  static_cast<long long>(rows));
    return buf;
  }
};

// Top-1 index (ties: lowest) and top-1 minus top-2 gap of a row.
inline std::pair<int64_t, double> TopGap(const float* row, int64_t V) {
  int64_t best = 0;
  for (int64_t i = 1; i < V; ++i) {
    if (row[i] > row[best]) best = i;
  }
  double second = -1e300;
  for (int64_t i = 0; i < V; ++i) {
    if (i != best) second = std::max(second, static_cast<double>(row[i]));
  }
  return {best, row[best] - second};
}

// Compares `rows` logit rows with golden rows; argmax is checked where the golden gap > gap_min.
inline Stats Compare(const float* got, const float* gold, int64_t rows, int64_t V, double gap_min = 2e-3) {
  Stats s;
  s.rows = rows;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < V; ++i) {
      const double d = std::abs(static_cast<double>(got[r * V + i]) - gold[r * V + i]);
      s.max_abs = std::max(s.max_abs, std::isnan(d) ? 1e30 : d);
      s.sum_abs += d;
      ++s.values;
    }
    const auto [gi, gap] = TopGap(gold + r * V, V);
    if (gap > gap_min) {
      ++s.argmax_checked;
      if (TopGap(got + r * V, V).first == gi) ++s.argmax_equal;
    }
  }
  return s;
}

// The exact tier of ../shared/oracle/README.md: max |Δ| ≤ 1e-3, mean ≤ 1e-4, argmax equal
// wherever the golden gap is above 2e-3.
inline void ExpectExactTier(const Stats& s, const std::string& what) {
  EXPECT_LE(s.max_abs, 1e-3) << what << ": " << s.ToString();
  EXPECT_LE(s.mean_abs(), 1e-4) << what << ": " << s.ToString();
  EXPECT_EQ(s.argmax_equal, s.argmax_checked) << what << ": " << s.ToString();
}

inline void Report(const std::string& what, const Stats& s) {
  std::printf("[oracle] %-58s %s\n", what.c_str(), s.ToString().c_str());
  std::fflush(stdout);
}

}  // namespace gemlet::oracle
