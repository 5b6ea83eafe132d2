#include "tools/server/model_backend.h"

#include <algorithm>

#include "format/gemma4_tokens.h"
#include "grammar/json_grammar.h"
#include "grammar/json_schema.h"
#include "text/chat_format.h"
#include "text/tool_call_grammar.h"
#include "runtime/sampler.h"
#include "tools/server/json_util.h"

namespace gemlet::server {
namespace {

// The scheduler's sampler interface over the runtime sampler, whose penalties then look at the
// tokens it generated (OpenAI's presence and frequency semantics), and the request's output
// constraint, advanced by every pick.
class RuntimeSampler : public TokenSampler {
 public:
  RuntimeSampler(const runtime::SamplerOptions& o, std::unique_ptr<runtime::TokenConstraint> c)
      : sampler_(o), constraint_(std::move(c)) {}
  int32_t Sample(std::span<float> logits) override {
    if (!constraint_) return sampler_.Sample(logits);
    const int32_t t = sampler_.Sample(logits, *constraint_);
    // Accept cannot refuse what Allows allowed; if it did, end as a dead end.
    if (t != runtime::kNoToken && !constraint_->Accept(t).ok()) return runtime::kNoToken;
    return t;
  }
  void SetBudget(int64_t tokens) override {
    if (constraint_) constraint_->SetBudget(tokens);
  }
  const runtime::PickLogprobs* logprobs() const override {
    return sampler_.options().logprobs >= 0 ? &sampler_.last_logprobs() : nullptr;
  }

 private:
  runtime::Sampler sampler_;
  std::unique_ptr<runtime::TokenConstraint> constraint_;
};

}  // namespace

Result<std::unique_ptr<GemmaChatModel>> GemmaChatModel::Create(const runtime::Engine& engine, std::string id,
                                                               int64_t context,
                                                               const runtime::ImageEncoderOptions& images) {
  if (!engine.tokenizer()) {
    return Corrupt("the model file has no vocabulary; the server needs one to read and write text");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::ImageEncoder> enc, runtime::ImageEncoder::Create(engine, images));
  std::unique_ptr<GemmaChatModel> m(new GemmaChatModel(engine, std::move(id), context));
  m->images_ = std::move(enc);
  m->audio_ = runtime::AudioEncoder::Create(engine);
  return m;
}

namespace {

// One image or audio part of a message, as EncodeMedia places and encodes it.
struct MediaPart {
  runtime::MediaKind kind;
  size_t offset, index;
  const std::vector<uint8_t>* bytes;
  const std::string* part;
  bool url;  // an image URL not fetched
};

}  // namespace

ApiOr<std::vector<runtime::MediaRef>> GemmaChatModel::EncodeMedia(const ChatRequest& req,
                                                                  std::vector<gemlet::ChatMessage>* msgs) {
  struct Kind {
    runtime::MediaKind kind;
    std::string_view placeholder, alias;
    bool available;
    const char* missing;  // the error when the model lacks the tower
  };
  const Kind kinds[] = {
      {runtime::MediaKind::kImage, gemma4::kImage, "{image}", images_ && images_->available(),
       "this model has no vision tower: it reads text only"},
      {runtime::MediaKind::kAudio, gemma4::kAudio, "{audio}", audio_ && audio_->available(),
       "this model has no audio tower: it reads no audio"},
  };
  std::vector<runtime::MediaRef> media;
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const ChatMessage& m = req.messages[i];
    std::vector<MediaPart> parts;
    for (const ImageInput& im : m.images)
      parts.push_back({runtime::MediaKind::kImage, im.offset, im.index, &im.bytes, &im.part, !im.url.empty()});
    for (const AudioInput& a : m.audios)
      parts.push_back({runtime::MediaKind::kAudio, a.offset, a.index, &a.bytes, &a.part, false});
    if (parts.empty()) continue;
    std::stable_sort(parts.begin(), parts.end(), [](const MediaPart& a, const MediaPart& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.index < b.index;
    });
    std::string& content = (*msgs)[i].content;
    const std::string content_path = "messages[" + std::to_string(i) + "].content";
    // Each item where its part was, unless the text places that kind itself ({image} or
    // <|image|>, {audio} or <|audio|>, once per item: runtime::PlaceMedia).
    // Per kind (indexed by MediaKind): its parts' count and whether the text places them.
    int64_t count[2] = {0, 0};
    bool placed[2] = {false, false};
    for (const MediaPart& p : parts) {
      const Kind& k = kinds[static_cast<int>(p.kind)];
      if (count[static_cast<int>(p.kind)]++ > 0) continue;  // checked at its first part
      if (!k.available) return BadRequest("'" + *p.part + "': " + k.missing, *p.part, "unsupported_content");
      placed[static_cast<int>(p.kind)] =
          content.find(k.placeholder) != std::string::npos || content.find(k.alias) != std::string::npos;
    }
    // Unplaced parts go in at their offsets (in the text as it was, before any placement).
    std::string text;
    size_t at = 0;
    for (const MediaPart& p : parts) {
      if (placed[static_cast<int>(p.kind)]) continue;
      const size_t off = std::min(std::max(p.offset, at), content.size());
      text.append(content, at, off - at);
      text += kinds[static_cast<int>(p.kind)].placeholder;
      at = off;
    }
    text.append(content, at, std::string::npos);
    content = std::move(text);
    for (const Kind& k : kinds) {
      if (!placed[static_cast<int>(k.kind)]) continue;
      auto placed_text = runtime::PlaceMedia(content, count[static_cast<int>(k.kind)], k.placeholder, k.alias);
      if (!placed_text.ok()) {
        return BadRequest("'" + content_path + "': " + placed_text.status().message(), content_path, "invalid_value");
      }
      content = std::move(placed_text).value();
    }
    for (const MediaPart& p : parts) {
      const bool image = p.kind == runtime::MediaKind::kImage;
      if (p.url) {
        return BadRequest("'" + *p.part + "': image URLs are not fetched by this server (--allow-image-urls)",
                          *p.part, "invalid_image");
      }
      auto e = image ? images_->Encode(*p.bytes, *p.part) : audio_->Encode(*p.bytes, *p.part);
      if (!e.ok()) {
        if (e.status().code() == ErrorCode::kInternal) return FromStatus(e.status(), *p.part);
        return BadRequest(e.status().message(), *p.part, image ? "invalid_image" : "invalid_audio");
      }
      media.push_back(std::move(e).value());
    }
  }
  return media;
}

