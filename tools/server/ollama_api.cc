#include "tools/server/ollama_api.h"

#include <chrono>
#include <limits>

#include "tools/server/openai_format.h"
#include "tools/server/request_log.h"

namespace gemlet::server {
namespace {

using Clock = std::chrono::steady_clock;

// obj[key] when it is a string, else "" (Json::value throws on a wrong type).
std::string StrField(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}


HttpReply OllamaError(const ApiError& e) {
  HttpReply r = JsonReply(Json{{"error", e.message}}, e.status);
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return r;
}

std::string NowIso() {
  return IsoTime(std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count());
}

// Ollama's options → OpenAI sampling fields (unknown options are ignored, as Ollama does
// with options that do not apply).
std::optional<ApiError> TranslateOptions(const Json& body, Json* out) {
  auto it = body.find("options");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return BadRequest("'options' must be an object", "options", "invalid_type");
  static const std::pair<const char*, const char*> kSame[] = {
      {"temperature", "temperature"},   {"top_p", "top_p"},
      {"top_k", "top_k"},               {"min_p", "min_p"},
      {"seed", "seed"},                 {"presence_penalty", "presence_penalty"},
      {"frequency_penalty", "frequency_penalty"}, {"stop", "stop"}};
  for (const auto& [from, to] : kSame) {
    auto v = it->find(from);
    if (v != it->end() && !v->is_null()) (*out)[to] = *v;
  }
  // num_predict: -1 (no limit) and -2 (fill the context) both mean: until the context ends.
  auto np = it->find("num_predict");
  if (np != it->end() && !np->is_null()) {
    if (!np->is_number_integer()) {
      return BadRequest("'options.num_predict' must be an integer", "options.num_predict", "invalid_type");
    }
    if (np->get<int64_t>() > 0) (*out)["max_tokens"] = *np;
    else if (np->get<int64_t>() == 0) (*out)["max_tokens"] = 1;
  }
  return std::nullopt;
}

// format: "json", a JSON schema object, or "" / null for free text.
std::optional<ApiError> TranslateFormat(const Json& body, Json* out) {
  auto f = body.find("format");
  if (f == body.end() || f->is_null() || (f->is_string() && f->get<std::string>().empty())) {
    return std::nullopt;
  }
  if (f->is_string() && f->get<std::string>() == "json") {
    (*out)["response_format"] = {{"type", "json_object"}};
  } else if (f->is_object()) {
    (*out)["response_format"] = {{"type", "json_schema"},
                                 {"json_schema", {{"name", "format"}, {"schema", *f}}}};
  } else {
    return BadRequest("'format' must be \"json\" or a JSON schema object", "format", "invalid_value");
  }
  return std::nullopt;
}

// The fields both endpoints share: stream (default true), think, keep_alive, options, format.
std::optional<ApiError> TranslateCommon(const Json& body, Json* out) {
  auto s = body.find("stream");
  if (s != body.end() && !s->is_null() && !s->is_boolean()) {
    return BadRequest("'stream' must be a boolean", "stream", "invalid_type");
  }
  (*out)["stream"] = s == body.end() || s->is_null() ? true : s->get<bool>();
  auto t = body.find("think");
  if (t != body.end() && !t->is_null()) {
    // true/false, or a level ("low", "medium", "high") as newer clients send.
    if (t->is_boolean()) {
      (*out)["think"] = *t;
    } else if (t->is_string()) {
      (*out)["think"] = t->get<std::string>() != "none" && !t->get<std::string>().empty();
    } else {
      return BadRequest("'think' must be a boolean or a level", "think", "invalid_type");
    }
  }
  auto k = body.find("keep_alive");
  if (k != body.end() && !k->is_null() && !k->is_string() && !k->is_number()) {
    return BadRequest("'keep_alive' must be a duration string or a number of seconds", "keep_alive",
                      "invalid_type");
  }
  if (auto e = TranslateOptions(body, out)) return e;
  if (auto e = TranslateFormat(body, out)) return e;
  if (auto m = body.find("model"); m != body.end() && m->is_string()) (*out)["model"] = *m;
  return std::nullopt;
}

// Ollama's "images" (bare base64 strings) beside a message's text: OpenAI content parts, the
// images first (where Ollama's templates put them) unless the text places them ({image} or
// <|image|>, runtime::PlaceMedia), each part naming its Ollama field for errors.
std::optional<ApiError> TranslateImages(const Json& obj, const std::string& path, Json* content) {
  auto im = obj.find("images");
  if (im == obj.end() || im->is_null()) return std::nullopt;
  const std::string ip = path.empty() ? "images" : path + ".images";
  if (!im->is_array()) return BadRequest("'" + ip + "' must be an array of base64 strings", ip, "invalid_type");
  if (im->empty()) return std::nullopt;
  Json parts = Json::array();
  for (size_t k = 0; k < im->size(); ++k) {
    const std::string pp = ip + "[" + std::to_string(k) + "]";
    if (!(*im)[k].is_string()) return BadRequest("'" + pp + "' must be a base64 string", pp, "invalid_type");
    parts.push_back({{"type", "image_url"},
                     {"image_url", {{"url", "data:image/*;base64," + (*im)[k].get<std::string>()}}},
                     {"x_gemlet_part", pp}});
  }
  if (content->is_string() && !content->get<std::string>().empty()) {
    parts.push_back({{"type", "text"}, {"text", *content}});
  }
  *content = std::move(parts);
  return std::nullopt;
}

// An OpenAI parser error names OpenAI's field; say the Ollama field it came from.
ApiError RenameParam(ApiError e) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"temperature", "options.temperature"}, {"top_p", "options.top_p"}, {"top_k", "options.top_k"},
      {"min_p", "options.min_p"}, {"seed", "options.seed"}, {"stop", "options.stop"},
      {"max_tokens", "options.num_predict"}, {"response_format", "format"},
      {"presence_penalty", "options.presence_penalty"}, {"frequency_penalty", "options.frequency_penalty"}};
  for (const auto& [from, to] : kNames) {
    if (e.param.rfind(from, 0) != 0) continue;
    const std::string old_param = e.param;
    e.param = to + old_param.substr(std::string(from).size());
    const size_t at = e.message.find("'" + old_param + "'");
    if (at != std::string::npos) e.message.replace(at, old_param.size() + 2, "'" + e.param + "'");
    break;
  }
  return e;
}

