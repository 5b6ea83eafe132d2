#include "text/tool_call_grammar.h"

#include "format/gemma4_tokens.h"
#include "grammar/json_schema.h"
#include "grammar/token_symbols.h"
#include "text/chat_template_macros.h"

namespace gemlet {
namespace {

// A GBNF literal of plain ASCII text.
std::string Lit(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Every <|"|> in `text` as the quote's symbol.
std::string WithQuoteSymbol(std::string text) {
  const std::string sym = grammar::TokenSymbolUtf8(gemma4::kQuoteId);
  for (size_t at = 0; (at = text.find(gemma4::kQuote, at)) != std::string::npos; at += sym.size()) {
    text.replace(at, gemma4::kQuote.size(), sym);
  }
  return text;
}

}  // namespace

grammar::JsonSyntax GemmaArgumentSyntax() {
  grammar::JsonSyntax s;
  s.quote = grammar::TokenSymbolUtf8(gemma4::kQuoteId);
  s.raw_strings = true;
  s.raw_exclude = grammar::TokenSymbolRange();  // the quote and every other control token
  s.bare_keys = true;
  s.whitespace = false;
  // The chat template's spelling of a value (format_argument), quotes as the symbol.
  s.write = [](const nlohmann::ordered_json& v) {
    const nlohmann::json plain = v;
    return WithQuoteSymbol(chat_internal::FormatArgument(&plain, /*escape_keys=*/false));
  };
  return s;
}

Result<std::string> ToolCallGrammar(const nlohmann::json& functions, const ToolCallGrammarOptions& o) {
  if (!functions.is_array() || functions.empty()) return InvalidArgument("tool-call grammar: no functions");
  const std::string p = "tool-";
  std::string rules;
  std::string alts;
  bool found_only = o.only.empty();
  for (size_t i = 0; i < functions.size(); ++i) {
    const nlohmann::json& f = functions[i];
    const std::string name = f.value("name", "");
    if (name.empty()) return InvalidArgument("tool-call grammar: function " + std::to_string(i) + " has no name");
    if (!o.only.empty() && name != o.only) continue;
    found_only = true;
    nlohmann::json params = nlohmann::json::object();
    if (f.contains("parameters") && !f["parameters"].is_null()) params = f["parameters"];
    // An empty or absent schema: an object without arguments (the call's braces are Gemma's).
    if (params.is_object() && params.empty()) params = {{"type", "object"}, {"additionalProperties", false}};
    grammar::JsonSchemaOptions so;
    so.syntax = GemmaArgumentSyntax();
    so.prefix = p + "f" + std::to_string(i) + "-";
    auto g = grammar::JsonSchemaToGbnf(params, so);
    if (!g.ok()) return InvalidArgument("function '" + name + "' parameters: " + g.status().message());
    rules += *g;
    alts += std::string(alts.empty() ? "" : " | ") + Lit(name) + " " + so.prefix + "root";
  }
  if (!found_only) return InvalidArgument("tool-call grammar: no function named '" + o.only + "'");
  const std::string open = "\"" + grammar::TokenSymbolGbnf(gemma4::kToolCallOpenId) + "\"";
  const std::string close = "\"" + grammar::TokenSymbolGbnf(gemma4::kToolCallCloseId) + "\"";
  std::string out;
  out += p + "body ::= " + Lit(std::string(gemma4::kCallPrefix)) + " ( " + alts + " ) " + close + "\n";
  if (o.form == ToolCallGrammarOptions::Form::kAfterOpen) {
    out += o.start + " ::= " + p + "body\n";
  } else {
    const int n = std::max(1, o.max_calls);
    out += p + "call ::= " + open + " " + p + "body\n";
    out += o.start + " ::= " + p + "call" + (n == 1 ? "" : "{1," + std::to_string(n) + "}") + "\n";
  }
  return out + rules;
}

}  // namespace gemlet
