// `gemlet perplexity` against the negative log-likelihoods computed here from `gemlet logits`
// of the same chunks (<bos> + up to ctx − 1 text tokens each).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "format/npy.h"
#include "text/tokenizer.h"

namespace gemlet::cli {
namespace perplexity_test {

const std::string& Dir() {
  static const std::string d = [] {
    const std::string p = ::testing::TempDir() + "/perplexity_test." + std::to_string(::getpid());
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

int Gemlet(const std::string& args, std::string* output) {
  const std::string out = Dir() + "/out";
  const int rc = std::system((std::string(GEMLET_BINARY) + " " + args + " >" + out + " 2>" + out + ".err").c_str());
  auto text = ReadFileToString(out);
  *output = text.ok() ? *text : "";
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const std::string& Model() {
  static const std::string m = [] {
    std::string log;
    EXPECT_EQ(Gemlet("synth --preset tiny --seed 3 -o " + Dir() + "/src -q", &log), 0);
    EXPECT_EQ(Gemlet("convert " + Dir() + "/src -o " + Dir() + "/tiny.gemlet --quiet", &log), 0);
    return Dir() + "/tiny.gemlet";
  }();
  return m;
}

// Σ −log softmax(logits[t])[ids[t + 1]] over the rows of one chunk, from `gemlet logits`.
double ChunkNll(const std::vector<int32_t>& chunk) {
  std::string list, log;
  for (int32_t id : chunk) list += (list.empty() ? "" : ",") + std::to_string(id);
  const std::string npy = Dir() + "/chunk.npy";
  EXPECT_EQ(Gemlet("logits -m " + Model() + " --tokens " + list + " -o " + npy, &log), 0) << log;
  auto a = ReadNpy(npy);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  const int64_t V = a->shape[1];
  double nll = 0;
  for (size_t t = 0; t + 1 < chunk.size(); ++t) {
    const float* row = a->data.data() + t * V;
    double mx = row[0], s = 0;
    for (int64_t i = 0; i < V; ++i) mx = std::max<double>(mx, row[i]);
    for (int64_t i = 0; i < V; ++i) s += std::exp(row[i] - mx);
    nll += std::log(s) + mx - row[chunk[t + 1]];
  }
  return nll;
}

TEST(Perplexity, MatchesTheLogitsOfEveryChunk) {
  const std::string text_path = Dir() + "/text.txt";
  const std::string text = "The quick brown fox jumps over the lazy dog.\nIt was the best of times.";
  std::ofstream(text_path) << text;
  auto file = GemletFile::Open(Model());
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::FromGemlet(**file);
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> ids = *tok->Encode(text);
  ASSERT_GT(ids.size(), 20u);

  for (int64_t ctx : {int64_t{512}, int64_t{9}}) {
    double nll = 0;
    int64_t scored = 0;
    for (size_t b = 0; b < ids.size(); b += ctx - 1) {
      std::vector<int32_t> chunk = {tok->bos_id()};
      chunk.insert(chunk.end(), ids.begin() + b, ids.begin() + std::min(ids.size(), b + ctx - 1));
      nll += ChunkNll(chunk);
      scored += static_cast<int64_t>(chunk.size()) - 1;
    }
    std::string out;
    ASSERT_EQ(Gemlet("perplexity -m " + Model() + " -f " + text_path + " --ctx " + std::to_string(ctx) +
                         " --chunk 4 --json -q",
                     &out),
              0)
        << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["tokens_scored"].get<int64_t>(), scored);
    EXPECT_EQ(j["text_tokens"].get<int64_t>(), static_cast<int64_t>(ids.size()));
    EXPECT_NEAR(j["mean_nll"].get<double>(), nll / scored, 1e-4) << "ctx " << ctx;
    EXPECT_NEAR(j["perplexity"].get<double>(), std::exp(nll / scored), 1e-4 * std::exp(nll / scored));
  }
}

TEST(Perplexity, ErrorsAreOneLineWithTheExitCode) {
  std::string out;
  EXPECT_EQ(Gemlet("perplexity -m " + Model(), &out), 2);
  EXPECT_EQ(Gemlet("perplexity -m " + Model() + " -f " + Dir() + "/missing.txt", &out), 1);
  auto err = ReadFileToString(Dir() + "/out.err");
  ASSERT_TRUE(err.ok());
  EXPECT_NE(err->find("missing.txt"), std::string::npos) << *err;
  EXPECT_EQ(std::count(err->begin(), err->end(), '\n'), 1) << *err;
}

}  // namespace perplexity_test
}  // namespace gemlet::cli
