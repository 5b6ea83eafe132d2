#include "tools/cli/verify.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>

#include "base/cpu_features.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "tools/convert/convert.h"
#include "tools/convert/synth.h"

namespace gemlet::cli {

namespace fs = std::filesystem;

bool VerifyReport::pass() const { return first_failure() == nullptr && !checks.empty(); }

const VerifyCheck* VerifyReport::first_failure() const {
  for (const auto& c : checks) {
    if (!c.pass) return &c;
  }
  return nullptr;
}

namespace {

const char* Arch() {
#if defined(__x86_64__)
  return "x86-64";
#elif defined(__aarch64__)
  return "arm64";
#else
  return "generic";
#endif
}

// A temporary folder removed when this goes out of scope.
class TempDir {
 public:
  static Result<TempDir> Make() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/gemlet-verify-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      return IoError("cannot create a temporary folder from " + tmpl + " (set TMPDIR to a writable folder)");
    }
    return TempDir(tmpl);
  }
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

// Logits of `tokens` fed at once (one chunk) and one by one; the largest difference.
VerifyCheck CheckPrefillVsDecode(const std::string& model_path, ops::MatMulMode mode, int threads) {
  VerifyCheck check;
  check.name = std::string("model ") + ops::MatMulModeName(mode) + ": prefill vs token-by-token decode";
  runtime::EngineOptions eo;
  eo.threads = threads;
  eo.mode = mode;
  auto engine = runtime::Engine::Open(model_path, eo);
  if (!engine.ok()) {
    check.detail = "cannot open the synthetic model: " + engine.status().message();
    return check;
  }
  const auto& cfg = (*engine)->config();
  // Longer than the sliding window, so the ring of the sliding layers wraps during decode.
  const int64_t n = std::min<int64_t>(cfg.sliding_window * 2 + 9, cfg.max_position_embeddings);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(cfg.vocab_size - 1));
  std::vector<int32_t> tokens(n);
  for (auto& t : tokens) t = id(rng);
  tokens[0] = (*engine)->bos_id();

  std::vector<float> prefill, decode, step;
  runtime::Session a(**engine, runtime::SessionOptions{n, n});
  if (Status st = a.Prefill(tokens, &prefill, /*all_rows=*/true); !st.ok()) {
    check.detail = "prefill failed: " + st.message();
    return check;
  }
  runtime::Session b(**engine, runtime::SessionOptions{n, 1});
  for (int64_t t = 0; t < n; ++t) {
    if (Status st = b.Decode(tokens[t], &step); !st.ok()) {
      check.detail = "decode failed at position " + std::to_string(t) + ": " + st.message();
      return check;
    }
    decode.insert(decode.end(), step.begin(), step.end());
  }
  constexpr double kTol = 1e-3;
  double worst = 0;
  int64_t worst_at = 0;
  const int64_t V = cfg.vocab_size;
  for (size_t i = 0; i < prefill.size(); ++i) {
    const double d = std::fabs(static_cast<double>(prefill[i]) - decode[i]);
    if (!std::isfinite(prefill[i]) || !std::isfinite(decode[i]) || d > worst || std::isnan(d)) {
      worst = std::isfinite(d) ? d : INFINITY;
      worst_at = static_cast<int64_t>(i);
    }
  }
  check.pass = worst <= kTol;
  std::ostringstream s;
  s << n << " tokens, max |prefill - decode| " << worst;
  if (!check.pass) s << " at position " << worst_at / V << " token " << worst_at % V;
  s << " (limit " << kTol << ")";
  check.detail = s.str();
  return check;
}

void Print(std::FILE* out, const VerifyCheck& c) {
  std::fprintf(out, "  %s  %-44s %s\n", c.pass ? "PASS" : "FAIL", c.name.c_str(), c.detail.c_str());
  std::fflush(out);
}

}  // namespace

Result<VerifyReport> RunVerify(const VerifyOptions& o) {
  const auto& names = VerifyKernelNames();
  if (!o.inject_fault.empty() && std::find(names.begin(), names.end(), o.inject_fault) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return InvalidArgument("GEMLET_VERIFY_INJECT_FAULT='" + o.inject_fault + "' is not a kernel name (" + list + ")");
  }
  const auto& active = kernels::ActiveKernels();
  std::fprintf(o.out, "gemlet %s verify: %s, CPU features: %s, kernels in use: %s\n", GEMLET_VERSION, Arch(),
               CpuFeaturesString(HostCpuFeatures()).c_str(), kernels::TierName(active.tier));
  if (!o.inject_fault.empty()) {
    std::fprintf(o.out, "  (test hook: kernel %s deliberately broken by GEMLET_VERIFY_INJECT_FAULT)\n",
                 o.inject_fault.c_str());
  }
  VerifyReport report;
  for (kernels::Tier t : kernels::AvailableTiers()) {
    report.checks.push_back(VerifyKernelTier(t, o.inject_fault));
    Print(o.out, report.checks.back());
  }

  auto verdict = [&] {
    if (const VerifyCheck* f = report.first_failure()) {
      std::fprintf(o.out, "FAIL: %s: %s\n", f->name.c_str(), f->detail.c_str());
    } else {
      std::fprintf(o.out, "PASS: all %zu checks\n", report.checks.size());
    }
  };
  if (!o.check_model) {
    verdict();
    return report;
  }
  ASSIGN_OR_RETURN(TempDir dir, TempDir::Make());
  convert::SynthOptions so;
  so.preset = "tiny";
  so.out_dir = dir.path() + "/tiny";
  so.threads = 1;
  auto synth = convert::Synthesize(so);
  convert::ConvertOptions co;
  co.src = so.out_dir;
  co.out = dir.path() + "/tiny.gemlet";
  co.progress = false;
  co.threads = 1;
  VerifyCheck build;
  build.name = "tiny synthetic model (synthesize + convert)";
  if (!synth.ok()) {
    build.detail = "synthesize failed: " + synth.status().message();
  } else if (auto conv = convert::Convert(co); !conv.ok()) {
    build.detail = "convert failed: " + conv.status().message();
  } else {
    build.pass = true;
    build.detail = std::to_string(conv->tensors.size()) + " tensors, " + std::to_string(conv->file_bytes) + " bytes";
  }
  report.checks.push_back(build);
  Print(o.out, build);
  if (build.pass) {
    for (ops::MatMulMode mode : {ops::MatMulMode::kExact, ops::MatMulMode::kFast}) {
      report.checks.push_back(CheckPrefillVsDecode(co.out, mode, o.threads));
      Print(o.out, report.checks.back());
    }
  }
  verdict();
  return report;
}

int RunVerifyCommand(Flags& flags) {
  auto threads = flags.Int({"--threads"}, 0);
  if (!threads.ok()) return UsageError("run", threads.status().message());
  if (Status st = flags.Finish(); !st.ok()) return UsageError("run", st.message() + " (--verify takes only --threads)");
  if (!flags.Positional().empty()) return UsageError("run", "unexpected argument '" + flags.Positional()[0] + "'");
  if (*threads < 0 || *threads > 1024) return UsageError("run", "--threads must be in [0, 1024]");
  VerifyOptions o;
  o.threads = static_cast<int>(*threads);
  if (const char* f = std::getenv("GEMLET_VERIFY_INJECT_FAULT")) o.inject_fault = f;
  auto report = RunVerify(o);
  if (!report.ok()) return ReportError("run", report.status());
  return report->pass() ? kExitOk : kExitVerifyFailed;
}

}  // namespace gemlet::cli
