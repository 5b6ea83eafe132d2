#include "tools/server/anthropic_api.h"

#include <map>

#include "tools/server/openai_format.h"

namespace gemlet::server {
namespace {

// obj[key] when it is a string, else "" (Json::value throws on a wrong type).
std::string StrField(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// obj[key] when it is a boolean, else `def`.
bool BoolField(const Json& obj, const char* key, bool def) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : def;
}

const char* ErrorType(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return "api_error";
  }
}

Json ErrorJson(const ApiError& e) {
  return Json{{"type", "error"}, {"error", {{"type", ErrorType(e.status)}, {"message", e.message}}}};
}

HttpReply AnthropicError(const ApiError& e) {
  HttpReply r = JsonReply(ErrorJson(e), e.status);
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return r;
}

ApiError Bad(const std::string& path, const std::string& what) {
  return BadRequest("'" + path + "' " + what, path, "invalid_value");
}

// A tool_result's content: a string or text blocks.
ApiOr<std::string> ToolResultText(const Json& block, const std::string& path) {
  auto c = block.find("content");
  if (c == block.end() || c->is_null()) return std::string();
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) return Bad(path + ".content", "must be a string or an array of blocks");
  std::string text;
  for (size_t i = 0; i < c->size(); ++i) {
    const Json& b = (*c)[i];
    const std::string bp = path + ".content[" + std::to_string(i) + "]";
    if (!b.is_object() || StrField(b, "type") != "text" || !b.contains("text") || !b["text"].is_string()) {
      return Bad(bp, "must be a text block (image results are not supported)");
    }
    if (!text.empty()) text += "\n";
    text += b["text"].get<std::string>();
  }
  return text;
}

