// The grammar of Gemma 4 tool calls, for constrained decoding (grammar/, runtime/
// grammar_constraint.h): "<|tool_call>call:NAME{key:value,...}<tool_call|>" where NAME is a
// declared function and the arguments are valid against its parameter schema, written in
// Gemma's argument syntax (bare keys, strings between <|"|> quotes, no whitespace; see
// tool_call_syntax.h, which reads them back). Control tokens are grammar symbols
// (grammar/token_symbols.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "grammar/json_grammar.h"

namespace gemlet {

struct ToolCallGrammarOptions {
  enum class Form {
    kCalls,      // 1..max_calls whole calls, each with its opening and closing token
    kAfterOpen,  // one call from after its opening token: "call:NAME{...}<tool_call|>"
  };
  Form form = Form::kCalls;
  int max_calls = 1;   // kCalls: calls in a row at most (parallel tool calls)
  std::string only;    // a function name: calls to it alone
  std::string start = "tool-calls";  // the start rule; every rule is named "tool-..."
};

// Gemma 4's argument syntax as a grammar::JsonSyntax (shared with the grammar tests).
grammar::JsonSyntax GemmaArgumentSyntax();

// `functions`: [{"name": ..., "parameters": JSON Schema}, ...] (a missing or null
// "parameters" takes no arguments: {}). Errors: InvalidArgument naming the function and the
// schema's JSON pointer (an unsupported keyword), or an unknown `only`.
Result<std::string> ToolCallGrammar(const nlohmann::json& functions, const ToolCallGrammarOptions& options);

}  // namespace gemlet