GemmaChatModel::GemmaChatModel(const runtime::Engine& engine, std::string id, int64_t context)
    : engine_(engine),
      tok_(*engine.tokenizer()),
      id_(std::move(id)),
      backend_(engine, runtime::SessionOptions{.context_limit = context}),
      vocab_(*engine.tokenizer()) {}

ApiOr<RenderedPrompt> GemmaChatModel::RenderChat(const ChatRequest& req) {
  std::vector<gemlet::ChatMessage> msgs;
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const auto& m = req.messages[i];
    gemlet::ChatMessage cm;
    cm.role = RoleName(m.role);
    cm.content = m.content;
    cm.reasoning = m.reasoning;
    cm.tool_call_id = m.tool_call_id;
    cm.name = m.name;
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      const auto& tc = m.tool_calls[k];
      Json args = Json::parse(tc.arguments, nullptr, false);
      if (args.is_discarded() || !args.is_object()) {
        const std::string p = "messages[" + std::to_string(i) + "].tool_calls[" + std::to_string(k) +
                              "].function.arguments";
        return BadRequest("'" + p + "' must be a JSON object encoded as a string", p, "invalid_value");
      }
      cm.tool_calls.push_back(gemlet::ChatToolCall{tc.id, tc.name, std::move(args)});
    }
    msgs.push_back(std::move(cm));
  }
  auto media = EncodeMedia(req, &msgs);
  if (!media.ok()) return media.error();
  ChatOptions opt;
  opt.add_generation_prompt = true;
  opt.enable_thinking = req.enable_thinking;
  if (req.tool_choice != ToolChoice::kNone) {
    for (const auto& t : req.tools) {
      Json fn = {{"name", t.name}, {"parameters", t.parameters}};
      if (!t.description.empty()) fn["description"] = t.description;
      opt.tools.push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
    }
  }
  // tool_choice "required" and a named function are enforced by ChatConstraint's grammar,
  // which leaves a thought block free first (a forced opening in the prompt would not).
  auto rendered = RenderChatPrompt(msgs, opt);
  if (!rendered.ok()) return FromStatus(rendered.status(), "messages");
  const std::string& text = rendered->text;
  auto ids = tok_.Encode(text);
  if (!ids.ok()) return FromStatus(ids.status(), "messages");
  RenderedPrompt p;
  p.tokens = std::move(ids).value();
  // The reply's forced opening, as the tokens that end the prompt.
  if (!rendered->reply_prefix.empty()) {
    auto f = tok_.Encode(rendered->reply_prefix);
    if (f.ok() && f->size() <= p.tokens.size() &&
        std::equal(f->begin(), f->end(), p.tokens.end() - static_cast<std::ptrdiff_t>(f->size()))) {
      p.reply_prefix = std::move(f).value();
    }
  }
  // The system turn is what requests share most often.
  if (rendered->shared_prefix_chars > 0) {
    auto pre = tok_.Encode(std::string_view(text).substr(0, rendered->shared_prefix_chars));
    if (pre.ok() && pre->size() < p.tokens.size() && std::equal(pre->begin(), pre->end(), p.tokens.begin())) {
      p.shared_prefix = static_cast<int64_t>(pre->size());
    }
  }
  if (!media->empty()) {
    // Each <|image|> becomes boi, n × image, eoi (<|audio|>: boa, n × audio, eoa); those n rows
    // take the item's soft tokens.
    const std::vector<runtime::MediaTokens> kinds = runtime::MediaKindTokens(engine_);  // by MediaKind
    for (const runtime::MediaTokens& k : kinds) {
      if (k.placeholder >= 0 && std::find(p.tokens.begin(), p.tokens.begin() + p.shared_prefix, k.placeholder) !=
                                    p.tokens.begin() + p.shared_prefix) {
        p.shared_prefix = 0;  // media in the system turn: the expansion moves the boundary
      }
    }
    auto expanded = runtime::ExpandMedia(p.tokens, *media, kinds);
    if (!expanded.ok()) return BadRequest(expanded.status().message(), "messages", "invalid_value");
    p.tokens = std::move(expanded->tokens);
    p.media = std::move(expanded->media);
  }
  return p;
}

