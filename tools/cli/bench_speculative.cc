#include "tools/cli/bench_speculative.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "model/gemma4_drafter.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "tools/cli/command.h"

namespace gemlet::cli {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

struct Row {
  double p = -1;  // −1: plain decoding
  std::vector<double> tok_s, ratio;
  runtime::SpeculativeStats stats;
};

// Greedy generation of n tokens after `prompt` with `spec`; its decode tok/s.
Result<runtime::GenerateResult> Greedy(const runtime::Engine& e, const std::vector<int32_t>& prompt, int64_t n,
                                       const runtime::SpeculativeOptions& spec) {
  runtime::Session s(e, runtime::SessionOptions{static_cast<int64_t>(prompt.size()) + n + 1, 512});
  runtime::SamplerOptions so;
  so.temperature = 0;
  s.set_sampler(so);
  runtime::GenerateOptions go;
  go.max_tokens = n;
  go.stop_at_eog = false;
  go.speculative = spec;
  return runtime::Generate(s, prompt, go);
}

}  // namespace

int RunSpeculativeBench(const runtime::Engine& engine, const std::string& model, const SpeculativeBenchOptions& o) {
  const int64_t V = engine.config().vocab_size, D = engine.config().hidden_size;
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int32_t> dist(3, static_cast<int32_t>(V - 1));
  std::vector<int32_t> prompt(o.n_prompt);
  for (auto& t : prompt) t = dist(rng);
  prompt[0] = engine.bos_id();

  // The plain continuation (the oracle), and a warm-up.
  auto first = Greedy(engine, prompt, o.n_gen, {});
  if (!first.ok()) return ReportError("bench", first.status());
  const std::vector<int32_t> oracle = first->ids;

  std::vector<Row> rows(1 + o.p.size());
  for (size_t i = 0; i < o.p.size(); ++i) rows[1 + i].p = o.p[i];
  for (int64_t r = 0; r < o.reps; ++r) {
    double plain = 0;
    for (Row& row : rows) {
      runtime::SpeculativeOptions spec;
      if (row.p >= 0) {
        spec = o.spec;
        spec.oracle = oracle;
        spec.oracle_p = row.p;
        spec.oracle_seed = 1000 + static_cast<uint64_t>(r);
      }
      auto g = Greedy(engine, prompt, o.n_gen, spec);
      if (!g.ok()) return ReportError("bench", g.status());
      if (g->ids != oracle) {
        return ReportError("bench", Internal("speculative greedy output differs from plain greedy output (p = " +
                                             std::to_string(row.p) + ")"));
      }
      const double tps = g->timings.decode_tok_s();
      row.tok_s.push_back(tps);
      if (row.p < 0) plain = tps;
      row.ratio.push_back(plain > 0 ? tps / plain : 0);
      row.stats.Add(g->timings.speculative);
    }
  }

  // Costs: one MTP draft step, and verify passes of widths 1 … 8 (then rolled back), after
  // the prompt, each the median of 16 runs (interleaved).
  runtime::Session s(engine, runtime::SessionOptions{o.n_prompt + 64, 512});
  std::vector<float> logits(9 * V), hidden(9 * D), h_next(D);
  const int64_t last = o.n_prompt - 1;
  if (Status st = s.PrefillRows(prompt, std::span<const int64_t>(&last, 1), logits.data(), {}, nullptr,
                                hidden.data());
      !st.ok()) {
    return ReportError("bench", st);
  }
  std::vector<std::vector<double>> verify_ms(9);
  std::vector<double> draft_ms;
  model::DraftScratch ds;
  const model::ForwardOptions fopt{engine.mode(), engine.decode_pool()};
  std::vector<int32_t> feed(8);
  std::vector<int64_t> out_rows(8);
  for (int rep = 0; rep < 16; ++rep) {
    if (engine.drafter()) {
      model::DraftOutput out;
      out.h_next = h_next.data();
      const double a = Now();
      if (Status st = model::DraftStep(*engine.drafter(), engine.model(), s.kv_cache(), prompt.back(), hidden.data(),
                                       model::DraftHead::kSparse, &ds, fopt, &out);
          !st.ok()) {
        return ReportError("bench", st);
      }
      draft_ms.push_back(1e3 * (Now() - a));
    }
    for (int64_t w = 1; w <= 8; ++w) {
      for (int64_t i = 0; i < w; ++i) {
        feed[i] = dist(rng);
        out_rows[i] = i;
      }
      const double a = Now();
      if (Status st = s.PrefillRows(std::span<const int32_t>(feed.data(), w), std::span<const int64_t>(out_rows.data(), w),
                                    logits.data(), {}, nullptr, hidden.data() + D);
          !st.ok()) {
        return ReportError("bench", st);
      }
      verify_ms[w].push_back(1e3 * (Now() - a));
      if (Status st = s.Truncate(o.n_prompt); !st.ok()) return ReportError("bench", st);
    }
  }
  const double step = Median(verify_ms[1]);

  if (o.json) {
    nlohmann::json res = nlohmann::json::array();
    for (const Row& row : rows) {
      nlohmann::json j = {{"draft_p", row.p < 0 ? nlohmann::json(nullptr) : nlohmann::json(row.p)},
                          {"tok_s", Median(row.tok_s)},
                          {"tok_s_all", row.tok_s},
                          {"ratio", Median(row.ratio)},
                          {"ratio_all", row.ratio}};
      if (row.p >= 0) {
        j["acceptance_rate"] = row.stats.acceptance_rate();
        j["mean_accepted"] = row.stats.mean_accepted();
        j["rounds"] = row.stats.rounds;
        j["plain_steps"] = row.stats.plain_steps;
      }
      res.push_back(j);
    }
    nlohmann::json verify = nlohmann::json::object();
    for (int64_t w = 1; w <= 8; ++w) verify[std::to_string(w)] = Median(verify_ms[w]) / step;
    nlohmann::json out = {{"model", model},
                          {"threads", engine.threads()},
                          {"draft", runtime::DraftModeName(o.spec.mode)},
                          {"draft_max", o.spec.draft_max},
                          {"adaptive", o.spec.adaptive},
                          {"n_prompt", o.n_prompt},
                          {"n_gen", o.n_gen},
                          {"repetitions", o.reps},
                          {"decode_step_ms", step},
                          {"draft_step_rel", draft_ms.empty() ? nlohmann::json(nullptr) : nlohmann::json(Median(draft_ms) / step)},
                          {"verify_rel", verify},
                          {"results", res}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("| draft p | tok/s | vs plain | accepted | per round |\n| ---: | ---: | ---: | ---: | ---: |\n");
  for (const Row& row : rows) {
    if (row.p < 0) {
      std::printf("| plain | %.2f | 1.00 | | |\n", Median(row.tok_s));
    } else {
      std::printf("| %.2f | %.2f | %.2f | %.1f %% | %.2f |\n", row.p, Median(row.tok_s), Median(row.ratio),
                  100 * row.stats.acceptance_rate(), row.stats.mean_accepted());
    }
  }
  std::printf("\ndecode step %.2f ms; draft step %s; verify of width w ÷ decode step:", step,
              draft_ms.empty() ? "(no drafter)" : (std::to_string(Median(draft_ms) / step) + " of a decode step").c_str());
  for (int64_t w = 1; w <= 8; ++w) std::printf(" %lld: %.2f", static_cast<long long>(w), Median(verify_ms[w]) / step);
  std::printf("\n%s, %d threads, %s (K ≤ %lld%s), %lld prompt + %lld generated tokens, median of %lld\n",
              model.c_str(), engine.threads(), runtime::DraftModeName(o.spec.mode),
              static_cast<long long>(o.spec.draft_max), o.spec.adaptive ? ", adaptive" : ", fixed",
              static_cast<long long>(o.n_prompt), static_cast<long long>(o.n_gen), static_cast<long long>(o.reps));
  return kExitOk;
}

}  // namespace gemlet::cli
