// The forward pass against the golden logits of ../shared/oracle, exact tier, for every
// checkpoint converted with --plan keep and every way of feeding the tokens: one prefill,
// token-by-token decode, and prefill in chunks of 1, 7 and 64 (cases are up to 36 tokens,
// longer than the sliding windows of 16 and 12). Unquantized sources are compared with `ref`,
// the Q8_0 / Q4_0 GGUFs (f32 activations over the dequantized blocks) with `ref-q8_0` /
// `ref-q4_0`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_forward_test {

struct Source {
  const char* variant;
  const char* file;
  const char* golden;
};

std::string Name(const Source& s) { return std::string(s.variant) + " " + s.file + " vs " + s.golden; }
void PrintTo(const Source& s, std::ostream* os) { *os << Name(s); }

struct Mode {
  const char* name;
  int64_t chunk;  // 0 = the whole case in one forward
};
constexpr Mode kModes[] = {{"prefill", 0}, {"decode", 1}, {"chunk:7", 7}, {"chunk:64", 64}};

class OracleForward : public ::testing::TestWithParam<Source> {};

TEST_P(OracleForward, ExactTierInEveryMode) {
  const Source src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const NpyArray& gold = Golden(src.variant, src.golden);
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  auto engine = OpenEngine(path, 2);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size;
  ASSERT_EQ(gold.shape, (std::vector<int64_t>{o.rows, V}));

  std::vector<float> prefill_all;  // [rows, V] from the prefill mode, the baseline of the others
  for (const Mode& mode : kModes) {
    Stats total;
    std::vector<float> all(o.rows * V);
    for (const Case& c : o.cases) {
      runtime::Session session(*engine, runtime::SessionOptions{256, 256});
      const std::vector<float> got = RunAllRows(session, c.tokens, mode.chunk);
      const int64_t T = static_cast<int64_t>(c.tokens.size());
      ASSERT_EQ(static_cast<int64_t>(got.size()), T * V);
      const Stats s = Compare(got.data(), gold.data.data() + c.row_offset * V, T, V);
      ExpectExactTier(s, Name(src) + " " + mode.name + " case " + std::to_string(c.id));
      total.Add(s);
      std::copy(got.begin(), got.end(), all.begin() + c.row_offset * V);
    }
    Report(Name(src) + " " + mode.name, total);
    if (prefill_all.empty()) {
      prefill_all = all;
    } else {
      // Inside the engine, every mode gives the prefill logits (README: exact math, ≤ 1e-4).
      const Stats d = Compare(all.data(), prefill_all.data(), o.rows, V, 0.0);
      EXPECT_LE(d.max_abs, 1e-4) << mode.name << " vs prefill: " << d.ToString();
      Report(Name(src) + " " + mode.name + " vs prefill", d);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, OracleForward,
                         ::testing::Values(Source{"tiny-e2b", "model.safetensors", "ref"},
                                           Source{"tiny-e2b", "model-bf16.gguf", "ref"},
                                           Source{"tiny-e2b", "model-f32.gguf", "ref"},
                                           Source{"tiny-e4b", "model.safetensors", "ref"},
                                           Source{"tiny-e4b", "model-bf16.gguf", "ref"},
                                           Source{"tiny-e2b", "model-q8_0.gguf", "ref-q8_0"},
                                           Source{"tiny-e2b", "model-q4_0.gguf", "ref-q4_0"},
                                           Source{"tiny-e4b", "model-q8_0.gguf", "ref-q8_0"},
                                           Source{"tiny-e4b", "model-q4_0.gguf", "ref-q4_0"}),
                         [](const ::testing::TestParamInfo<Source>& info) {
                           std::string n = std::string(info.param.variant) + "_" + info.param.file;
                           for (char& ch : n) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace oracle_forward_test
}  // namespace gemlet::oracle