ApiOr<RenderedPrompt> GemmaChatModel::RenderWindow(const runtime::WindowTurn& turn) {
  auto mp = runtime::WindowPrompt(engine_, tok_, turn);
  if (!mp.ok()) return FromStatus(mp.status(), "file");
  RenderedPrompt p;
  p.tokens = std::move(mp->tokens);
  p.media = std::move(mp->media);
  return p;
}

ApiOr<std::vector<int32_t>> GemmaChatModel::Tokenize(const std::string& text) {
  auto ids = tok_.Encode(text);
  if (!ids.ok()) return FromStatus(ids.status(), "prompt");
  return std::move(ids).value();
}

std::unique_ptr<TokenSampler> GemmaChatModel::NewSampler(
    const SamplingOptions& o, uint64_t seed, std::unique_ptr<runtime::TokenConstraint> constraint) {
  runtime::SamplerOptions so;
  so.temperature = o.temperature.value_or(1.0);
  so.top_k = o.top_k.value_or(0);
  so.top_p = o.top_p.value_or(1.0);
  if (so.top_p <= 0) so.top_p = 1e-9;  // top_p 0 keeps only the most likely token
  so.min_p = o.min_p.value_or(0.0);
  so.seed = seed;
  so.presence_penalty = o.presence_penalty;
  so.frequency_penalty = o.frequency_penalty;
  so.penalty_last_n = 0;  // every generated token
  so.logit_bias = o.logit_bias;
  so.logprobs = o.logprobs;
  return std::make_unique<RuntimeSampler>(so, std::move(constraint));
}

ApiOr<std::shared_ptr<const grammar::Vocabulary>> GemmaChatModel::GrammarVocab() {
  std::lock_guard<std::mutex> lock(grammar_mu_);  // the first request builds it (~0.1 s)
  if (!grammar_vocab_) {
    auto v = runtime::GrammarVocabulary(tok_);
    if (!v.ok()) return FromStatus(v.status());
    grammar_vocab_ = std::move(v).value();
  }
  return grammar_vocab_;
}