// One Anthropic message → OpenAI messages (a user turn's tool_result blocks become tool
// messages before its text).
std::optional<ApiError> TranslateMessage(const Json& m, const std::string& path,
                                         std::map<std::string, std::string>& call_names, Json* out) {
  if (!m.is_object()) return Bad(path, "must be an object");
  const std::string role = StrField(m, "role");
  if (role != "user" && role != "assistant") return Bad(path + ".role", "must be \"user\" or \"assistant\"");
  auto c = m.find("content");
  if (c == m.end()) return Bad(path + ".content", "is required");
  if (c->is_string()) {
    out->push_back({{"role", role}, {"content", *c}});
    return std::nullopt;
  }
  if (!c->is_array()) return Bad(path + ".content", "must be a string or an array of content blocks");
  std::string text, thinking;
  Json parts = Json::array();  // a user turn's image blocks and the text between them, in order
  Json calls = Json::array();
  for (size_t i = 0; i < c->size(); ++i) {
    const Json& b = (*c)[i];
    const std::string bp = path + ".content[" + std::to_string(i) + "]";
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string()) return Bad(bp, "must be a content block");
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) return Bad(bp + ".text", "must be a string");
      text += b["text"].get<std::string>();
    } else if (type == "thinking" && role == "assistant") {
      if (b.contains("thinking") && b["thinking"].is_string()) thinking += b["thinking"].get<std::string>();
    } else if (type == "redacted_thinking" && role == "assistant") {
      // Nothing to show the model.
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string()) return Bad(bp + ".id", "must be a string");
      if (!b.contains("name") || !b["name"].is_string()) return Bad(bp + ".name", "must be a string");
      const Json input = b.value("input", Json::object());
      if (!input.is_object()) return Bad(bp + ".input", "must be an object");
      call_names[b["id"].get<std::string>()] = b["name"].get<std::string>();
      calls.push_back({{"id", b["id"]}, {"type", "function"},
                       {"function", {{"name", b["name"]}, {"arguments", Dump(input)}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        return Bad(bp + ".tool_use_id", "must be a string");
      }
      auto r = ToolResultText(b, bp);
      if (!r.ok()) return r.error();
      std::string content = *r;
      if (BoolField(b, "is_error", false)) content = "Error: " + content;
      Json tm = {{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", content}};
      auto name = call_names.find(b["tool_use_id"].get<std::string>());
      if (name != call_names.end()) tm["name"] = name->second;
      out->push_back(std::move(tm));
    } else if (type == "image" && role == "user") {
      // source: {"type": "base64", "media_type": "image/png", "data": ...} or {"type": "url", "url": ...}.
      auto src = b.find("source");
      if (src == b.end() || !src->is_object()) return Bad(bp + ".source", "must be an object");
      const std::string st = StrField(*src, "type");
      std::string url;
      if (st == "base64") {
        const std::string mt = StrField(*src, "media_type");
        if (mt.rfind("image/", 0) != 0) return Bad(bp + ".source.media_type", "must be an image/ type");
        if (!src->contains("data") || !(*src)["data"].is_string()) return Bad(bp + ".source.data", "must be a string");
        url = "data:" + mt + ";base64," + (*src)["data"].get<std::string>();
      } else if (st == "url") {
        if (!src->contains("url") || !(*src)["url"].is_string()) return Bad(bp + ".source.url", "must be a string");
        url = (*src)["url"].get<std::string>();
      } else {
        return Bad(bp + ".source.type", "must be \"base64\" or \"url\"");
      }
      if (!text.empty()) parts.push_back({{"type", "text"}, {"text", text}});
      text.clear();
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", std::move(url)}}}, {"x_gemlet_part", bp}});
    } else if (type == "image" || type == "document") {
      return BadRequest("'" + bp + "': " + type + " input is not supported " +
                            (type == "image" ? "in an assistant message" : "by this server yet"),
                        bp + ".type", "unsupported_value");
    } else {
      return Bad(bp + ".type", "'" + type + "' is not a block a " + role + " message can hold");
    }
  }
  if (role == "assistant") {
    Json o = {{"role", "assistant"}, {"content", text}};
    if (!thinking.empty()) o["reasoning_content"] = thinking;
    if (!calls.empty()) o["tool_calls"] = std::move(calls);
    out->push_back(std::move(o));
  } else if (!parts.empty()) {
    if (!text.empty()) parts.push_back({{"type", "text"}, {"text", text}});
    out->push_back({{"role", "user"}, {"content", std::move(parts)}});
  } else if (!text.empty() || out->empty() || StrField(out->back(), "role") != "tool") {
    out->push_back({{"role", "user"}, {"content", text}});
  }
  return std::nullopt;
}

}  // namespace

ApiOr<Json> AnthropicToOpenAi(const Json& body) {
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  Json out = Json::object();
  if (auto m = body.find("model"); m != body.end() && m->is_string()) out["model"] = *m;
  auto mt = body.find("max_tokens");
  if (mt == body.end() || mt->is_null()) {
    return BadRequest("'max_tokens' is required", "max_tokens", "missing_required_parameter");
  }
  out["max_tokens"] = *mt;
  for (const char* k : {"temperature", "top_p", "top_k", "stream"}) {
    if (auto v = body.find(k); v != body.end() && !v->is_null()) out[k] = *v;
  }
  if (auto s = body.find("stop_sequences"); s != body.end() && !s->is_null()) out["stop"] = *s;
  Json msgs = Json::array();
  if (auto s = body.find("system"); s != body.end() && !s->is_null()) {
    std::string system;
    if (s->is_string()) {
      system = s->get<std::string>();
    } else if (s->is_array()) {
      for (size_t i = 0; i < s->size(); ++i) {
        const Json& b = (*s)[i];
        if (!b.is_object() || StrField(b, "type") != "text" || !b.contains("text") || !b["text"].is_string()) {
          return Bad("system[" + std::to_string(i) + "]", "must be a text block");
        }
        if (!system.empty()) system += "\n";
        system += b["text"].get<std::string>();
      }
    } else {
      return Bad("system", "must be a string or an array of text blocks");
    }
    if (!system.empty()) msgs.push_back({{"role", "system"}, {"content", system}});
  }
  auto m = body.find("messages");
  if (m == body.end() || !m->is_array() || m->empty()) return Bad("messages", "must be a non-empty array");
  std::map<std::string, std::string> call_names;
  for (size_t i = 0; i < m->size(); ++i) {
    if (auto e = TranslateMessage((*m)[i], "messages[" + std::to_string(i) + "]", call_names, &msgs)) return *e;
  }
  out["messages"] = std::move(msgs);
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) return Bad("tools", "must be an array");
    Json tools = Json::array();
    for (size_t i = 0; i < t->size(); ++i) {
      const Json& d = (*t)[i];
      const std::string tp = "tools[" + std::to_string(i) + "]";
      if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) return Bad(tp + ".name", "must be a string");
      if (d.contains("type") && d["type"].is_string() && d["type"] != "custom") {
        return BadRequest("'" + tp + ".type': server tools ('" + d["type"].get<std::string>() + "') are not supported",
                          tp + ".type", "unsupported_value");
      }
      Json fn = {{"name", d["name"]}, {"parameters", d.value("input_schema", Json{{"type", "object"}})}};
      if (d.contains("description") && d["description"].is_string()) fn["description"] = d["description"];
      tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    out["tools"] = std::move(tools);
  }
  if (auto tc = body.find("tool_choice"); tc != body.end() && !tc->is_null()) {
    if (!tc->is_object() || !tc->contains("type") || !(*tc)["type"].is_string()) {
      return Bad("tool_choice", "must be an object with a type");
    }
    const std::string type = (*tc)["type"].get<std::string>();
    if (type == "auto") {
      out["tool_choice"] = "auto";
    } else if (type == "any") {
      out["tool_choice"] = "required";
    } else if (type == "none") {
      out["tool_choice"] = "none";
    } else if (type == "tool") {
      if (!tc->contains("name") || !(*tc)["name"].is_string()) return Bad("tool_choice.name", "must be a string");
      out["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*tc)["name"]}}}};
    } else {
      return Bad("tool_choice.type", "must be auto, any, tool or none");
    }
    if (BoolField(*tc, "disable_parallel_tool_use", false)) out["parallel_tool_calls"] = false;
  }
  if (auto th = body.find("thinking"); th != body.end() && !th->is_null()) {
    if (!th->is_object() || !th->contains("type") || !(*th)["type"].is_string()) {
      return Bad("thinking", "must be an object with a type");
    }
    const std::string type = (*th)["type"].get<std::string>();
    if (type != "enabled" && type != "disabled") return Bad("thinking.type", "must be enabled or disabled");
    out["think"] = type == "enabled";
  }
  return out;
}

