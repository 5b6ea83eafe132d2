#include "tools/cli/grammar_flags.h"

#include "base/mapped_file.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace gemlet::cli {

GrammarFlags ReadGrammarFlags(Flags& flags) {
  GrammarFlags g;
  g.grammar_file = flags.Str({"--grammar"});
  g.json_schema = flags.Str({"--json-schema"});
  return g;
}

Result<std::string> GrammarFlagsToGbnf(const GrammarFlags& g) {
  if (g.grammar_file && g.json_schema) return InvalidArgument("give --grammar or --json-schema, not both");
  if (g.grammar_file) {
    auto text = ReadFileToString(*g.grammar_file);
    if (!text.ok()) return InvalidArgument("--grammar: " + text.status().message());
    if (text->empty()) return InvalidArgument("--grammar " + *g.grammar_file + ": the file is empty");
    // Its syntax now, before any model is loaded (the same parse as GrammarConstraint's).
    auto parsed = grammar::ParseGbnf(*text);
    if (!parsed.ok()) return InvalidArgument("--grammar " + *g.grammar_file + ": " + parsed.status().message());
    return std::move(text).value();
  }
  if (g.json_schema) {
    std::string schema = *g.json_schema;
    const size_t first = schema.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || schema[first] != '{') {
      auto text = ReadFileToString(schema);
      if (!text.ok()) return InvalidArgument("--json-schema: " + text.status().message());
      schema = std::move(text).value();
    }
    auto gbnf = grammar::JsonSchemaTextToGbnf(schema);
    if (!gbnf.ok()) return InvalidArgument("--json-schema: " + gbnf.status().message());
    return std::move(gbnf).value();
  }
  return std::string();
}

}  // namespace gemlet::cli
