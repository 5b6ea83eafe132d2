// libFuzzer target: JSON Schema → GBNF (grammar/json_schema.h) on arbitrary bytes. The bytes
// are parsed as JSON (not JSON: nothing to do); a schema the converter accepts must give a
// grammar that ParseGbnf compiles (only its size and nesting limits may refuse it), and a
// random text of that grammar (a short walk over the matcher) must be JSON.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/grammar_sampler_test_util.h"
#include "grammar/json_schema.h"

namespace {

void Require(bool ok, const char* what, const std::string& detail) {
  if (!ok) {
    std::fprintf(stderr, "json_schema_fuzz: %s\n%s\n", what, detail.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::ordered_json schema =
      nlohmann::ordered_json::parse(data, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  auto gbnf = gemlet::grammar::JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) {
    Require(gbnf.status().message().rfind("json schema #", 0) == 0,
            "an error without the schema's JSON pointer", gbnf.status().message());
    return 0;
  }
  auto grammar = gemlet::grammar::ParseGbnf(*gbnf);
  if (!grammar.ok()) {
    const std::string& m = grammar.status().message();
    Require(m.find("too large") != std::string::npos || m.find("nested deeper") != std::string::npos,
            "the converter's grammar does not parse", m + "\n" + *gbnf);
    return 0;
  }
  auto g = std::make_shared<const gemlet::grammar::Grammar>(std::move(grammar).value());
  std::mt19937_64 rng(size);
  auto text = gemlet::grammar::testing::SampleText(g, rng, /*max_bytes=*/2000);
  if (text) Require(nlohmann::json::accept(*text), "a text of the grammar is not JSON", *text);
  return 0;
}
