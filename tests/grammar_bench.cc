// The grammar layer's costs over the real Gemma 4 vocabulary (262144 ids): building the
// vocabulary trie (once per vocabulary), the token mask of a JSON grammar at typical states
// (warm: the per-position cache filled, as in steady decoding; cold: a new cache each time,
// the first mask of a request), the mask per token along a generated JSON document, and the
// one-token IsAllowed check. Each FillMask call is timed on its own: the counters p50_us and
// p99_us are the median and the 99th percentile of the calls of a run.
// Then what constrained decoding adds per token, as `gemlet run` and the server see it: the
// sampler at temperature 1 over random logits (a random-weight model's: it tries every token)
// with a GrammarConstraint (JSON, and a 10-property schema) against the sampler alone, each
// token's SetBudget + Sample + Accept timed — cold (a new constraint per 64-token document, as
// one-shot `run`) and warm (clones of one constraint, as the server's compiled-grammar cache);
// and the one-time cost of compiling the schema.
//   build/tests/gemlet_grammar_bench --benchmark_filter=FillMask
//   build/tests/gemlet_grammar_bench --benchmark_filter='Constrained|Unconstrained|Compile'

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "format/tokenizer_json.h"
#include "grammar/gbnf.h"
#include "grammar/grammar_test_util.h"
#include "grammar/json_schema.h"
#include "grammar/token_matcher.h"
#include "runtime/grammar_constraint.h"
#include "runtime/sampler.h"
#include "text/tokenizer.h"

namespace gemlet {
namespace {

struct Real {
  TokenizerInfo info;
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const grammar::Vocabulary> vocab;
  std::shared_ptr<const grammar::Grammar> json;
};

const Real& Get() {
  static const Real* r = [] {
    auto* x = new Real;
    auto info = LoadHfTokenizer(std::string(GEMLET_SHARED_DIR) + "/tokenizer/gemma4");
    if (!info.ok()) {
      std::fprintf(stderr, "%s\n", info.status().message().c_str());
      std::exit(1);
    }
    x->info = std::move(info).value();
    auto tok = Tokenizer::Create(x->info.vocab, x->info.special);
    if (!tok.ok()) std::exit(1);
    x->tok = std::make_unique<Tokenizer>(std::move(tok).value());
    x->vocab = *runtime::GrammarVocabulary(*x->tok);
    x->json = std::make_shared<const grammar::Grammar>(*grammar::ParseGbnf(grammar::testing::kJsonGbnf));
    return x;
  }();
  return *r;
}

void Percentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}

void BM_VocabularyCreate(benchmark::State& state) {
  const Real& r = Get();
  for (auto _ : state) {
    auto v = runtime::GrammarVocabulary(*r.tok);
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_VocabularyCreate)->Unit(benchmark::kMillisecond);

// Arg: the JSON prefix the state is after.
const char* kPrefixes[] = {
    "",                        // 0: a value starts
    "{\"name\": \"Zo",         // 1: inside a string (nearly every token allowed)
    "{\"name\": \"Zoe\", \"n\": 12",  // 2: inside a number in an object
    "[1, 2, ",                 // 3: the next array element
    "{\"a\": {\"b\": [\"x\", {\"c\": \"deep te",  // 4: a string nested four deep
};

void FillMaskAt(benchmark::State& state, bool warm) {
  const Real& r = Get();
  grammar::Matcher m(r.json);
  if (!m.AcceptBytes(kPrefixes[state.range(0)])) state.SkipWithError("prefix rejected");
  std::vector<uint32_t> mask(r.vocab->mask_words());
  auto cache = grammar::NewTokenMaskCache();
  if (warm) grammar::TokenMatcher(r.vocab, m, cache).FillMask(mask);
  std::vector<double> us;
  for (auto _ : state) {
    grammar::TokenMatcher tm(r.vocab, m, warm ? cache : nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    tm.FillMask(mask);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(mask.data());
  }
  size_t allowed = 0;
  for (uint32_t w : mask) allowed += __builtin_popcount(w);
  state.counters["allowed"] = static_cast<double>(allowed);
  Percentiles(state, us);
}
void BM_FillMaskWarm(benchmark::State& state) { FillMaskAt(state, true); }
void BM_FillMaskCold(benchmark::State& state) { FillMaskAt(state, false); }
BENCHMARK(BM_FillMaskWarm)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FillMaskCold)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

// The mask before every token of a JSON document as the tokenizer splits it, one cache for
// the run (the first pass fills it): what constrained decoding of such a document costs.
void BM_FillMaskDocument(benchmark::State& state) {
  const Real& r = Get();
  const std::string doc =
      "{\"id\": 1042, \"name\": \"Ada Lovelace\", \"email\": \"ada@example.org\", \"tags\": [\"math\", "
      "\"poetry\", \"engines\"], \"score\": -12.5e2, \"active\": true, \"address\": {\"city\": \"London\", "
      "\"zip\": null}, \"notes\": \"Wrote the first published algorithm\\nfor the Analytical Engine.\"}";
  const std::vector<int32_t> ids = *r.tok->Encode(doc);
  auto cache = grammar::NewTokenMaskCache();
  std::vector<uint32_t> mask(r.vocab->mask_words());
  std::vector<double> us;
  for (auto _ : state) {
    grammar::TokenMatcher tm(r.vocab, grammar::Matcher(r.json), cache);
    for (int32_t id : ids) {
      const auto t0 = std::chrono::steady_clock::now();
      tm.FillMask(mask);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      if (!tm.AcceptToken(id)) state.SkipWithError("document token rejected");
    }
  }
  state.counters["tokens"] = static_cast<double>(ids.size());
  Percentiles(state, us);
}
BENCHMARK(BM_FillMaskDocument)->Unit(benchmark::kMillisecond);

// IsAllowed of the token the sampler picked, at the string state (Arg 1 above); a mix of
// allowed and rejected ids.
void BM_IsAllowed(benchmark::State& state) {
  const Real& r = Get();
  grammar::Matcher m(r.json);
  if (!m.AcceptBytes(kPrefixes[state.range(0)])) state.SkipWithError("prefix rejected");
  grammar::TokenMatcher tm(r.vocab, m);
  std::mt19937 rng(1);
  std::vector<int32_t> ids(4096);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % r.vocab->size());
  size_t i = 0, allowed = 0;
  for (auto _ : state) {
    allowed += tm.IsAllowed(ids[i++ & 4095]);
  }
  benchmark::DoNotOptimize(allowed);
}
BENCHMARK(BM_IsAllowed)->Arg(1)->Arg(2)->Unit(benchmark::kNanosecond);

// A 10-property record: integers with ranges, strings with a length limit and formats, a
// number, a boolean, an array, an enum and a nullable string.
constexpr const char* kRecordSchema = R"({"type": "object", "properties": {
  "id": {"type": "integer", "minimum": 0, "maximum": 99999},
  "name": {"type": "string", "maxLength": 40},
  "email": {"type": "string", "format": "email"},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "score": {"type": "number"},
  "active": {"type": "boolean"},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 4},
  "role": {"enum": ["admin", "user", "guest"]},
  "created": {"type": "string", "format": "date"},
  "note": {"type": ["string", "null"]}},
  "required": ["id", "name", "email", "age", "score", "active", "tags", "role", "created", "note"],
  "additionalProperties": false})";