namespace {

// Anthropic's stream events: "event: NAME\ndata: JSON\n\n".
std::string Event(const char* name, const Json& data) {
  return std::string("event: ") + name + "\ndata: " + Dump(data) + "\n\n";
}

struct Block {
  enum Kind { kNone, kText, kThinking, kToolUse } kind = kNone;
};

Block::Kind KindOf(const GenerationEvent& e) {
  switch (e.kind) {
    case GenerationEvent::kContent: return Block::kText;
    case GenerationEvent::kReasoning: return Block::kThinking;
    case GenerationEvent::kToolCall: return Block::kToolUse;
  }
  return Block::kText;
}

// stop_reason and stop_sequence of a finished generation.
std::pair<std::string, Json> StopOf(const Generation& g, const JobOutcome& o) {
  const std::string why = g.FinishReasonText(o);
  if (why == "tool_calls") return {"tool_use", nullptr};
  if (why == "length") return {"max_tokens", nullptr};
  if (g.StopMatched()) {
    const std::string s = g.MatchedStop();
    if (!s.empty()) return {"stop_sequence", s};
  }
  return {"end_turn", nullptr};
}

std::string ToolUseId() { return NewId("toolu_"); }

ReplyFormat MessagesFormat(bool stream, const ResponseMeta& meta, const Started& s) {
  struct State {
    Json content = Json::array();
    Block::Kind open = Block::kNone;
    int index = -1;
  };
  auto st = std::make_shared<State>();
  auto gen = s.gens[0];
  ReplyFormat f;
  if (!stream) {
    f.events = [st](size_t, std::vector<GenerationEvent>& events) {
      for (const auto& e : events) {
        const Block::Kind k = KindOf(e);
        if (k == Block::kText && e.text.empty()) continue;
        if (k == Block::kToolUse) {
          st->content.push_back({{"type", "tool_use"}, {"id", ToolUseId()}, {"name", e.call.name},
                                 {"input", Json::parse(e.call.arguments, nullptr, false)}});
          st->open = Block::kNone;
          continue;
        }
        if (st->open != k) {
          st->content.push_back(k == Block::kText ? Json{{"type", "text"}, {"text", ""}}
                                                  : Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
          st->open = k;
        }
        Json& b = st->content.back();
        const char* field = k == Block::kText ? "text" : "thinking";
        b[field] = b[field].get<std::string>() + e.text;
      }
      return std::string();
    };
    f.tail = [st, gen, meta](const std::vector<JobOutcome>& outcomes) {
      const JobOutcome& o = outcomes[0];
      if (o.reason == FinishReason::kCancelled || o.reason == FinishReason::kError) {
        return Dump(ErrorJson(OutcomeError(o)));
      }
      auto [reason, seq] = StopOf(*gen, o);
      return Dump(Json{{"id", meta.id}, {"type", "message"}, {"role", "assistant"}, {"model", meta.model},
                       {"content", st->content}, {"stop_reason", reason}, {"stop_sequence", seq},
                       {"usage", {{"input_tokens", o.prompt_tokens},
                                  {"cache_read_input_tokens", o.cached_tokens},
                                  {"output_tokens", o.completion_tokens}}}});
    };
    return f;
  }
  f.content_type = "text/event-stream";
  f.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  f.streaming = true;
  f.keepalive = Event("ping", Json{{"type", "ping"}});
  f.head = [meta] {
    return Event("message_start",
                 Json{{"type", "message_start"},
                      {"message", {{"id", meta.id}, {"type", "message"}, {"role", "assistant"},
                                   {"model", meta.model}, {"content", Json::array()},
                                   {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                                   {"usage", {{"input_tokens", 0}, {"output_tokens", 0}}}}}}) +
           Event("ping", Json{{"type", "ping"}});
  };
  auto close = [st]() -> std::string {
    if (st->open == Block::kNone) return "";
    st->open = Block::kNone;
    return Event("content_block_stop", Json{{"type", "content_block_stop"}, {"index", st->index}});
  };
  f.events = [st, close](size_t, std::vector<GenerationEvent>& events) {
    std::string out;
    for (const auto& e : events) {
      const Block::Kind k = KindOf(e);
      if (k == Block::kText && e.text.empty()) continue;
      if (k == Block::kToolUse) {
        out += close();
        ++st->index;
        out += Event("content_block_start",
                     Json{{"type", "content_block_start"}, {"index", st->index},
                          {"content_block", {{"type", "tool_use"}, {"id", ToolUseId()}, {"name", e.call.name},
                                             {"input", Json::object()}}}});
        out += Event("content_block_delta",
                     Json{{"type", "content_block_delta"}, {"index", st->index},
                          {"delta", {{"type", "input_json_delta"}, {"partial_json", e.call.arguments}}}});
        st->open = Block::kToolUse;
        out += close();
        continue;
      }
      if (st->open != k) {
        out += close();
        ++st->index;
        out += Event("content_block_start",
                     Json{{"type", "content_block_start"}, {"index", st->index},
                          {"content_block", k == Block::kText ? Json{{"type", "text"}, {"text", ""}}
                                                              : Json{{"type", "thinking"}, {"thinking", ""},
                                                                     {"signature", ""}}}});
        st->open = k;
      }
      Json delta = k == Block::kText ? Json{{"type", "text_delta"}, {"text", e.text}}
                                     : Json{{"type", "thinking_delta"}, {"thinking", e.text}};
      out += Event("content_block_delta",
                   Json{{"type", "content_block_delta"}, {"index", st->index}, {"delta", std::move(delta)}});
    }
    return out;
  };
  f.tail = [gen, close](const std::vector<JobOutcome>& outcomes) {
    const JobOutcome& o = outcomes[0];
    std::string out = close();
    if (o.reason == FinishReason::kCancelled || o.reason == FinishReason::kError) {
      return out + Event("error", ErrorJson(OutcomeError(o)));
    }
    auto [reason, seq] = StopOf(*gen, o);
    out += Event("message_delta", Json{{"type", "message_delta"},
                                       {"delta", {{"stop_reason", reason}, {"stop_sequence", seq}}},
                                       {"usage", {{"input_tokens", o.prompt_tokens},
                                                  {"output_tokens", o.completion_tokens}}}});
    return out + Event("message_stop", Json{{"type", "message_stop"}});
  };
  return f;
}

// An OpenAI parser error names OpenAI's field; say the Anthropic one.
ApiError RenameParam(ApiError e) {
  if (e.param.rfind("stop", 0) == 0) {
    const std::string old_param = e.param;
    e.param = "stop_sequences" + old_param.substr(4);
    const size_t at = e.message.find("'" + old_param + "'");
    if (at != std::string::npos) e.message.replace(at, old_param.size() + 2, "'" + e.param + "'");
  }
  return e;
}

}  // namespace

HttpReply AnthropicMessages(ApiHandlers& h, std::string_view body) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return AnthropicError(j.error());
  auto oa = AnthropicToOpenAi(*j);
  if (!oa.ok()) return AnthropicError(oa.error());
  auto req = ParseChatRequest(*oa, h.options().limits);
  if (!req.ok()) return AnthropicError(RenameParam(req.error()));
  auto started = h.StartChat(*req);
  if (!started.ok()) return AnthropicError(started.error());
  ResponseMeta meta{NewId("msg_"), UnixNow(), req->model.empty() ? h.model_id() : req->model};
  ReplyFormat f = MessagesFormat(req->stream, meta, *started);
  return h.Respond(std::move(started).value(), std::move(f));
}

}  // namespace gemlet::server