// A whole-reply or NDJSON stream of Ollama objects; `chat` says /api/chat (a "message") or
// /api/generate ("response" and "thinking").
ReplyFormat OllamaFormat(bool chat, bool stream, const std::string& model, const Started& s) {
  struct State {
    std::string content, thinking;
    Json tool_calls = Json::array();
    Clock::time_point start = Clock::now();
    std::optional<Clock::time_point> first;
  };
  auto st = std::make_shared<State>();
  auto gen = s.gens[0];
  auto piece = [chat, model](const GenerationEvent& e) {
    Json j = {{"model", model}, {"created_at", NowIso()}};
    if (chat) {
      Json m = {{"role", "assistant"}, {"content", ""}};
      if (e.kind == GenerationEvent::kContent) m["content"] = e.text;
      if (e.kind == GenerationEvent::kReasoning) m["thinking"] = e.text;
      if (e.kind == GenerationEvent::kToolCall) {
        Json args = Json::parse(e.call.arguments, nullptr, false);
        m["tool_calls"] = Json::array({{{"function", {{"name", e.call.name}, {"arguments", args}}}}});
      }
      j["message"] = std::move(m);
    } else {
      j["response"] = e.kind == GenerationEvent::kContent ? e.text : "";
      if (e.kind == GenerationEvent::kReasoning) j["thinking"] = e.text;
    }
    j["done"] = false;
    return j;
  };
  auto final_object = [st, gen, chat, model](const JobOutcome& o) {
    Json j = {{"model", model}, {"created_at", NowIso()}};
    if (chat) {
      Json m = {{"role", "assistant"}, {"content", st->content}};
      if (!st->thinking.empty()) m["thinking"] = st->thinking;
      if (!st->tool_calls.empty()) m["tool_calls"] = st->tool_calls;
      j["message"] = std::move(m);
    } else {
      j["response"] = st->content;
      if (!st->thinking.empty()) j["thinking"] = st->thinking;
    }
    const std::string why = gen->FinishReasonText(o);
    j["done"] = true;
    j["done_reason"] = why == "length" ? "length" : "stop";
    const auto now = Clock::now();
    auto ns = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); };
    const auto first = st->first.value_or(now);
    j["total_duration"] = ns(now - st->start);
    j["load_duration"] = 0;
    j["prompt_eval_count"] = o.prompt_tokens;
    j["prompt_eval_duration"] = ns(first - st->start);
    j["eval_count"] = o.completion_tokens;
    j["eval_duration"] = ns(now - first);
    return j;
  };
  ReplyFormat f;
  f.streaming = stream;
  if (stream) {
    f.content_type = "application/x-ndjson";
    f.keepalive = "";  // NDJSON has no comment line; the tiny gaps between tokens do
  }
  f.events = [st, stream, piece](size_t, std::vector<GenerationEvent>& events) {
    if (!st->first) st->first = Clock::now();
    std::string out;
    for (const auto& e : events) {
      if (e.kind == GenerationEvent::kContent) {
        if (e.text.empty()) continue;  // a logprobs-only event
        st->content += e.text;
      } else if (e.kind == GenerationEvent::kReasoning) {
        st->thinking += e.text;
      } else {
        st->tool_calls.push_back({{"function", {{"name", e.call.name},
                                                {"arguments", Json::parse(e.call.arguments, nullptr, false)}}}});
      }
      if (stream) out += Dump(piece(e)) + "\n";
    }
    return out;
  };
  f.tail = [st, stream, final_object](const std::vector<JobOutcome>& outcomes) {
    const JobOutcome& o = outcomes[0];
    if (o.reason == FinishReason::kCancelled || o.reason == FinishReason::kError) {
      return Dump(Json{{"error", OutcomeError(o).message}}) + (stream ? "\n" : "");
    }
    Json j = final_object(o);
    if (stream) {  // the text came in the pieces; the last object closes the reply
      if (j.contains("message")) {
        j["message"] = {{"role", "assistant"}, {"content", ""}};
      } else {
        j["response"] = "";
        j.erase("thinking");
      }
      return Dump(j) + "\n";
    }
    return Dump(j);
  };
  return f;
}

}  // namespace

