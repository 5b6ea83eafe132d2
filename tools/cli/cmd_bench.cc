// gemlet bench: prefill and decode throughput, time to first token, load time and peak RSS
// of a model, with llama-bench's familiar flags (-p, -n, -d, -r, -t).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/kernels.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "tools/cli/bench_speculative.h"
#include "tools/cli/command.h"
#include "tools/cli/draft_flags.h"
#include "tools/cli/kv_type_flag.h"
#include "tools/cli/read_bandwidth.h"

namespace gemlet::cli {
namespace cmd_bench {

constexpr char kUsage[] =
    R"(usage: gemlet bench -m MODEL.gemlet [-p LIST] [-n LIST] [-d LIST] [-r N] [-t LIST]
                    [--decode-threads N] [--preset litert] [--json] [--exact] [-ub N]
                    [--kv-type T|full=T,sliding=T] [--bandwidth-mib N] [--no-warmup]
       gemlet bench -m MODEL.gemlet [--drafter FILE] --draft-p LIST [--draft M] [--draft-max K]
                    [--draft-fixed] [-p N] [-n N] [-r N] [-t N] [--json]

Measures a model on this machine with random token ids (the numbers do not depend on the
text): for each thread count, context depth and size,
  ppN  prefill of N tokens (one forward pass per -ub tokens), tok/s and time to first token
       (the prefill's wall time up to the last token's logits);
  tgN  N decode steps, one token each, tok/s;
each the median of -r repetitions in a fresh session (the depth's tokens are prefilled
first, untimed; from depth 4096 on once per depth, each repetition then running in a fork
of that session, a copy of its KV cache, so the peak resident set counts that KV twice),
taken in turns across the tests (the first repetition of every test, then the second, ...)
so that a machine whose speed drifts weighs on every test alike. An untimed
warm-up run comes first. Also reports the load time (mapping the file, binding the weights),
the process's peak resident set (VmHWM), which includes the touched pages of the mapping,
and the process CPU time of each test (cpu s; on a busy machine, tokens ÷ (cpu s ÷ threads)
bounds what free cores would do, though it also counts the thread pool's spin-waits). Right
before and after each repetition of a decode test it measures the memory's read bandwidth
with the decode threads (a 1 GiB read; the test's figure is the mean): a decode step reads
every weight but the embedding tables once, so bytes per step ÷ bandwidth is its ceiling,
and each tgN row says how close it came ("of bound").

flags:
  -m, --model FILE   a .gemlet model
  -p LIST            prompt sizes, comma-separated (default 512; 0 skips prefill tests)
  -n LIST            generation lengths (default 128; 0 skips decode tests)
  -d LIST            context depths before each test (default 0)
  -r N               repetitions, the median is reported (default 3)
  -t LIST            thread counts (default: all cores)
  --decode-threads N threads of the decode steps (default: as -t; prefill keeps -t)
  -ub N              tokens per prefill forward pass (default 512, as llama-bench; 256 with
                     --preset litert, the chunk run, chat and serve prefill in)
  --ctx N            the context limit of each test's session, up to the model's positions
                     (default: what the test needs; the KV memory follows the tokens held,
                     so a larger limit costs nothing). A test must fit: depth + size + 1
                     positions (so tg128 at the 131,072 positions of E2B runs at -d 130943)
  --preset litert    LiteRT-LM's protocol: prefill 1024 tokens, then decode 256 tokens after
                     them, in a 2048-token context (overrides -p, -n and -d), in chunks of 256
                     tokens unless -ub says otherwise
  --exact            the exact f32 path instead of the int8 kernels
  --kv-type T        KV cache rows: f16, f32 or q8 (default f16; f32 with --exact); or per
                     layer kind: full=T,sliding=T (either part), e.g. full=q8,sliding=f16
  --bandwidth-mib N  the buffer of the read-bandwidth measurement (default 1024; 0 skips it)
  --no-warmup        skip the untimed warm-up run (a short prefill and decode) that first
                     brings the weights' pages in, so the first test's first repetition is
                     not the only one that pays for it
  --draft-p LIST     speculative decoding against plain decoding in the same run, e.g.
                     0,0.3,0.5,0.7,0.9: each draft is replaced with probability p by the
                     target's own greedy continuation (random weights accept no draft), the
                     drafter still running every step; decode tok/s and its ratio to plain
                     per p, the acceptance, and the cost of a draft step and of verify passes
                     of widths 1-8 relative to a decode step. Uses the first -p (the prompt,
                     random tokens; 0: 64), -n and -t values; --draft defaults to mtp here
)" GEMLET_DRAFT_FLAGS_HELP R"(  --json             {"model", "load_s", "peak_rss_bytes", "kv_bytes" (the largest KV
                     allocation of one measured session), "decode_bytes_per_token",
                     "decode_macs_per_token", "prompt_macs_per_token" (matrix products'
                     multiply-adds of a decode step and of a prompt row; attention on top),
                     "ubatch" (the prefill chunk),
                     "results": [{"test", "tok_s", "tok_s_all", "ttft_s" (prefill tests),
                     "read_gb_s", "bound_tok_s" (decode tests), "threads", ...}]}

examples:
  gemlet bench -m e2b.gemlet
  gemlet bench -m e2b.gemlet -p 512,1024 -n 128 -d 0,4096 -r 3 -t 2
  gemlet bench -m e2b.gemlet --preset litert --json
)";

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Peak resident set of this process in bytes (VmHWM; ru_maxrss as a fallback).
uint64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  struct rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

// CPU time (user + system) of the whole process so far, in seconds.
double CpuSeconds() {
  struct rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

struct Result1 {
  double read_gb_s = 0;    // decode: the read bandwidth around the test
  double bound_tok_s = 0;  // decode: read bandwidth ÷ bytes per token (0: not a decode test)
  std::string test;
  int threads = 0;
  int64_t n_prompt = 0, n_gen = 0, depth = 0;
  std::vector<double> tok_s, ttft_s, cpu_s;
  std::vector<double> read_gb_s_all;  // decode: the bandwidth probes around its repetitions
};

std::vector<int32_t> RandomTokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& x : t) x = dist(rng);
  return t;
}

Result<std::vector<int64_t>> ReadList(Flags& flags, const char* name, std::vector<int64_t> def) {
  ASSIGN_OR_RETURN(auto v, flags.IntList({name}));
  if (v.empty()) return def;
  for (int64_t x : v) {
    if (x < 0) return InvalidArgument(std::string(name) + " values must be ≥ 0, got " + std::to_string(x));
  }
  return v;
}

int Run(Flags& flags) {
  const std::string model = flags.Str({"-m", "--model"}, "");
  auto p_list = ReadList(flags, "-p", {512});
  auto n_list = ReadList(flags, "-n", {128});
  auto d_list = ReadList(flags, "-d", {0});
  auto t_list = ReadList(flags, "-t", {0});
  auto reps = flags.Int({"-r"}, 3);
  constexpr int64_t kUbatchUnset = std::numeric_limits<int64_t>::min();
  auto ubatch = flags.Int({"-ub", "--ubatch"}, kUbatchUnset);
  auto decode_threads = flags.Int({"--decode-threads"}, 0);
  const std::string preset = flags.Str({"--preset"}, "");
  const bool json = flags.Bool({"--json"});
  const bool warmup = !flags.Bool({"--no-warmup"});
  const bool exact = flags.Bool({"--exact"});
  const std::string kv_type = flags.Str({"--kv-type"}, "");
  auto bw_mib = flags.Int({"--bandwidth-mib"}, 1024);
  auto ctx_flag = flags.Int({"--ctx"}, 0);
  const std::string draft_p = flags.Str({"--draft-p"}, "");
  DraftFlags draft_flags = ReadDraftFlags(flags);
  for (const auto* r : {&p_list, &n_list, &d_list, &t_list}) {
    if (!r->ok()) return UsageError("bench", r->status().message());
  }
  if (!reps.ok()) return UsageError("bench", reps.status().message());
  if (!ubatch.ok()) return UsageError("bench", ubatch.status().message());
  if (!decode_threads.ok()) return UsageError("bench", decode_threads.status().message());
  if (!bw_mib.ok()) return UsageError("bench", bw_mib.status().message());
  if (!ctx_flag.ok()) return UsageError("bench", ctx_flag.status().message());
  if (*ctx_flag < 0) return UsageError("bench", "--ctx must be >= 1");
  if (*bw_mib < 0 || *bw_mib > (1 << 20)) return UsageError("bench", "--bandwidth-mib must be in [0, 1048576]");
  if (*decode_threads < 0 || *decode_threads > 1024) return UsageError("bench", "--decode-threads must be in [0, 1024]");
  if (Status st = flags.Finish(); !st.ok()) return UsageError("bench", st.message());
  if (!flags.Positional().empty()) return UsageError("bench", "unexpected argument '" + flags.Positional()[0] + "'");
  if (model.empty()) return UsageError("bench", "-m MODEL is required");
  runtime::EngineOptions kv;
  if (!ParseKvType(kv_type, &kv)) return UsageError("bench", KvTypeError(kv_type));
  if (*reps < 1 || *reps > 1000) return UsageError("bench", "-r must be in [1, 1000]");
  if (*ubatch != kUbatchUnset && *ubatch < 1) return UsageError("bench", "-ub must be ≥ 1");
  std::vector<int64_t> pp = *p_list, tg = *n_list, depths = *d_list, threads = *t_list;
  int64_t tg_extra_depth = 0;  // litert: decode after the prompt
  int64_t context = 0;
  if (!preset.empty()) {
    if (preset != "litert") return UsageError("bench", "--preset must be litert, got '" + preset + "'");
    pp = {1024};
    tg = {256};
    depths = {0};
    tg_extra_depth = 1024;
    context = 2048;
    // The prompt in the chunks run, chat and serve prefill it in (runtime::SessionOptions).
    if (*ubatch == kUbatchUnset) *ubatch = runtime::SessionOptions{}.prefill_chunk;
  }
  if (*ubatch == kUbatchUnset) *ubatch = 512;  // llama-bench's default
  for (int64_t t : threads) {
    if (t > 1024) return UsageError("bench", "-t values must be in [0, 1024]");
  }
  if (*ctx_flag > 0) context = *ctx_flag;

  // The peak resident set of the model's work, without the bandwidth probe's buffer: the
  // peak so far is kept before each probe, and the kernel's high-water mark is reset after it
  // (/proc/self/clear_refs); the report is the largest of those and the final mark.
  const bool probe = *bw_mib > 0 && std::any_of(tg.begin(), tg.end(), [](int64_t n) { return n > 0; });
  uint64_t rss_seen = 0;
  uint64_t kv_bytes = 0;  // the largest KV allocation of one measured session
  bool rss_reset_failed = false;
  auto measure_bandwidth = [&](int threads) {
    rss_seen = std::max(rss_seen, PeakRssBytes());
    const double bw = MeasureReadBandwidth(threads, *bw_mib);
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.close();
    if (!clear) rss_reset_failed = true;
    return bw;
  };
  runtime::EngineOptions eo;
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  eo.decode_threads = static_cast<int>(*decode_threads);
  SetKvTypes(kv, &eo);
  ApplyDrafter(draft_flags, &eo);
  if (!draft_p.empty()) {  // the speculative bench (tools/cli/bench_speculative.h)
    SpeculativeBenchOptions sb;
    size_t b = 0;
    while (b <= draft_p.size()) {
      size_t e = draft_p.find(',', b);
      if (e == std::string::npos) e = draft_p.size();
      char* end = nullptr;
      const std::string item = draft_p.substr(b, e - b);
      const double p = std::strtod(item.c_str(), &end);
      if (item.empty() || *end != '\0' || !(p >= 0 && p <= 1)) {
        return UsageError("bench", "--draft-p takes probabilities in [0, 1], comma-separated, got '" + draft_p + "'");
      }
      sb.p.push_back(p);
      b = e + 1;
    }
    sb.n_prompt = pp.empty() || pp[0] == 0 ? 64 : pp[0];
    sb.n_gen = tg.empty() || tg[0] == 0 ? 128 : tg[0];
    sb.reps = *reps;
    sb.json = json;
    eo.threads = static_cast<int>(threads.empty() ? 0 : threads[0]);
    auto engine_or = runtime::Engine::Open(model, eo);
    if (!engine_or.ok()) return ReportModelError("bench", engine_or.status());
    if (draft_flags.mode.empty()) draft_flags.mode = (*engine_or)->drafter() ? "mtp" : "lookup";
    auto spec = SpeculativeFromFlags(draft_flags, **engine_or);
    if (!spec.ok()) return UsageError("bench", spec.status().message());
    if (spec->mode == runtime::DraftMode::kOff) return UsageError("bench", "--draft-p needs drafts (not --draft off)");
    sb.spec = *spec;
    return RunSpeculativeBench(**engine_or, model, sb);
  }
  std::string kv_name;
  std::vector<Result1> results;
  double load_s = 0;
  uint64_t decode_bytes = 0, decode_macs = 0, prompt_macs = 0;
  std::string tier;
  for (size_t ti = 0; ti < threads.size(); ++ti) {
    eo.threads = static_cast<int>(threads[ti]);
    const double t0 = Now();
    auto engine_or = runtime::Engine::Open(model, eo);
    if (!engine_or.ok()) return ReportModelError("bench", engine_or.status());
    if (ti == 0) load_s = Now() - t0;
    const runtime::Engine& engine = **engine_or;
    const int64_t V = engine.config().vocab_size;
    const int64_t max_pos = engine.config().max_position_embeddings;
    tier = kernels::TierName(kernels::ActiveKernels().tier);
    decode_bytes = engine.model().decode_bytes_per_token();
    decode_macs = engine.model().decode_macs_per_token();
    prompt_macs = engine.model().prompt_macs_per_token();
    kv_name = KvTypesName(engine);  // "f32", "f16", "q8" or "full=q8,sliding=f16"

    // Sessions prefilled to a deep depth, forked by each repetition at that depth; the limit
    // each needs (the largest of its tests').
    constexpr int64_t kReuseDepth = 4096;
    std::map<int64_t, std::unique_ptr<runtime::Session>> bases;
    std::map<int64_t, int64_t> depth_limit;
    // One measurement: prefill `depth` tokens untimed, then time `n_prompt` prefill tokens or
    // `n_gen` decode steps.
    auto measure = [&](Result1& r, uint64_t seed) -> Status {
      runtime::SessionOptions so;
      so.prefill_chunk = *ubatch;
      const int64_t need = r.depth + r.n_prompt + r.n_gen + 1;
      so.context_limit = std::max<int64_t>(context, need);
      if (so.context_limit > max_pos) {
        return InvalidArgument(r.test + " needs " + std::to_string(so.context_limit) +
                               " positions, the model has " + std::to_string(max_pos));
      }
      if (*ctx_flag > 0 && need > *ctx_flag) {
        return InvalidArgument(r.test + " needs " + std::to_string(need) + " positions, more than --ctx " +
                               std::to_string(*ctx_flag));
      }
      std::vector<float> logits;
      // A decode test from depth 0 starts after one token (there is nothing to decode from).
      const int64_t pre = r.depth > 0 ? r.depth : (r.n_gen > 0 ? 1 : 0);
      std::unique_ptr<runtime::Session> fresh;
      if (pre >= kReuseDepth) {
        // Deep: the depth is prefilled once (untimed) into a session whose limit fits every
        // test at that depth, and each repetition runs in a fork of it (a copy of its KV).
        auto& base = bases[pre];
        if (!base) {
          so.context_limit = std::max(so.context_limit, depth_limit[pre]);
          base = std::make_unique<runtime::Session>(engine, so);
          RETURN_IF_ERROR(base->Prefill(RandomTokens(pre, V, 1), &logits));
        }
        ASSIGN_OR_RETURN(fresh, base->Fork());
      } else {
        fresh = std::make_unique<runtime::Session>(engine, so);
        if (pre > 0) RETURN_IF_ERROR(fresh->Prefill(RandomTokens(pre, V, seed + 1), &logits));
      }
      runtime::Session& s = *fresh;
      // The KV memory a session held, measured after its test (a fork's base holds as much).
      struct KvPeak {
        runtime::Session& s;
        uint64_t& peak;
        ~KvPeak() { peak = std::max<uint64_t>(peak, s.kv_cache().bytes_allocated()); }
      } kv_peak{s, kv_bytes};
      if (r.n_prompt > 0) {
        const auto toks = RandomTokens(r.n_prompt, V, seed);
        const double a = Now(), c = CpuSeconds();
        RETURN_IF_ERROR(s.Prefill(toks, &logits));
        const double dt = Now() - a;
        r.tok_s.push_back(r.n_prompt / dt);
        r.ttft_s.push_back(dt);
        r.cpu_s.push_back(CpuSeconds() - c);
      } else {
        const auto toks = RandomTokens(r.n_gen, V, seed);
        const double a = Now(), c = CpuSeconds();
        for (int64_t i = 0; i < r.n_gen; ++i) RETURN_IF_ERROR(s.Decode(toks[i], &logits));
        r.tok_s.push_back(r.n_gen / (Now() - a));
        r.cpu_s.push_back(CpuSeconds() - c);
      }
      return Status::Ok();
    };

    // Warm-up, untimed (llama-bench does one too): every weight page is touched once.
    if (warmup && max_pos >= 4) {
      Result1 w;
      w.n_prompt = std::min<int64_t>(32, max_pos - 2);
      w.n_gen = 0;
      if (Status st = measure(w, 7); !st.ok()) return ReportError("bench", st);
      w.n_prompt = 0;
      w.n_gen = 1;
      if (Status st = measure(w, 8); !st.ok()) return ReportError("bench", st);
    }

    // The tests of this thread count, in the order of the flags.
    std::vector<Result1> tests;
    auto add = [&](int64_t n_prompt, int64_t n_gen, int64_t depth) {
      Result1 r;
      r.threads = n_prompt > 0 ? engine.threads() : engine.decode_pool()->num_threads();
      r.n_prompt = n_prompt;
      r.n_gen = n_gen;
      r.depth = depth;
      r.test = (n_prompt ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen)) +
               (depth ? "@d" + std::to_string(depth) : "");
      tests.push_back(std::move(r));
    };
    for (int64_t d : depths) {
      for (int64_t p : pp) {
        if (p > 0) add(p, 0, d);
      }
      for (int64_t n : tg) {
        if (n > 0) add(0, n, d + tg_extra_depth);
      }
    }
    for (const Result1& r : tests) {
      int64_t& l = depth_limit[r.depth];
      l = std::max(l, std::max<int64_t>(context, r.depth + r.n_prompt + r.n_gen + 1));
    }
    // The repetitions go round the tests in turns (the first of every test, then the second,
    // ...), so a machine whose speed drifts (a shared host's memory bandwidth) weighs on every
    // test alike and their ratios, such as decode at two depths, hold.
    for (int64_t i = 0; i < *reps; ++i) {
      for (Result1& r : tests) {
        // A decode test's ceiling: the weights one step reads ÷ the read bandwidth of the decode
        // threads, measured right before and after each of its repetitions.
        const bool bw = r.n_gen > 0 && probe;
        if (bw) r.read_gb_s_all.push_back(measure_bandwidth(r.threads));
        if (Status st = measure(r, 1000 * i + 17); !st.ok()) return ReportError("bench", st);
        if (bw) r.read_gb_s_all.push_back(measure_bandwidth(r.threads));
      }
    }
    for (Result1& r : tests) {
      if (!r.read_gb_s_all.empty()) {
        double sum = 0;
        for (double g : r.read_gb_s_all) sum += g;
        r.read_gb_s = sum / static_cast<double>(r.read_gb_s_all.size());
        r.bound_tok_s = r.read_gb_s * 1e9 / static_cast<double>(decode_bytes);
      }
      if (!json) std::fprintf(stderr, "  %s t%d: %.2f tok/s\n", r.test.c_str(), r.threads, Median(r.tok_s));
      results.push_back(std::move(r));
    }
  }
  const uint64_t rss = std::max(rss_seen, PeakRssBytes());
  if (rss_reset_failed) {
    std::fprintf(stderr, "bench: could not reset the peak RSS after measuring bandwidth (/proc/self/clear_refs); "
                         "the peak RSS may include the probe's buffer (--bandwidth-mib 0 skips it)\n");
  }

