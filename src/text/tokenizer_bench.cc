// Tokenizer speed with the real Gemma 4 vocabulary (../shared/tokenizer/gemma4):
//  * encode throughput on English prose (a paragraph written for this benchmark, repeated to
//    4 MiB), one core; target >= 10 MB/s;
//  * loading the vocabulary from a .gemlet file: GemletFile::Open + Tokenizer::Create on a
//    file holding the real vocabulary (written here with GemletWriter); target < 50 ms;
//  * decode and streaming decode of the encoded text.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "format/gemlet_file.h"
#include "format/gemlet_writer.h"
#include "format/tokenizer_json.h"
#include "text/tokenizer.h"

namespace gemlet {
namespace {

constexpr char kParagraph[] =
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, counting the "
    "steps out of habit rather than necessity. There were one hundred and twelve of them, "
    "worn smooth in the middle by a century of boots. From the lamp room he could see the "
    "fishing boats returning to the harbour, their wakes drawing pale lines across the dark "
    "water, and further out the container ships that never stopped anywhere near his small "
    "island. He wrote the weather in a notebook: wind from the south-west, visibility good, "
    "a thin haze over the mainland hills. Nobody had asked him to keep the notebook since "
    "the light was automated in 1998, but he kept it anyway, because a record that stops "
    "is worse than no record at all. On Sundays his daughter called and asked whether he "
    "was lonely, and he told her, truthfully, that he was not.\n\n";

const TokenizerInfo& Info() {
  static const TokenizerInfo* info = [] {
    auto r = LoadHfTokenizer(std::string(GEMLET_SHARED_DIR) + "/tokenizer/gemma4");
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::exit(1);
    }
    return new TokenizerInfo(std::move(r).value());
  }();
  return *info;
}

Tokenizer& Tok() {
  static Tokenizer* tok = [] {
    auto r = Tokenizer::Create(Info().vocab, Info().special);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::exit(1);
    }
    return new Tokenizer(std::move(r).value());
  }();
  return *tok;
}

std::string English(size_t bytes) {
  std::string s;
  while (s.size() < bytes) s += kParagraph;
  return s;
}

void BM_EncodeEnglish(benchmark::State& state) {
  const std::string text = English(static_cast<size_t>(state.range(0)));
  Tokenizer& tok = Tok();
  tok.SetEncodeTuning({});
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok.Encode(text);
    n_tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes_per_token"] = static_cast<double>(text.size()) / n_tokens;
}
BENCHMARK(BM_EncodeEnglish)->Arg(4 << 20)->Unit(benchmark::kMillisecond);

// The same without the segment splitting: BPE over each whole segment (Hugging Face's way).
void BM_EncodeEnglishWholeSegment(benchmark::State& state) {
  const std::string text = English(static_cast<size_t>(state.range(0)));
  Tokenizer& tok = Tok();
  tok.SetEncodeTuning({24, false});
  for (auto _ : state) {
    auto ids = tok.Encode(text);
    benchmark::DoNotOptimize(ids->data());
  }
  tok.SetEncodeTuning({});
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_EncodeEnglishWholeSegment)->Arg(256 << 10)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const std::string text = English(1 << 20);
  Tokenizer& tok = Tok();
  const auto ids = *tok.Encode(text);
  for (auto _ : state) {
    auto s = tok.Decode(ids);
    benchmark::DoNotOptimize(s->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

void BM_StreamDecode(benchmark::State& state) {
  const std::string text = English(1 << 20);
  Tokenizer& tok = Tok();
  const auto ids = *tok.Encode(text);
  for (auto _ : state) {
    StreamDecoder dec(tok);
    std::string out;
    for (int32_t id : ids) (void)dec.Push(id, &out);
    dec.Flush(&out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ids.size()));
}
BENCHMARK(BM_StreamDecode)->Unit(benchmark::kMillisecond);

// GemletFile::Open + Tokenizer::Create on a .gemlet holding the real vocabulary.
void BM_LoadVocabFromGemlet(benchmark::State& state) {
  const std::string path = "/tmp/gemlet_tokenizer_bench." + std::to_string(::getpid()) + ".gemlet";
  {
    auto w = GemletWriter::Create(path);
    if (!w.ok()) {
      state.SkipWithError(w.status().ToString().c_str());
      return;
    }
    (*w)->SetVocab(Info().vocab);
    (*w)->SetMetadata({{"config", nlohmann::json::object()},
                       {"tokenizer", Info().special},
                       {"chat_template", Info().chat_template}});
    const Status st = (*w)->Finish();
    if (!st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      return;
    }
  }
  for (auto _ : state) {
    auto f = GemletFile::Open(path);
    if (!f.ok()) {
      state.SkipWithError(f.status().ToString().c_str());
      break;
    }
    auto t = Tokenizer::FromGemlet(**f);
    if (!t.ok()) {
      state.SkipWithError(t.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(t->size());
  }
  std::remove(path.c_str());
}
BENCHMARK(BM_LoadVocabFromGemlet)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The two halves of the above: Tokenizer::Create from a Vocab already in memory.
void BM_TokenizerCreate(benchmark::State& state) {
  const TokenizerInfo& info = Info();
  for (auto _ : state) {
    auto t = Tokenizer::Create(info.vocab, info.special);
    benchmark::DoNotOptimize(t->size());
  }
}
BENCHMARK(BM_TokenizerCreate)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace gemlet

BENCHMARK_MAIN();
