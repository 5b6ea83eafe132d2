// Writes random documents of the test schemas' grammars, for tests/grammar/validate_samples.mjs
// (ajv) to validate: for each SCHEMA_DIR/NAME.json, N documents OUT_DIR/NAME/NNN.json, made by
// JsonSchemaTextToGbnf → ParseGbnf → the matcher's random walk (grammar_sampler_test_util.h).
// Each document must also parse with nlohmann::json. Exit status 1 on any failure.
//   json_schema_samples SCHEMA_DIR OUT_DIR [N=50] [SEED=1]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/grammar_sampler_test_util.h"
#include "grammar/json_schema.h"

namespace fs = std::filesystem;
using namespace gemlet::grammar;

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::fprintf(stderr, "usage: %s SCHEMA_DIR OUT_DIR [N=50] [SEED=1]\n", argv[0]);
    return 2;
  }
  const fs::path schema_dir = argv[1], out_dir = argv[2];
  const int n = argc > 3 ? std::atoi(argv[3]) : 50;
  const uint64_t seed = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(schema_dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int failures = 0;
  for (const fs::path& file : files) {
    const std::string name = file.stem().string();
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto gbnf = JsonSchemaTextToGbnf(text.str());
    if (!gbnf.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), gbnf.status().message().c_str());
      ++failures;
      continue;
    }
    auto grammar = ParseGbnf(*gbnf);
    if (!grammar.ok()) {
      std::fprintf(stderr, "%s: the grammar does not parse: %s\n%s", name.c_str(),
                   grammar.status().message().c_str(), gbnf->c_str());
      ++failures;
      continue;
    }
    auto g = std::make_shared<const Grammar>(std::move(grammar).value());
    fs::create_directories(out_dir / name);
    std::mt19937_64 rng(seed * 1000003 + std::hash<std::string>{}(name));
    for (int i = 0; i < n; ++i) {
      std::string partial;
      std::optional<std::string> doc = testing::SampleText(g, rng, 20000, &partial);
      if (!doc) {
        std::fprintf(stderr, "%s: sample %d: the walk did not finish: %.300s\n", name.c_str(), i,
                     partial.c_str());
        ++failures;
        continue;
      }
      if (!nlohmann::json::accept(*doc)) {
        std::fprintf(stderr, "%s: sample %d is not JSON: %s\n", name.c_str(), i, doc->c_str());
        ++failures;
      }
      char buf[32];
      std::snprintf(buf, sizeof buf, "%03d.json", i);
      std::ofstream(out_dir / name / buf, std::ios::binary) << *doc;
    }
  }
  std::printf("json_schema_samples: %zu schemas x %d documents, %d failures\n", files.size(), n,
              failures);
  return failures ? 1 : 0;
}
