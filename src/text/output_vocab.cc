#include "text/output_vocab.h"

#include <algorithm>
#include <string_view>

#include "format/gemma4_tokens.h"

namespace gemlet {

namespace {

class Gemma4Decoder : public TokenTextDecoder {
 public:
  explicit Gemma4Decoder(const Tokenizer& tok) : dec_(tok, /*skip_special=*/false) {}
  std::string Push(int32_t token) override {
    std::string out;
    if (!dec_.Push(token, &out).ok()) return {};  // an id outside the vocabulary shows nothing
    return out;
  }
  std::string Flush() override {
    std::string out;
    dec_.Flush(&out);
    return out;
  }
  std::string Peek() const override {
    std::string out;
    dec_.Peek(&out);
    return out;
  }

 private:
  StreamDecoder dec_;
};

}  // namespace

Gemma4OutputVocab::Gemma4OutputVocab(const Tokenizer& tokenizer)
    : tok_(tokenizer),
      channel_open_(tokenizer.PieceToId(gemma4::kChannelOpen)),
      channel_close_(tokenizer.PieceToId(gemma4::kChannelClose)),
      call_open_(tokenizer.PieceToId(gemma4::kToolCallOpen)),
      call_close_(tokenizer.PieceToId(gemma4::kToolCallClose)),
      quote_(tokenizer.PieceToId(gemma4::kQuote)) {
  for (std::string_view end : {gemma4::kTurnClose, gemma4::kToolResponseOpen, gemma4::kEos}) {
    if (const int32_t id = tokenizer.PieceToId(end); id >= 0) ends_.push_back(id);
  }
}

TokenKind Gemma4OutputVocab::KindOf(int32_t token) const {
  if (token < 0) return TokenKind::kHidden;
  if (token == channel_open_) return TokenKind::kChannelOpen;
  if (token == channel_close_) return TokenKind::kChannelClose;
  if (token == call_open_) return TokenKind::kToolCallOpen;
  if (token == call_close_) return TokenKind::kToolCallClose;
  if (token == quote_) return TokenKind::kText;
  if (std::find(ends_.begin(), ends_.end(), token) != ends_.end()) return TokenKind::kEndOfTurn;
  return tok_.IsSpecial(token) ? TokenKind::kHidden : TokenKind::kText;
}

std::unique_ptr<TokenTextDecoder> Gemma4OutputVocab::NewDecoder() const {
  return std::make_unique<Gemma4Decoder>(tok_);
}

}  // namespace gemlet
