// --grammar FILE and --json-schema FILE|JSON, shared by `run` and `chat`: the GBNF that the
// output must match (grammar-constrained decoding, runtime/grammar_constraint.h).
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "tools/cli/command.h"

namespace gemlet::cli {

// The flags' help lines, spliced into the commands' usage texts (a literal, so that it
// concatenates).
#define GEMLET_GRAMMAR_FLAGS_HELP                                                                 \
  "  --grammar FILE          the output must match this GBNF grammar (llama.cpp's format,\n"    \
  "                          start rule root); a control token is the code point U+100000 + id\n" \
  "  --json-schema S         the output must be JSON valid against this JSON Schema (a file,\n"  \
  "                          or the schema itself when S starts with '{'); see\n"              \
  "                          docs/structured-output.md\n"

struct GrammarFlags {
  std::optional<std::string> grammar_file;
  std::optional<std::string> json_schema;
};

GrammarFlags ReadGrammarFlags(Flags& flags);

// The GBNF of the flags ("" when neither is given). InvalidArgument (a usage error, exit 2)
// when both are given, a file cannot be read, or the schema is not valid or uses what is not
// supported (the message names the JSON pointer), or the grammar's syntax is wrong (line and
// column).
Result<std::string> GrammarFlagsToGbnf(const GrammarFlags& flags);

}  // namespace gemlet::cli