ApiOr<std::unique_ptr<runtime::TokenConstraint>> GemmaChatModel::Compile(
    const std::string& gbnf, const std::string& start, const runtime::GrammarSchedule& schedule,
    const std::string& param) {
  std::string key = start + '\n' + std::to_string(schedule.block_open) + ',' +
                    std::to_string(schedule.block_close) + ',';
  for (int32_t t : schedule.triggers) key += std::to_string(t) + ' ';
  key += '\n' + gbnf;
  {
    std::lock_guard<std::mutex> lock(grammar_mu_);
    for (auto it = compiled_.begin(); it != compiled_.end(); ++it) {
      if (it->key != key) continue;
      compiled_.splice(compiled_.begin(), compiled_, it);
      return it->prototype->Clone();
    }
  }
  auto vocab = GrammarVocab();
  if (!vocab.ok()) return vocab.error();
  auto c = runtime::GrammarConstraint::Create(gbnf, *vocab, schedule, start);
  if (!c.ok()) return BadRequest(c.status().message(), param, "invalid_value");
  std::unique_ptr<runtime::TokenConstraint> copy = (*c)->Clone();
  constexpr size_t kMaxCompiled = 16;
  std::lock_guard<std::mutex> lock(grammar_mu_);
  compiled_.push_front({std::move(key), std::move(c).value()});
  if (compiled_.size() > kMaxCompiled) compiled_.pop_back();
  return copy;
}

namespace {

// The GBNF of a response format (start rule `root`), or "" for free text.
ApiOr<std::string> FormatGrammar(const OutputFormat& f) {
  switch (f.kind) {
    case OutputFormat::Kind::kText:
      return std::string();
    case OutputFormat::Kind::kJsonObject:
      return grammar::JsonObjectGrammar();
    case OutputFormat::Kind::kJsonSchema: {
      auto g = grammar::JsonSchemaToGbnf(f.schema);
      if (!g.ok()) return BadRequest(g.status().message(), f.param, "invalid_value");
      return std::move(g).value();
    }
    case OutputFormat::Kind::kGrammar:
      if (f.grammar.empty()) return BadRequest("'grammar' is empty", f.param, "invalid_value");
      return f.grammar;
  }
  return std::string();
}

}  // namespace

ApiOr<std::unique_ptr<runtime::TokenConstraint>> GemmaChatModel::TextConstraint(
    const OutputFormat& format) {
  auto g = FormatGrammar(format);
  if (!g.ok()) return g.error();
  if (g->empty()) return std::unique_ptr<runtime::TokenConstraint>();
  return Compile(*g, "root", {}, format.param);
}

ApiOr<std::unique_ptr<runtime::TokenConstraint>> GemmaChatModel::ChatConstraint(const ChatRequest& req) {
  auto fmt = FormatGrammar(req.format);
  if (!fmt.ok()) return fmt.error();
  // With thinking on, a thought block may come first, free; nothing forces one.
  const runtime::GrammarSchedule schedule = runtime::ChatAnswerSchedule(req.enable_thinking);
  const bool tools = !req.tools.empty() && req.tool_choice != ToolChoice::kNone;
  if (!tools) {
    if (fmt->empty()) return std::unique_ptr<runtime::TokenConstraint>();
    return Compile(*fmt, "root", schedule, req.format.param);
  }
  Json decls = Json::array();
  for (const auto& t : req.tools) decls.push_back(Json{{"name", t.name}, {"parameters", t.parameters}});
  ToolCallGrammarOptions o;
  if (req.tool_choice == ToolChoice::kFunction) o.only = req.tool_choice_name;
  o.max_calls = req.parallel_tool_calls && req.tool_choice != ToolChoice::kFunction ? 4 : 1;
  if (req.tool_choice == ToolChoice::kAuto) {
    if (fmt->empty()) {
      // Free until the model opens a call; the call itself is constrained.
      o.form = ToolCallGrammarOptions::Form::kAfterOpen;
      auto g = ToolCallGrammar(decls, o);
      if (!g.ok()) return FromStatus(g.status(), "tools");
      runtime::GrammarSchedule lazy;
      lazy.triggers = {gemma4::kToolCallOpenId};
      return Compile(*g, o.start, lazy, "tools");
    }
    // A response format beside tools: calls, or the formatted answer.
    o.form = ToolCallGrammarOptions::Form::kCalls;
    auto g = ToolCallGrammar(decls, o);
    if (!g.ok()) return FromStatus(g.status(), "tools");
    const std::string start = o.start + "-or-answer";
    return Compile(*fmt + "\n" + *g + "\n" + start + " ::= " + o.start + " | root\n", start,
                   schedule, "tools");
  }
  o.form = ToolCallGrammarOptions::Form::kCalls;  // required or named: calls only
  auto g = ToolCallGrammar(decls, o);
  if (!g.ok()) return FromStatus(g.status(), "tools");
  return Compile(*g, o.start, schedule, "tools");
}

}  // namespace gemlet::server
