// Building blocks of the Gemma 4 chat template port (chat_format.cc): the Jinja macros of
// shared/tokenizer/gemma4/chat_template.jinja and the Jinja/Python value semantics they rely
// on. A `const json*` that is nullptr stands for Jinja's Undefined (a missing key). Internal.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace gemlet::chat_internal {

using json = nlohmann::json;

// obj[key] if obj is a mapping holding key, else Undefined.
const json* Get(const json* obj, const char* key);
// Python truthiness; Undefined is false.
bool Truthy(const json* v);
// Python str() of a value, as {{ value }} prints it.
std::string PyStr(const json& v);
// {{ value }} of a possibly undefined value (Undefined prints nothing).
std::string Print(const json* v);
// `| upper` (ASCII letters).
std::string Upper(std::string s);
// `| trim`: Python str.strip() (Unicode whitespace).
std::string Trim(std::string_view s);
// `| dictsort`: items sorted by key, case-insensitively, stable.
std::vector<std::pair<std::string, const json*>> DictSort(const json& obj);
// Jinja `a == b` on values read with .get() (missing and null are both None).
bool SameValue(const json* a, const json* b);

// macro format_argument
std::string FormatArgument(const json* arg, bool escape_keys);
// macro format_function_declaration (before the caller's `| trim`). `where` names the tool.
Result<std::string> FormatDeclaration(const json& tool, const std::string& where);
// macro strip_thinking
std::string StripThinking(const std::string& text);
// macro format_tool_response_block
std::string ToolResponseBlock(const std::string& name, const json* response);
// The `key:value,...` of a tool call's arguments (a mapping, null, or a JSON-encoded mapping).
Result<std::string> FormatCallArguments(const json* args, const std::string& where);
// The `captured_content` block: string or list-of-parts content of a message.
Result<std::string> RenderContent(const json* content, bool model, const std::string& where);

}  // namespace gemlet::chat_internal
