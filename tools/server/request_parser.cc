#include "tools/server/request_parser.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "tools/server/audio_part.h"
#include "tools/server/image_part.h"

namespace gemlet::server {
namespace {

const char* TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

ApiError WrongType(const std::string& param, const char* want, const Json& got) {
  return BadRequest("'" + param + "' must be " + want + ", got " + TypeName(got), param,
                    "invalid_type");
}

// Field readers: absent or null leaves the output untouched and returns no error.
std::optional<ApiError> ReadBool(const Json& obj, const char* key, const std::string& path,
                                 bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return WrongType(path, "a boolean", *it);
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> ReadString(const Json& obj, const char* key, const std::string& path,
                                   std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return WrongType(path, "a string", *it);
  *out = it->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> ReadNumber(const Json& obj, const char* key, double lo, double hi,
                                   std::optional<double>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return WrongType(key, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return BadRequest("'" + std::string(key) + "' must be between " + Json(lo).dump() + " and " +
                          Json(hi).dump() + ", got " + it->dump(),
                      key, "invalid_value");
  }
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> ReadInt(const Json& obj, const char* key, int64_t lo, int64_t hi,
                                std::optional<int64_t>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  bool integral = it->is_number_integer();
  if (it->is_number_float()) {  // 5.0 is accepted as 5, as JavaScript clients send it
    const double d = it->get<double>();
    integral = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15;
  }
  if (!integral) return WrongType(key, "an integer", *it);
  int64_t v;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    v = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
            ? std::numeric_limits<int64_t>::max()
            : static_cast<int64_t>(u);
  } else if (it->is_number_float()) {
    v = static_cast<int64_t>(it->get<double>());
  } else {
    v = it->get<int64_t>();
  }
  if (v < lo || v > hi) {
    return BadRequest("'" + std::string(key) + "' must be between " + std::to_string(lo) +
                          " and " + std::to_string(hi) + ", got " + it->dump(),
                      key, "invalid_value");
  }
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> ReadSampling(const Json& b, SamplingOptions* s) {
  if (auto e = ReadNumber(b, "temperature", 0, 2, &s->temperature)) return e;
  if (auto e = ReadNumber(b, "top_p", 0, 1, &s->top_p)) return e;
  std::optional<int64_t> top_k;
  if (auto e = ReadInt(b, "top_k", 0, 1 << 30, &top_k)) return e;
  if (top_k) s->top_k = *top_k;
  if (auto e = ReadNumber(b, "min_p", 0, 1, &s->min_p)) return e;
  std::optional<double> pen;
  if (auto e = ReadNumber(b, "presence_penalty", -2, 2, &pen)) return e;
  if (pen) s->presence_penalty = *pen;
  pen.reset();
  if (auto e = ReadNumber(b, "frequency_penalty", -2, 2, &pen)) return e;
  if (pen) s->frequency_penalty = *pen;
  auto lb = b.find("logit_bias");
  if (lb != b.end() && !lb->is_null()) {
    if (!lb->is_object()) return WrongType("logit_bias", "an object", *lb);
    if (lb->size() > 1024) {
      return BadRequest("'logit_bias' has more than 1024 entries", "logit_bias", "invalid_value");
    }
    for (const auto& [key, value] : lb->items()) {
      const std::string path = "logit_bias." + key;
      char* end = nullptr;
      errno = 0;
      const long long id = std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || errno != 0 || id < 0 ||
          id > std::numeric_limits<int32_t>::max() || !std::isdigit(static_cast<unsigned char>(key[0]))) {
        return BadRequest("'logit_bias' keys must be token ids, got '" + key + "'", "logit_bias",
                          "invalid_value");
      }
      if (!value.is_number()) return WrongType(path, "a number", value);
      const double v = value.get<double>();
      if (!std::isfinite(v) || v < -100 || v > 100) {
        return BadRequest("'" + path + "' must be between -100 and 100", "logit_bias", "invalid_value");
      }
      s->logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(v));
    }
  }
  // seed: any integer that fits 64 bits (negative seeds wrap, as in OpenAI's Python client).
  auto it = b.find("seed");
  if (it != b.end() && !it->is_null()) {
    if (!it->is_number_integer()) return WrongType("seed", "an integer", *it);
    s->seed = it->is_number_unsigned() ? it->get<uint64_t>()
                                       : static_cast<uint64_t>(it->get<int64_t>());
  }
  return std::nullopt;
}

std::optional<ApiError> ReadStop(const Json& b, const ParseLimits& limits,
                                 std::vector<std::string>* out) {
  auto it = b.find("stop");
  if (it == b.end() || it->is_null()) return std::nullopt;
  std::vector<const Json*> items;
  if (it->is_string()) {
    items.push_back(&*it);
  } else if (it->is_array()) {
    if (it->size() > limits.max_stop) {
      return BadRequest("'stop' has " + std::to_string(it->size()) + " entries; at most " +
                            std::to_string(limits.max_stop) + " are allowed",
                        "stop", "invalid_value");
    }
    for (const Json& s : *it) items.push_back(&s);
  } else {
    return WrongType("stop", "a string or an array of strings", *it);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& s = *items[i];
    const std::string path = it->is_array() ? "stop[" + std::to_string(i) + "]" : "stop";
    if (!s.is_string()) return WrongType(path, "a string", s);
    std::string v = s.get<std::string>();
    if (v.size() > limits.max_stop_bytes) {
      return BadRequest("'" + path + "' is longer than " + std::to_string(limits.max_stop_bytes) +
                            " bytes",
                        path, "invalid_value");
    }
    if (!v.empty()) out->push_back(std::move(v));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadStreamOptions(const Json& b, bool stream, bool* include_usage) {
  auto it = b.find("stream_options");
  if (it == b.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return WrongType("stream_options", "an object", *it);
  if (!stream) {
    return BadRequest("'stream_options' is only allowed when 'stream' is true", "stream_options",
                      "invalid_value");
  }
  return ReadBool(*it, "include_usage", "stream_options.include_usage", include_usage);
}

// Most choices per request (each takes a slot of its own).
constexpr int64_t kMaxChoices = 16;
// OpenAI's limit for top_logprobs.
constexpr int64_t kMaxTopLogprobs = 20;

// "n" (choices) and the logprobs fields: chat has logprobs (bool) + top_logprobs (0..20),
// completions an integer logprobs (0..20 here; OpenAI allows 5).
std::optional<ApiError> ReadChoicesAndLogprobs(const Json& b, bool chat, int64_t* n,
                                               int32_t* logprobs) {
  std::optional<int64_t> choices;
  if (auto e = ReadInt(b, "n", 1, kMaxChoices, &choices)) return e;
  if (choices) *n = *choices;
  std::optional<int64_t> top;
  if (chat) {
    bool want = false;
    if (auto e = ReadBool(b, "logprobs", "logprobs", &want)) return e;
    if (auto e = ReadInt(b, "top_logprobs", 0, kMaxTopLogprobs, &top)) return e;
    if (top && !want) {
      return BadRequest("'top_logprobs' needs 'logprobs': true", "top_logprobs", "invalid_value");
    }
    if (want) *logprobs = static_cast<int32_t>(top.value_or(0));
    return std::nullopt;
  }
  auto lp = b.find("logprobs");
  if (lp != b.end() && lp->is_boolean()) {  // some clients send the chat form here
    if (lp->get<bool>()) *logprobs = 0;
    return std::nullopt;
  }
  if (auto e = ReadInt(b, "logprobs", 0, kMaxTopLogprobs, &top)) return e;
  if (top) *logprobs = static_cast<int32_t>(*top);
  return std::nullopt;
}

// "content": string | [{"type": "text", "text": ...} | {"type": "image_url", "image_url":
// {"url": "data:image/...;base64,..."} (or the URL as a string)} | {"type": "input_audio",
// "input_audio": {"data": BASE64, "format": "wav"}}, ...] | null. An image or audio part
// takes its place in the text (ImageInput::offset, AudioInput::offset). A part's "x_gemlet_part" (the Ollama and
// Anthropic translations set it) names it in errors instead of its OpenAI path.
std::optional<ApiError> ReadContent(const Json& msg, const std::string& path, std::string* out,
                                    std::vector<ImageInput>* images, std::vector<AudioInput>* audios) {
  auto it = msg.find("content");
  if (it == msg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    *out = it->get<std::string>();
    return std::nullopt;
  }
  if (!it->is_array()) return WrongType(path + ".content", "a string or an array of parts", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& part = (*it)[i];
    std::string pp = path + ".content[" + std::to_string(i) + "]";
    if (!part.is_object()) return WrongType(pp, "an object", part);
    std::string type;
    if (auto e = ReadString(part, "type", pp + ".type", &type)) return e;
    if (type == "image_url" || type == "input_image") {
      if (auto n = part.find("x_gemlet_part"); n != part.end() && n->is_string()) pp = n->get<std::string>();
      const Json* u = nullptr;
      std::string url_path = pp + ".image_url";
      if (auto iu = part.find("image_url"); iu != part.end()) {
        if (iu->is_object()) {
          url_path += ".url";
          if (auto uu = iu->find("url"); uu != iu->end()) u = &*uu;
        } else {
          u = &*iu;
        }
      }
      if (u == nullptr || !u->is_string()) {
        return BadRequest("'" + url_path + "' must be a string (a data:image/...;base64, URL)", url_path,
                          "invalid_type");
      }
      const std::string& url = u->get_ref<const std::string&>();
      ImageInput img;
      img.part = pp;
      img.offset = out->size();
      img.index = i;
      if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
        img.url = url;
      } else {
        auto bytes = ImageFromUrl(url, url_path);
        if (!bytes.ok()) return BadRequest(bytes.status().message(), url_path, "invalid_image");
        img.bytes = std::move(bytes).value();
      }
      images->push_back(std::move(img));
      continue;
    }
    if (type == "input_audio") {
      const std::string ap = pp + ".input_audio";
      auto ia = part.find("input_audio");
      if (ia == part.end() || ia->is_null()) {
        return BadRequest("'" + ap + "' is required: {\"data\": base64, \"format\": \"wav\"}", ap, "invalid_type");
      }
      if (!ia->is_object()) return WrongType(ap, "an object {\"data\", \"format\"}", *ia);
      std::string data, format;
      if (auto e = ReadString(*ia, "data", ap + ".data", &data)) return e;
      if (auto e = ReadString(*ia, "format", ap + ".format", &format)) return e;
      auto bytes = AudioFromBase64(data, format, ap);
      if (!bytes.ok()) return BadRequest(bytes.status().message(), ap, "invalid_audio");
      audios->push_back(AudioInput{std::move(bytes).value(), ap, out->size(), i});
      continue;
    }
    if (type != "text") {
      return BadRequest("'" + pp + ".type' must be 'text', 'image_url' or 'input_audio', got '" + type + "'",
                        pp + ".type", "unsupported_content");
    }
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) {
      return BadRequest("'" + pp + ".text' must be a string", pp + ".text", "invalid_type");
    }
    *out += t->get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> ReadToolCalls(const Json& msg, const std::string& path,
                                      std::vector<ToolCall>* out) {
  auto it = msg.find("tool_calls");
  if (it == msg.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return WrongType(path + ".tool_calls", "an array", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& tc = (*it)[i];
    const std::string tp = path + ".tool_calls[" + std::to_string(i) + "]";
    if (!tc.is_object()) return WrongType(tp, "an object", tc);
    ToolCall call;
    if (auto e = ReadString(tc, "id", tp + ".id", &call.id)) return e;
    std::string type = "function";
    if (auto e = ReadString(tc, "type", tp + ".type", &type)) return e;
    if (type != "function") {
      return BadRequest("'" + tp + ".type' must be 'function'", tp + ".type", "invalid_value");
    }
    auto f = tc.find("function");
    if (f == tc.end() || !f->is_object()) {
      return BadRequest("'" + tp + ".function' must be an object", tp + ".function",
                        "invalid_type");
    }
    if (auto e = ReadString(*f, "name", tp + ".function.name", &call.name)) return e;
    if (call.name.empty()) {
      return BadRequest("'" + tp + ".function.name' is required", tp + ".function.name",
                        "missing_required_parameter");
    }
    auto a = f->find("arguments");
    if (a != f->end() && !a->is_null()) {
      if (a->is_string()) {
        call.arguments = a->get<std::string>();
      } else if (a->is_object()) {  // some clients send the object itself
        call.arguments = Dump(*a);
      } else {
        return WrongType(tp + ".function.arguments", "a string", *a);
      }
    }
    if (call.arguments.empty()) call.arguments = "{}";
    out->push_back(std::move(call));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadMessages(const Json& b, const ParseLimits& limits,
                                     std::vector<ChatMessage>* out) {
  auto it = b.find("messages");
  if (it == b.end() || it->is_null()) {
    return BadRequest("'messages' is required", "messages", "missing_required_parameter");
  }
  if (!it->is_array()) return WrongType("messages", "an array", *it);
  if (it->empty()) return BadRequest("'messages' must not be empty", "messages", "invalid_value");
  if (it->size() > limits.max_messages) {
    return BadRequest("'messages' has more than " + std::to_string(limits.max_messages) +
                          " entries",
                      "messages", "invalid_value");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& m = (*it)[i];
    const std::string mp = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return WrongType(mp, "an object", m);
    ChatMessage msg;
    auto r = m.find("role");
    if (r == m.end() || !r->is_string()) {
      return BadRequest("'" + mp + ".role' must be a string", mp + ".role",
                        "missing_required_parameter");
    }
    const std::string role = r->get<std::string>();
    if (role == "system") {
      msg.role = Role::kSystem;
    } else if (role == "developer") {
      msg.role = Role::kDeveloper;
    } else if (role == "user") {
      msg.role = Role::kUser;
    } else if (role == "assistant") {
      msg.role = Role::kAssistant;
    } else if (role == "tool") {
      msg.role = Role::kTool;
    } else {
      return BadRequest("'" + mp + ".role' must be one of system, developer, user, assistant, "
                            "tool; got '" + role + "'",
                        mp + ".role", "invalid_value");
    }
    if (auto e = ReadContent(m, mp, &msg.content, &msg.images, &msg.audios)) return e;
    if (auto e = ReadString(m, "name", mp + ".name", &msg.name)) return e;
    if (msg.role == Role::kAssistant) {
      if (auto e = ReadToolCalls(m, mp, &msg.tool_calls)) return e;
      if (auto e = ReadString(m, "reasoning_content", mp + ".reasoning_content", &msg.reasoning)) {
        return e;
      }
    }
    if (msg.role == Role::kTool) {
      if (auto e = ReadString(m, "tool_call_id", mp + ".tool_call_id", &msg.tool_call_id)) {
        return e;
      }
    }
    const bool has_content = m.contains("content") && !m["content"].is_null();
    if (!has_content && !(msg.role == Role::kAssistant && !msg.tool_calls.empty())) {
      return BadRequest("'" + mp + ".content' is required", mp + ".content",
                        "missing_required_parameter");
    }
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> ReadTools(const Json& b, const ParseLimits& limits, ChatRequest* req) {
  auto it = b.find("tools");
  if (it != b.end() && !it->is_null()) {
    if (!it->is_array()) return WrongType("tools", "an array", *it);
    if (it->size() > limits.max_tools) {
      return BadRequest("'tools' has more than " + std::to_string(limits.max_tools) + " entries",
                        "tools", "invalid_value");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& t = (*it)[i];
      const std::string tp = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) return WrongType(tp, "an object", t);
      std::string type;
      if (auto e = ReadString(t, "type", tp + ".type", &type)) return e;
      if (type != "function") {
        return BadRequest("'" + tp + ".type' must be 'function'", tp + ".type", "invalid_value");
      }
      auto f = t.find("function");
      if (f == t.end() || !f->is_object()) {
        return BadRequest("'" + tp + ".function' must be an object", tp + ".function",
                          "invalid_type");
      }
      ToolSpec spec;
      if (auto e = ReadString(*f, "name", tp + ".function.name", &spec.name)) return e;
      if (spec.name.empty() || spec.name.size() > 64) {
        return BadRequest("'" + tp + ".function.name' must be 1 to 64 characters",
                          tp + ".function.name", "invalid_value");
      }
      for (char c : spec.name) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) {
          return BadRequest("'" + tp + ".function.name' may hold only a-z, A-Z, 0-9, _ and -",
                            tp + ".function.name", "invalid_value");
        }
      }
      if (auto e = ReadString(*f, "description", tp + ".function.description", &spec.description)) {
        return e;
      }
      auto p = f->find("parameters");
      if (p != f->end() && !p->is_null()) {
        if (!p->is_object()) return WrongType(tp + ".function.parameters", "an object", *p);
        spec.parameters = *p;
      }
      req->tools.push_back(std::move(spec));
    }
  }
  auto c = b.find("tool_choice");
  if (c != b.end() && !c->is_null()) {
    if (c->is_string()) {
      const std::string s = c->get<std::string>();
      if (s == "auto") {
        req->tool_choice = ToolChoice::kAuto;
      } else if (s == "none") {
        req->tool_choice = ToolChoice::kNone;
      } else if (s == "required") {
        req->tool_choice = ToolChoice::kRequired;
      } else {
        return BadRequest("'tool_choice' must be 'none', 'auto', 'required' or an object",
                          "tool_choice", "invalid_value");
      }
    } else if (c->is_object()) {
      auto f = c->find("function");
      if (f == c->end() || !f->is_object() || !f->contains("name") ||
          !(*f)["name"].is_string()) {
        return BadRequest("'tool_choice.function.name' must be a string",
                          "tool_choice.function.name", "invalid_type");
      }
      req->tool_choice = ToolChoice::kFunction;
      req->tool_choice_name = (*f)["name"].get<std::string>();
      bool found = false;
      for (const auto& t : req->tools) found |= t.name == req->tool_choice_name;
      if (!found) {
        return BadRequest("'tool_choice' names function '" + req->tool_choice_name +
                              "', which is not in 'tools'",
                          "tool_choice", "invalid_value");
      }
    } else {
      return WrongType("tool_choice", "a string or an object", *c);
    }
    if (req->tools.empty() && req->tool_choice != ToolChoice::kNone &&
        req->tool_choice != ToolChoice::kAuto) {
      return BadRequest("'tool_choice' needs 'tools'", "tool_choice", "invalid_value");
    }
  }
  return std::nullopt;
}

// response_format {"type": "text" | "json_object" | "json_schema", "json_schema": {"name",
// "schema", "strict"}} and the "grammar" extension (GBNF text); at most one of the two.
std::optional<ApiError> ReadOutputFormat(const Json& b, OutputFormat* out) {
  auto rf = b.find("response_format");
  if (rf != b.end() && !rf->is_null()) {
    if (!rf->is_object()) return WrongType("response_format", "an object", *rf);
    std::string type;
    if (auto e = ReadString(*rf, "type", "response_format.type", &type)) return e;
    if (type == "text") {
      out->kind = OutputFormat::Kind::kText;
    } else if (type == "json_object") {
      out->kind = OutputFormat::Kind::kJsonObject;
      out->param = "response_format";
    } else if (type == "json_schema") {
      auto js = rf->find("json_schema");
      if (js == rf->end() || !js->is_object()) {
        return BadRequest("'response_format.json_schema' must be an object with a 'schema'",
                          "response_format.json_schema", "invalid_type");
      }
      std::string name;
      if (auto e = ReadString(*js, "name", "response_format.json_schema.name", &name)) return e;
      bool strict = false;
      if (auto e = ReadBool(*js, "strict", "response_format.json_schema.strict", &strict)) return e;
      auto schema = js->find("schema");
      if (schema == js->end() || !(schema->is_object() || schema->is_boolean())) {
        return BadRequest("'response_format.json_schema.schema' must be a JSON Schema object",
                          "response_format.json_schema.schema", "invalid_type");
      }
      out->kind = OutputFormat::Kind::kJsonSchema;
      out->schema = *schema;
      out->param = "response_format.json_schema.schema";
    } else {
      return BadRequest("'response_format.type' must be 'text', 'json_object' or 'json_schema'",
                        "response_format.type", "invalid_value");
    }
  }
  auto g = b.find("grammar");
  if (g != b.end() && !g->is_null()) {
    if (!g->is_string()) return WrongType("grammar", "a string (GBNF)", *g);
    if (out->kind != OutputFormat::Kind::kText) {
      return BadRequest("give 'grammar' or 'response_format', not both", "grammar", "invalid_value");
    }
    out->kind = OutputFormat::Kind::kGrammar;
    out->grammar = g->get<std::string>();
    out->param = "grammar";
  }
  return std::nullopt;
}

// Thinking on/off: "reasoning_effort" (OpenAI), "chat_template_kwargs.enable_thinking"
// (vLLM, llama.cpp), "think" (Ollama) or "enable_thinking".
std::optional<ApiError> ReadThinking(const Json& b, bool* on) {
  std::string effort;
  if (auto e = ReadString(b, "reasoning_effort", "reasoning_effort", &effort)) return e;
  if (!effort.empty()) {
    if (effort == "none" || effort == "minimal") {
      *on = false;
    } else if (effort == "low" || effort == "medium" || effort == "high") {
      *on = true;
    } else {
      return BadRequest("'reasoning_effort' must be none, minimal, low, medium or high",
                        "reasoning_effort", "invalid_value");
    }
  }
  auto k = b.find("chat_template_kwargs");
  if (k != b.end() && !k->is_null()) {
    if (!k->is_object()) return WrongType("chat_template_kwargs", "an object", *k);
    if (auto e = ReadBool(*k, "enable_thinking", "chat_template_kwargs.enable_thinking", on)) {
      return e;
    }
  }
  if (auto e = ReadBool(b, "think", "think", on)) return e;
  if (auto e = ReadBool(b, "enable_thinking", "enable_thinking", on)) return e;
  return std::nullopt;
}

std::optional<ApiError> ReadMaxTokens(const Json& b, std::optional<int64_t>* out) {
  std::optional<int64_t> a, c;
  if (auto e = ReadInt(b, "max_tokens", 1, std::numeric_limits<int32_t>::max(), &a)) return e;
  if (auto e = ReadInt(b, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max(), &c)) {
    return e;
  }
  *out = c ? c : a;
  return std::nullopt;
}

}  // namespace

const char* RoleName(Role r) {
  switch (r) {
    case Role::kSystem: return "system";
    case Role::kDeveloper: return "developer";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "user";
}

ApiOr<ChatRequest> ParseChatRequest(const Json& b, const ParseLimits& limits) {
  ChatRequest req;
  if (!b.is_object()) return BadRequest("the request body must be a JSON object");
  if (auto e = ReadString(b, "model", "model", &req.model)) return *e;
  if (auto e = ReadMessages(b, limits, &req.messages)) return *e;
  if (auto e = ReadTools(b, limits, &req)) return *e;
  if (auto e = ReadOutputFormat(b, &req.format)) return *e;
  if (auto e = ReadBool(b, "parallel_tool_calls", "parallel_tool_calls", &req.parallel_tool_calls)) {
    return *e;
  }
  if (auto e = ReadBool(b, "stream", "stream", &req.stream)) return *e;
  if (auto e = ReadStreamOptions(b, req.stream, &req.include_usage)) return *e;
  if (auto e = ReadSampling(b, &req.sampling)) return *e;
  if (auto e = ReadMaxTokens(b, &req.max_tokens)) return *e;
  if (auto e = ReadStop(b, limits, &req.stop)) return *e;
  if (auto e = ReadThinking(b, &req.enable_thinking)) return *e;
  if (auto e = ReadBool(b, "ignore_eos", "ignore_eos", &req.ignore_eos)) return *e;
  if (auto e = ReadChoicesAndLogprobs(b, /*chat=*/true, &req.n, &req.sampling.logprobs)) return *e;
  return req;
}

ApiOr<CompletionRequest> ParseCompletionRequest(const Json& b, const ParseLimits& limits) {
  CompletionRequest req;
  if (!b.is_object()) return BadRequest("the request body must be a JSON object");
  if (auto e = ReadString(b, "model", "model", &req.model)) return *e;
  auto p = b.find("prompt");
  if (p == b.end() || p->is_null()) {
    return BadRequest("'prompt' is required", "prompt", "missing_required_parameter");
  }
  if (p->is_string()) {
    req.prompt = p->get<std::string>();
  } else if (p->is_array()) {
    // ["text"] (one prompt) or [1, 2, 3] (token ids). Several prompts need n > 1.
    if (p->size() == 1 && (*p)[0].is_string()) {
      req.prompt = (*p)[0].get<std::string>();
    } else if (!p->empty() && (*p)[0].is_number()) {
      if (p->size() > limits.max_prompt_tokens) {
        return BadRequest("'prompt' has too many tokens", "prompt", "context_length_exceeded");
      }
      req.prompt_is_tokens = true;
      for (size_t i = 0; i < p->size(); ++i) {
        const Json& t = (*p)[i];
        if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
            t.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
          return BadRequest("'prompt[" + std::to_string(i) + "]' must be a token id",
                            "prompt", "invalid_value");
        }
        req.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
      }
    } else {
      return BadRequest("'prompt' must be a string, an array of one string or an array of token "
                        "ids",
                        "prompt", "invalid_value");
    }
  } else {
    return WrongType("prompt", "a string or an array", *p);
  }
  if (auto e = ReadBool(b, "echo", "echo", &req.echo)) return *e;
  if (auto e = ReadOutputFormat(b, &req.format)) return *e;
  if (auto e = ReadBool(b, "stream", "stream", &req.stream)) return *e;
  if (auto e = ReadStreamOptions(b, req.stream, &req.include_usage)) return *e;
  if (auto e = ReadSampling(b, &req.sampling)) return *e;
  if (auto e = ReadMaxTokens(b, &req.max_tokens)) return *e;
  if (!req.max_tokens) req.max_tokens = 16;
  if (auto e = ReadStop(b, limits, &req.stop)) return *e;
  if (auto e = ReadBool(b, "ignore_eos", "ignore_eos", &req.ignore_eos)) return *e;
  if (auto e = ReadChoicesAndLogprobs(b, /*chat=*/false, &req.n, &req.sampling.logprobs)) return *e;
  std::optional<int64_t> best_of;
  if (auto e = ReadInt(b, "best_of", 1, 128, &best_of)) return *e;
  if (best_of && *best_of != 1) {
    return BadRequest("only 'best_of': 1 is supported", "best_of", "unsupported_value");
  }
  std::string suffix;
  if (auto e = ReadString(b, "suffix", "suffix", &suffix)) return *e;
  if (!suffix.empty()) return BadRequest("'suffix' is not supported", "suffix", "unsupported_value");
  return req;
}

ApiOr<ChatRequest> ParseChatRequest(std::string_view body, const ParseLimits& limits) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return j.error();
  return ParseChatRequest(*j, limits);
}

ApiOr<CompletionRequest> ParseCompletionRequest(std::string_view body, const ParseLimits& limits) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return j.error();
  return ParseCompletionRequest(*j, limits);
}

}  // namespace gemlet::server
