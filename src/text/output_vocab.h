// What the output parser (text/chat_parser.h) needs to know about a vocabulary: which
// generated tokens are markers, and the text of the others. Gemma4OutputVocab reads it from a
// tokenizer; tests and the server's fake model supply their own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace gemlet {

enum class TokenKind {
  kText,           // ordinary text (Gemma 4's <|"|> too: it is part of the tool-call syntax)
  kChannelOpen,    // <|channel>: opens the thought channel
  kChannelClose,   // <channel|>
  kToolCallOpen,   // <|tool_call>
  kToolCallClose,  // <tool_call|>
  kEndOfTurn,      // <turn|>, <|tool_response>, <eos>: the answer is over
  kHidden,         // any other control token: shows nothing
};

// Incremental detokenizer: complete UTF-8 text as tokens arrive.
class TokenTextDecoder {
 public:
  virtual ~TokenTextDecoder() = default;
  // The text `token` completes (possibly nothing, while a UTF-8 character is split). Markers
  // decode to their text (the parser reads them that way when it reads markers in text).
  virtual std::string Push(int32_t token) = 0;
  // Whatever is still held (an incomplete UTF-8 tail, replaced by U+FFFD), and a reset.
  virtual std::string Flush() = 0;
  // What Flush() would return now, without the reset (the text held back so far, as it would
  // end if no more tokens came).
  virtual std::string Peek() const = 0;
};

class OutputVocab {
 public:
  virtual ~OutputVocab() = default;
  virtual TokenKind KindOf(int32_t token) const = 0;
  virtual std::unique_ptr<TokenTextDecoder> NewDecoder() const = 0;
};

// Gemma 4 over a tokenizer: the markers are the pieces named in format/gemma4_tokens.h (looked
// up, so a vocabulary without them simply has no such marker); the decoder keeps special
// tokens as their text.
class Gemma4OutputVocab : public OutputVocab {
 public:
  // `tokenizer` must outlive this.
  explicit Gemma4OutputVocab(const Tokenizer& tokenizer);
  TokenKind KindOf(int32_t token) const override;
  std::unique_ptr<TokenTextDecoder> NewDecoder() const override;

 private:
  const Tokenizer& tok_;
  int32_t channel_open_, channel_close_, call_open_, call_close_, quote_;
  std::vector<int32_t> ends_;
};

}  // namespace gemlet
