// What the HTTP layer needs from a loaded model besides its sequences and steps: the chat template,
// tokenizer, incremental detokenizer, stop tokens, sampler and tool-call parser.
// model_backend.h implements it with the gemlet runtime (Gemma 4); tests use a fake.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/server/api_error.h"
#include "tools/server/api_types.h"
#include "runtime/sequence_model.h"
#include "tools/server/backend.h"

namespace gemlet::server {

// How the output router treats a generated token.
enum class TokenRole {
  kText,           // ordinary text
  kThinkStart,     // opens the thought channel (Gemma 4: <|channel>)
  kThinkEnd,       // closes it (<channel|>)
  kToolCallStart,  // <|tool_call>
  kToolCallEnd,    // <tool_call|>
  kHidden,         // other control tokens: not shown
};

struct RenderedPrompt {
  std::vector<int32_t> tokens;
  // Tokens of the leading part many requests share (the system turn), 0 if none: the prefix
  // cache keeps a copy of the state there.
  int64_t shared_prefix = 0;
  // Tokens at the end of `tokens` that the reply already begins with (a forced tool call
  // opening such as "<|tool_call>call:NAME{"): the output router reads them first.
  std::vector<int32_t> reply_prefix;
};

// Incremental detokenizer: complete UTF-8 text as tokens arrive.
class TextStream {
 public:
  virtual ~TextStream() = default;
  virtual std::string Push(int32_t token) = 0;
  // Whatever is still held (an incomplete UTF-8 tail, replaced by U+FFFD).
  virtual std::string Flush() = 0;
};

class ChatModel {
 public:
  virtual ~ChatModel() = default;
  virtual const std::string& id() const = 0;
  virtual runtime::SequenceModel& backend() = 0;

  virtual ApiOr<RenderedPrompt> RenderChat(const ChatRequest& req) = 0;
  // A raw /v1/completions prompt; special tokens written as text are matched.
  virtual ApiOr<std::vector<int32_t>> Tokenize(const std::string& text) = 0;
  virtual std::unique_ptr<TextStream> NewTextStream() = 0;
  virtual TokenRole RoleOf(int32_t token) const = 0;
  virtual std::vector<int32_t> StopTokens() const = 0;
  virtual std::unique_ptr<TokenSampler> NewSampler(const SamplingOptions& options,
                                                   uint64_t seed) = 0;
  // Parses the text between the tool-call markers ("call:NAME{...}" for Gemma 4) into a call
  // whose arguments are JSON text. The id is filled by the caller.
  virtual ApiOr<ToolCall> ParseToolCall(const std::string& body) = 0;
};

}  // namespace gemlet::server