ApiOr<Json> OllamaChatToOpenAi(const Json& body) {
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  Json out = Json::object();
  if (auto e = TranslateCommon(body, &out)) return *e;
  auto msgs = body.find("messages");
  if (msgs == body.end() || !msgs->is_array()) {
    return BadRequest("'messages' must be an array", "messages", "invalid_type");
  }
  Json list = Json::array();
  int call_counter = 0;
  std::vector<std::string> open_calls;  // ids of the assistant's calls not answered yet
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Json& m = (*msgs)[i];
    const std::string path = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return BadRequest("'" + path + "' must be an object", path, "invalid_type");
    Json o = Json::object();
    for (const char* k : {"role", "content"}) {
      if (m.contains(k)) o[k] = m[k];
    }
    if (m.contains("images")) {
      Json content = o.value("content", Json(""));
      if (auto e = TranslateImages(m, path, &content)) return *e;
      o["content"] = std::move(content);
    }
    if (auto t = m.find("thinking"); t != m.end() && t->is_string()) o["reasoning_content"] = *t;
    auto calls = m.find("tool_calls");
    if (calls != m.end() && !calls->is_null()) {
      if (!calls->is_array()) return BadRequest("'" + path + ".tool_calls' must be an array", path + ".tool_calls");
      Json oc = Json::array();
      open_calls.clear();
      for (size_t k = 0; k < calls->size(); ++k) {
        const Json& c = (*calls)[k];
        const std::string cp = path + ".tool_calls[" + std::to_string(k) + "]";
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) {
          return BadRequest("'" + cp + ".function' must be an object", cp + ".function");
        }
        const Json& fn = c["function"];
        Json args = fn.value("arguments", Json::object());
        if (args.is_string()) args = Json::parse(args.get<std::string>(), nullptr, false);
        if (!args.is_object()) {
          return BadRequest("'" + cp + ".function.arguments' must be an object", cp + ".function.arguments");
        }
        const std::string id = "call_" + std::to_string(call_counter++);
        open_calls.push_back(id);
        oc.push_back({{"id", id}, {"type", "function"},
                      {"function", {{"name", StrField(fn, "name")}, {"arguments", Dump(args)}}}});
      }
      o["tool_calls"] = std::move(oc);
    }
    if (StrField(m, "role") == "tool") {
      // Ollama answers calls in order, naming the tool (tool_name) rather than the call.
      if (!open_calls.empty()) {
        o["tool_call_id"] = open_calls.front();
        open_calls.erase(open_calls.begin());
      } else {
        o["tool_call_id"] = "call_" + std::to_string(call_counter++);
      }
      if (auto n = m.find("tool_name"); n != m.end() && n->is_string()) o["name"] = *n;
      if (!o.contains("content")) o["content"] = "";
    }
    list.push_back(std::move(o));
  }
  out["messages"] = std::move(list);
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) out["tools"] = *t;
  // An extension (Ollama has none): OpenAI's tool_choice, to force a call.
  if (auto t = body.find("tool_choice"); t != body.end() && !t->is_null()) out["tool_choice"] = *t;
  return out;
}

