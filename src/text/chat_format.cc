// RenderChat mirrors the body of shared/tokenizer/gemma4/chat_template.jinja ("SETUP", the
// system block, the message loop, the generation prompt); the macros live in
// chat_template_macros.cc.
#include "text/chat_format.h"

#include <optional>

#include "format/gemma4_tokens.h"
#include "text/chat_template_macros.h"

namespace gemlet {

using namespace chat_internal;  // NOLINT: the template's vocabulary

namespace {

enum class Prev { kNone, kThink, kTool, kToolCall, kToolResponse };

std::string Where(size_t i) { return "messages[" + std::to_string(i) + "]"; }

const std::string* Role(const json& m) {
  const json* r = Get(&m, "role");
  return r && r->is_string() ? &r->get_ref<const std::string&>() : nullptr;
}

}  // namespace

Result<ChatOptions> ChatOptionsFromJson(const json& options) {
  ChatOptions o;
  if (options.is_null()) return o;
  if (!options.is_object()) return InvalidArgument("chat options must be a JSON object");
  for (const auto& [key, field] : {std::pair{"add_generation_prompt", &o.add_generation_prompt},
                                   std::pair{"enable_thinking", &o.enable_thinking},
                                   std::pair{"preserve_thinking", &o.preserve_thinking}}) {
    const json* v = Get(&options, key);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_boolean())
      return InvalidArgument(std::string("chat option \"") + key + "\" must be true or false");
    *field = v->get<bool>();
  }
  const json* tools = Get(&options, "tools");
  if (tools && !tools->is_null()) {
    if (!tools->is_array()) return InvalidArgument("chat option \"tools\" must be a list");
    o.tools = *tools;
  }
  return o;
}

