#include "tools/server/model_backend.h"

#include <algorithm>

#include "text/chat_format.h"
#include "runtime/sampler.h"
#include "tools/server/json_util.h"

namespace gemlet::server {
namespace {

// The scheduler's sampler interface over the runtime sampler, whose penalties then look at the
// tokens it generated (OpenAI's presence and frequency semantics).
class RuntimeSampler : public TokenSampler {
 public:
  explicit RuntimeSampler(const runtime::SamplerOptions& o) : sampler_(o) {}
  int32_t Sample(std::span<float> logits) override { return sampler_.Sample(logits); }

 private:
  runtime::Sampler sampler_;
};

}  // namespace

Result<std::unique_ptr<GemmaChatModel>> GemmaChatModel::Create(const runtime::Engine& engine, std::string id,
                                                               int64_t context) {
  if (!engine.tokenizer()) {
    return Corrupt("the model file has no vocabulary; the server needs one to read and write text");
  }
  return std::unique_ptr<GemmaChatModel>(new GemmaChatModel(engine, std::move(id), context));
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
  if (req.tool_choice == ToolChoice::kRequired) opt.forced_tool_call = ForcedToolCall::kAnyFunction;
  if (req.tool_choice == ToolChoice::kFunction) {
    opt.forced_tool_call = ForcedToolCall::kFunction;
    opt.forced_function = req.tool_choice_name;
  }
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
  return p;
}

ApiOr<std::vector<int32_t>> GemmaChatModel::Tokenize(const std::string& text) {
  auto ids = tok_.Encode(text);
  if (!ids.ok()) return FromStatus(ids.status(), "prompt");
  return std::move(ids).value();
}

std::unique_ptr<TokenSampler> GemmaChatModel::NewSampler(const SamplingOptions& o, uint64_t seed) {
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
  return std::make_unique<RuntimeSampler>(so);
}

}  // namespace gemlet::server
