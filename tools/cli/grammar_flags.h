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
#define GEMLET_GRAMMAR_FLAGS_HELP \
  R"(  --grammar FILE          the output must match this GBNF grammar (llama.cpp's format;
                          start rule `root`); control tokens are written \U00100000 + id
  --json-schema S         the output must be JSON valid against this JSON Schema (a file,
                          or the schema itself when S starts with '{'); see docs/structured-output.md
)"

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