ApiOr<Json> OllamaGenerateToOpenAi(const Json& body, bool* raw) {
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  Json out = Json::object();
  if (auto e = TranslateCommon(body, &out)) return *e;
  auto p = body.find("prompt");
  if (p != body.end() && !p->is_null() && !p->is_string()) {
    return BadRequest("'prompt' must be a string", "prompt", "invalid_type");
  }
  const std::string prompt = p == body.end() || p->is_null() ? "" : p->get<std::string>();
  auto r = body.find("raw");
  *raw = r != body.end() && r->is_boolean() && r->get<bool>();
  for (const char* unsupported : {"suffix", "template"}) {
    auto u = body.find(unsupported);
    if (u != body.end() && u->is_string() && !u->get<std::string>().empty()) {
      return BadRequest(std::string("'") + unsupported + "' is not supported", unsupported, "unsupported_value");
    }
  }
  const bool images = body.contains("images") && body["images"].is_array() && !body["images"].empty();
  if (*raw) {
    if (images) return BadRequest("'images' cannot go with 'raw': true (a raw prompt has no image slots)", "images");
    out["prompt"] = prompt;
    if (!out.contains("max_tokens")) out["max_tokens"] = std::numeric_limits<int32_t>::max();
    return out;
  }
  Json msgs = Json::array();
  if (auto s = body.find("system"); s != body.end() && s->is_string() && !s->get<std::string>().empty()) {
    msgs.push_back({{"role", "system"}, {"content", *s}});
  }
  Json content = prompt;
  if (auto e = TranslateImages(body, "", &content)) return *e;
  msgs.push_back({{"role", "user"}, {"content", std::move(content)}});
  out["messages"] = std::move(msgs);
  return out;
}

HttpReply OllamaChat(ApiHandlers& h, std::string_view body) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return OllamaError(j.error());
  auto oa = OllamaChatToOpenAi(*j);
  if (!oa.ok()) return OllamaError(oa.error());
  auto req = ParseChatRequest(*oa, h.options().limits);
  if (!req.ok()) return OllamaError(RenameParam(req.error()));
  auto started = h.StartChat(*req);
  if (!started.ok()) return OllamaError(started.error());
  const std::string model = req->model.empty() ? h.model_id() : req->model;
  ReplyFormat f = OllamaFormat(/*chat=*/true, req->stream, model, *started);
  return h.Respond(std::move(started).value(), std::move(f));
}