  if (json) {
    nlohmann::json res = nlohmann::json::array();
    for (const Result1& r : results) {
      nlohmann::json j = {{"test", r.test},       {"tok_s", Median(r.tok_s)}, {"tok_s_all", r.tok_s},
                          {"threads", r.threads}, {"n_prompt", r.n_prompt},   {"n_gen", r.n_gen},
                          {"depth", r.depth},         {"cpu_s", Median(r.cpu_s)}};
      if (r.n_prompt > 0) j["ttft_s"] = Median(r.ttft_s);
      if (r.bound_tok_s > 0) {
        j["bound_tok_s"] = r.bound_tok_s;
        j["read_gb_s"] = r.read_gb_s;
      }
      res.push_back(j);
    }
    nlohmann::json out = {{"model", model},
                          {"load_s", load_s},
                          {"peak_rss_bytes", rss},
                          {"kv_bytes", kv_bytes},
                          {"kernels", tier},
                          {"mode", exact ? "exact" : "fast"},
                          {"kv_type", kv_name},
                          {"repetitions", *reps},
                          {"ubatch", *ubatch},
                          {"decode_bytes_per_token", decode_bytes},
                          {"decode_macs_per_token", decode_macs},
                          {"prompt_macs_per_token", prompt_macs},
                          {"results", res}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("| model | kernels | threads | test | tok/s | ttft s | cpu s | of bound |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Result1& r : results) {
    char ttft[32] = "", of_bound[32] = "";
    if (r.n_prompt > 0) std::snprintf(ttft, sizeof(ttft), "%.3f", Median(r.ttft_s));
    if (r.bound_tok_s > 0) std::snprintf(of_bound, sizeof(of_bound), "%.0f %%", 100 * Median(r.tok_s) / r.bound_tok_s);
    std::printf("| %s | %s | %d | %s | %.2f | %s | %.2f | %s |\n", model.c_str(), tier.c_str(), r.threads,
                r.test.c_str(), Median(r.tok_s), ttft, Median(r.cpu_s), of_bound);
  }
  if (probe) {
    std::printf("\nof bound: tok/s ÷ (read bandwidth around the test ÷ %.1f MB of weights per decode step;\n"
                "the KV cache comes on top)",
                decode_bytes / 1e6);
    for (const Result1& r : results) {
      if (r.bound_tok_s > 0) {
        std::printf("\n  %s t%d: read %.1f GB/s, bound %.1f tok/s", r.test.c_str(), r.threads, r.read_gb_s,
                    r.bound_tok_s);
      }
    }
    std::printf("\n");
  }
  std::printf("\nload %.3f s, peak RSS %.1f MiB, median of %lld repetitions, %s path, %s KV cache, prefill chunks of %lld\n",
              load_s, rss / 1048576.0, static_cast<long long>(*reps), exact ? "exact" : "fast", kv_name.c_str(),
              static_cast<long long>(*ubatch));
  return kExitOk;
}

}  // namespace cmd_bench

GEMLET_COMMAND(bench, "bench", "measure prefill/decode speed, time to first token, load time and peak RSS",
               cmd_bench::kUsage, cmd_bench::Run);

}  // namespace gemlet::cli