// The schema → GBNF text → a constraint ready to mask (the grammar parsed, its completion
// costs and one-character tokens found); the vocabulary is built once, outside.
void BM_SchemaCompile(benchmark::State& state) {
  const Real& r = Get();
  for (auto _ : state) {
    auto gbnf = grammar::JsonSchemaTextToGbnf(kRecordSchema);
    if (!gbnf.ok()) state.SkipWithError(gbnf.status().message().c_str());
    auto c = runtime::GrammarConstraint::Create(*gbnf, r.vocab);
    if (!c.ok()) state.SkipWithError(c.status().message().c_str());
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_SchemaCompile)->Unit(benchmark::kMillisecond);

constexpr int kDocTokens = 64;

// Random logits, N(0, 1) per token, a few vectors used in turn (a random model's rows).
const std::vector<std::vector<float>>& RandomLogits() {
  static const auto* rows = [] {
    auto* v = new std::vector<std::vector<float>>(8);
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto& row : *v) {
      row.resize(Get().vocab->size());
      for (float& x : row) x = n(rng);
    }
    return v;
  }();
  return *rows;
}

// Arg 0: the JSON grammar, 1: the record schema; `warm`: clones of one constraint (its mask
// cache shared and filled by the earlier documents) instead of a new one per document.
void ConstrainedAt(benchmark::State& state, bool warm) {
  const Real& r = Get();
  const auto& rows = RandomLogits();
  const std::string gbnf = state.range(0) == 0 ? std::string(grammar::testing::kJsonGbnf)
                                               : *grammar::JsonSchemaTextToGbnf(kRecordSchema);
  auto proto = runtime::GrammarConstraint::Create(gbnf, r.vocab);
  if (!proto.ok()) state.SkipWithError(proto.status().message().c_str());
  // One document of up to kDocTokens tokens; each token's time into *us (if given).
  auto document = [&](runtime::TokenConstraint& c, uint64_t seed, std::vector<double>* us) {
    runtime::SamplerOptions so;
    so.seed = seed;  // temperature 1, no filters
    runtime::Sampler sampler(so);
    for (int i = 0; i < kDocTokens && !c.Complete(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      c.SetBudget(kDocTokens - i);
      const int32_t id = sampler.Sample(rows[i % rows.size()], c);
      if (id == runtime::kNoToken) break;
      if (!c.Accept(id).ok()) state.SkipWithError("an allowed token was refused");
      if (us) us->push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
  };
  if (warm) document(*(*proto)->Clone(), 1000, nullptr);  // fills the shared cache
  std::vector<double> us;
  int64_t docs = 0;
  uint64_t seed = 1;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<runtime::TokenConstraint> c;
    if (warm) {
      c = (*proto)->Clone();
    } else {
      c = std::move(runtime::GrammarConstraint::Create(gbnf, r.vocab)).value();
    }
    state.ResumeTiming();
    document(*c, seed++, &us);
    ++docs;
  }
  state.counters["tokens_per_doc"] = static_cast<double>(us.size()) / static_cast<double>(std::max<int64_t>(docs, 1));
  Percentiles(state, us);
}
void BM_ConstrainedCold(benchmark::State& state) { ConstrainedAt(state, false); }
void BM_ConstrainedWarm(benchmark::State& state) { ConstrainedAt(state, true); }
BENCHMARK(BM_ConstrainedCold)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(6);
BENCHMARK(BM_ConstrainedWarm)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(6);

// The sampler alone on the same logits: what the constrained per-token times add to.
void BM_Unconstrained(benchmark::State& state) {
  const auto& rows = RandomLogits();
  std::vector<double> us;
  uint64_t seed = 1;
  for (auto _ : state) {
    runtime::SamplerOptions so;
    so.seed = seed++;
    runtime::Sampler sampler(so);
    for (int i = 0; i < kDocTokens; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(sampler.Sample(rows[i % rows.size()]));
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  Percentiles(state, us);
}
BENCHMARK(BM_Unconstrained)->Unit(benchmark::kMillisecond)->Iterations(6);

}  // namespace
}  // namespace gemlet
BENCHMARK_MAIN();