json ToJson(const ChatMessage& m) {
  json j = {{"role", m.role}, {"content", m.content}};
  if (!m.reasoning.empty()) j["reasoning"] = m.reasoning;
  if (!m.tool_calls.empty()) {
    json calls = json::array();
    for (const ChatToolCall& c : m.tool_calls) {
      json call = {{"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
      if (!c.id.empty()) call["id"] = c.id;
      calls.push_back(std::move(call));
    }
    j["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) j["name"] = m.name;
  return j;
}

Result<ChatMessage> ChatMessageFromJson(const json& j) {
  ChatMessage m;
  if (!j.is_object()) return InvalidArgument("a chat message must be a JSON object");
  auto str = [&](const char* key, std::string* out) -> Status {
    const json* v = Get(&j, key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    if (!v->is_string())
      return InvalidArgument(std::string("chat message \"") + key + "\" must be a string");
    *out = v->get<std::string>();
    return Status::Ok();
  };
  RETURN_IF_ERROR(str("role", &m.role));
  if (m.role.empty()) return InvalidArgument("a chat message has no \"role\"");
  const json* content = Get(&j, "content");
  if (content && content->is_array()) {  // text parts only
    for (const json& part : *content) {
      if (Print(Get(&part, "type")) == "text") m.content += Print(Get(&part, "text"));
    }
  } else {
    RETURN_IF_ERROR(str("content", &m.content));
  }
  RETURN_IF_ERROR(str("reasoning", &m.reasoning));
  if (m.reasoning.empty()) RETURN_IF_ERROR(str("reasoning_content", &m.reasoning));
  RETURN_IF_ERROR(str("tool_call_id", &m.tool_call_id));
  RETURN_IF_ERROR(str("name", &m.name));
  const json* calls = Get(&j, "tool_calls");
  if (calls && !calls->is_null()) {
    if (!calls->is_array()) return InvalidArgument("chat message \"tool_calls\" must be a list");
    for (const json& c : *calls) {
      ChatToolCall call;
      const json* fn = Get(&c, "function");
      const json* name = Get(fn, "name");
      if (name == nullptr || !name->is_string()) {
        return InvalidArgument("a tool call has no function name");
      }
      call.name = name->get<std::string>();
      if (const json* id = Get(&c, "id"); id && id->is_string()) call.id = id->get<std::string>();
      const json* args = Get(fn, "arguments");
      if (args && args->is_string()) {
        call.arguments = json::parse(args->get<std::string>(), nullptr, false);
        if (call.arguments.is_discarded() || !call.arguments.is_object()) {
          return InvalidArgument("tool call '" + call.name + "': arguments are not a JSON object");
        }
      } else if (args && (args->is_object() || args->is_null())) {
        call.arguments = *args;
      } else {
        return InvalidArgument("tool call '" + call.name + "': arguments are not a JSON object");
      }
      m.tool_calls.push_back(std::move(call));
    }
  }
  return m;
}

Result<std::string> RenderChat(const std::vector<ChatMessage>& messages,
                               const ChatOptions& options) {
  json j = json::array();
  for (const ChatMessage& m : messages) j.push_back(ToJson(m));
  return RenderChat(j, options);
}

Result<std::string> RenderChat(const json& messages, const ChatOptions& options) {
  ASSIGN_OR_RETURN(RenderedChat rendered, RenderChatPrompt(messages, options));
  return std::move(rendered.text);
}

Result<RenderedChat> RenderChatPrompt(const std::vector<ChatMessage>& messages,
                                      const ChatOptions& options) {
  json j = json::array();
  for (const ChatMessage& m : messages) j.push_back(ToJson(m));
  return RenderChatPrompt(j, options);
}

Result<RenderedChat> RenderChatPrompt(const json& messages, const ChatOptions& options) {
  if (!messages.is_array()) return InvalidArgument("messages must be a list");
  for (size_t i = 0; i < messages.size(); ++i) {
    if (Role(messages[i]) == nullptr) return InvalidArgument(Where(i) + " has no \"role\" string");
  }
  if (!options.tools.is_null() && !options.tools.is_array()) {
    return InvalidArgument("tools must be a list");
  }
  const bool tools = Truthy(&options.tools);
  const bool thinking = options.enable_thinking;
  Prev prev = Prev::kNone;
  std::optional<std::string> prev_non_tool_role;
  if (options.forced_tool_call == ForcedToolCall::kFunction && options.forced_function.empty()) {
    return InvalidArgument("a forced tool call names no function");
  }
  RenderedChat rendered;
  std::string& out = rendered.text;
  out = options.bos_token;

  // System/tool definitions block.
  const bool first_system =
      !messages.empty() && (*Role(messages[0]) == "system" || *Role(messages[0]) == "developer");
  size_t begin = 0;
  if (thinking || tools || first_system) {
    out += gemma4::kTurnOpen;
    out += "system\n";
    if (thinking) {
      out += gemma4::kThink;
      out += "\n";
      prev = Prev::kThink;
    }
    if (first_system) {
      const json* c = Get(&messages[0], "content");
      if (c && c->is_string()) {
        out += Trim(c->get<std::string>());
      } else if (c && (c->is_array() || c->is_object())) {
        if (c->is_array()) {
          for (const json& item : *c) out += Trim(Print(Get(&item, "text"))) + " ";
        } else {
          for (size_t k = 0; k < c->size(); ++k) out += " ";  // iterating a mapping: its keys
        }
      }
      begin = 1;
    }
    if (tools) {
      for (size_t t = 0; t < options.tools.size(); ++t) {
        ASSIGN_OR_RETURN(std::string decl,
                         FormatDeclaration(options.tools[t], "tools[" + std::to_string(t) + "]"));
        out += gemma4::kToolOpen;
        out += Trim(decl);
        out += gemma4::kToolClose;
      }
      prev = Prev::kTool;
    }
    out += gemma4::kTurnClose;
    out += "\n";
    rendered.shared_prefix_chars = out.size();
  }

  // loop_messages and the last user index within them.
  const size_t n = messages.size() - std::min(begin, messages.size());
  auto msg = [&](size_t i) -> const json& { return messages[begin + i]; };
  auto role_of = [&](size_t i) -> const std::string& { return *Role(msg(i)); };
  long last_user = -1;
  for (size_t i = 0; i < n; ++i) {
    if (role_of(i) == "user") last_user = static_cast<long>(i);
  }

  for (size_t i = 0; i < n; ++i) {
    const json& m = msg(i);
    const std::string& raw_role = role_of(i);
    if (raw_role == "tool") continue;
    const std::string where = Where(begin + i);
    prev = Prev::kNone;
    const std::string role = raw_role == "assistant" ? "model" : raw_role;
    const bool continue_same_model_turn = role == "model" && prev_non_tool_role == "assistant";
    if (!continue_same_model_turn) {
      out += gemma4::kTurnOpen;
      out += role + "\n";
    }

    // Reasoning as a thought channel, only after the last user message.
    const json* reasoning = Get(&m, "reasoning");
    if (!Truthy(reasoning)) reasoning = Get(&m, "reasoning_content");
    const json* tool_calls = Get(&m, "tool_calls");
    const bool gate =
        static_cast<long>(i) > last_user || (options.preserve_thinking && Truthy(tool_calls));
    if (Truthy(reasoning) && gate) {
      if (!reasoning->is_string()) return InvalidArgument(where + ": reasoning must be a string");
      out += gemma4::kChannelOpen;
      out += gemma4::kThoughtHeader;
      out += reasoning->get<std::string>() + "\n";
      out += gemma4::kChannelClose;
    }

    if (Truthy(tool_calls)) {
      if (!tool_calls->is_array()) return InvalidArgument(where + ": tool_calls must be a list");
      for (size_t c = 0; c < tool_calls->size(); ++c) {
        const json& call = (*tool_calls)[c];
        const std::string cwhere = where + ".tool_calls[" + std::to_string(c) + "]";
        const json* name = Get(Get(&call, "function"), "name");
        if (name == nullptr || !name->is_string())
          return InvalidArgument(cwhere + " has no function name");
        ASSIGN_OR_RETURN(std::string args,
                         FormatCallArguments(Get(Get(&call, "function"), "arguments"), cwhere));
        out += gemma4::kToolCallOpen;
        out += gemma4::kCallPrefix;
        out += name->get<std::string>() + "{" + args + "}";
        out += gemma4::kToolCallClose;
      }
      prev = Prev::kToolCall;
    }

    bool responded = false;  // ns_tr_out.flag
    const json* tool_responses = Get(&m, "tool_responses");
    if (Truthy(tool_responses)) {  // legacy: responses embedded in the assistant message
      if (!tool_responses->is_array())
        return InvalidArgument(where + ": tool_responses must be a list");
      for (const json& r : *tool_responses) {
        const json* name = Get(&r, "name");
        out += ToolResponseBlock(Truthy(name) ? PyStr(*name) : "unknown", Get(&r, "response"));
        responded = true;
        prev = Prev::kToolResponse;
      }
    } else if (Truthy(tool_calls)) {  // OpenAI: the role "tool" messages that follow
      for (size_t k = i + 1; k < n && role_of(k) == "tool"; ++k) {
        const json& follow = msg(k);
        const json* fname = Get(&follow, "name");
        std::string tname = Truthy(fname) ? PyStr(*fname) : "unknown";
        for (const json& call : *tool_calls) {
          if (SameValue(Get(&call, "id"), Get(&follow, "tool_call_id"))) {
            tname = Print(Get(Get(&call, "function"), "name"));
          }
        }
        const json* body = Get(&follow, "content");
        if (body && body->is_array()) {
          std::string text;
          for (const json& part : *body) {
            if (Print(Get(&part, "type")) == "text") {
              const json* t = Get(&part, "text");
              if (t && !t->is_null()) text += PyStr(*t);
            }
          }
          const json text_json = text;
          out += ToolResponseBlock(tname, &text_json);
          for (const json& part : *body) {
            const std::string type = Print(Get(&part, "type"));
            if (type == "image" || type == "image_url") out += gemma4::kImage;
            if (type == "audio" || type == "input_audio") out += gemma4::kAudio;
            if (type == "video") out += gemma4::kVideo;
          }
        } else {
          static const json kNone;  // .get() of a missing key is None
          out += ToolResponseBlock(tname, body ? body : &kNone);
        }
        responded = true;
        prev = Prev::kToolResponse;
      }
    }

    ASSIGN_OR_RETURN(std::string content,
                     RenderContent(Get(&m, "content"), role == "model", where));
    out += content;
    const bool has_content = !Trim(content).empty();

    // The next non-tool message decides whether this turn continues.
    const std::string* next_role = nullptr;
    for (size_t j = i + 1; j < n; ++j) {
      if (role_of(j) != "tool") {
        next_role = &role_of(j);
        break;
      }
    }
    const bool continues_into_next = role == "model" && next_role && *next_role == "assistant" &&
                                     (!Truthy(tool_calls) || responded);
    if (prev == Prev::kToolCall && !responded) {
      out += gemma4::kToolResponseOpen;
    } else if (continues_into_next) {
      // the next assistant message continues this model turn
    } else if (!(responded && !has_content && next_role == nullptr)) {
      out += gemma4::kTurnClose;
      out += "\n";
    }
    prev_non_tool_role = raw_role;
  }

  if (options.add_generation_prompt) {
    if (prev != Prev::kToolResponse && prev != Prev::kToolCall) {
      out += gemma4::kTurnOpen;
      out += "model\n";
    } else if (prev == Prev::kToolResponse && thinking) {
      out += gemma4::kChannelOpen;
      out += gemma4::kThoughtHeader;
    }
  }
  // A forced tool call: the reply starts with the call's opening, written into the prompt.
  if (options.forced_tool_call != ForcedToolCall::kNone) {
    rendered.reply_prefix = std::string(gemma4::kToolCallOpen) + std::string(gemma4::kCallPrefix);
    if (options.forced_tool_call == ForcedToolCall::kFunction) {
      rendered.reply_prefix += options.forced_function + "{";
    }
    out += rendered.reply_prefix;
  }
  return rendered;
}

}  // namespace gemlet