HttpReply OllamaGenerate(ApiHandlers& h, std::string_view body) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return OllamaError(j.error());
  bool raw = false;
  auto oa = OllamaGenerateToOpenAi(*j, &raw);
  if (!oa.ok()) return OllamaError(oa.error());
  const std::string model = oa->value("model", h.model_id());
  // An empty prompt loads the model (clients use it to preload): it is always loaded.
  const Json& prompt = raw ? (*oa)["prompt"] : (*oa)["messages"].back()["content"];
  if (prompt.is_string() && prompt.get<std::string>().empty()) {
    return JsonReply(Json{{"model", model}, {"created_at", NowIso()}, {"response", ""},
                          {"done", true}, {"done_reason", "load"}});
  }
  if (raw) {
    auto req = ParseCompletionRequest(*oa, h.options().limits);
    if (!req.ok()) return OllamaError(RenameParam(req.error()));
    auto ids = h.model().Tokenize(req->prompt);
    if (!ids.ok()) return OllamaError(ids.error());
    auto started = h.StartText(std::move(ids).value(), *req);
    if (!started.ok()) return OllamaError(started.error());
    ReplyFormat f = OllamaFormat(/*chat=*/false, req->stream, model, *started);
    return h.Respond(std::move(started).value(), std::move(f));
  }
  auto req = ParseChatRequest(*oa, h.options().limits);
  if (!req.ok()) return OllamaError(RenameParam(req.error()));
  auto started = h.StartChat(*req);
  if (!started.ok()) return OllamaError(started.error());
  ReplyFormat f = OllamaFormat(/*chat=*/false, req->stream, model, *started);
  return h.Respond(std::move(started).value(), std::move(f));
}

namespace {

Json Details() {
  return Json{{"parent_model", ""},   {"format", "gemlet"}, {"family", "gemma4"},
              {"families", {"gemma4"}}, {"parameter_size", ""}, {"quantization_level", ""}};
}


}  // namespace

HttpReply OllamaTags(ApiHandlers& h) {
  std::vector<CatalogEntry> all = h.options().catalog;
  if (all.empty()) all.push_back(CatalogEntry{h.model_id(), "", h.options().model_bytes, h.created()});
  Json models = Json::array();
  for (const CatalogEntry& e : all) {
    models.push_back({{"name", e.id},
                      {"model", e.id},
                      {"modified_at", IsoTime(e.created * 1000)},
                      {"size", e.bytes},
                      {"digest", ""},
                      {"details", Details()}});
  }
  return JsonReply(Json{{"models", std::move(models)}});
}

HttpReply OllamaPs(ApiHandlers& h) {
  const std::string id = h.model_id();
  return JsonReply(Json{{"models", Json::array({{{"name", id},
                                                 {"model", id},
                                                 {"size", h.options().model_bytes},
                                                 {"digest", ""},
                                                 {"details", Details()},
                                                 {"expires_at", "9999-12-31T23:59:59Z"},
                                                 {"size_vram", 0},
                                                 {"context_length", h.options().context}}})}});
}

HttpReply OllamaShow(ApiHandlers& h, std::string_view body) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return OllamaError(j.error());
  std::string name = StrField(*j, "model");
  if (name.empty() && j->contains("name") && (*j)["name"].is_string()) name = (*j)["name"].get<std::string>();
  bool known = NamesModel(name, h.model_id());
  for (const CatalogEntry& e : h.options().catalog) known = known || NamesModel(name, e.id);
  if (!known) {
    return OllamaError(NotFound("model '" + name + "' not found", "model_not_found"));
  }
  return JsonReply(Json{{"modelfile", ""},
                        {"parameters", ""},
                        {"template", ""},
                        {"details", Details()},
                        {"model_info", {{"general.architecture", "gemma4"},
                                        {"gemma4.context_length", h.options().context}}},
                        {"capabilities", {"completion", "tools", "thinking"}},
                        {"modified_at", IsoTime(h.created() * 1000)}});
}

HttpReply OllamaVersion() { return JsonReply(Json{{"version", GEMLET_VERSION}}); }

}  // namespace gemlet::server
