#include "runtime/grammar_constraint.h"

#include <algorithm>
#include <cstdio>

#include "format/gemma4_tokens.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_symbols.h"

namespace gemlet::runtime {
namespace {

constexpr size_t kMaxUndo = 256;  // tokens Rollback can undo

// Whether `bytes` could contribute to writing a code point of plane 16: it holds the lead
// byte 0xF4 (U+100000..U+10FFFF are exactly the 4-byte sequences led by F4).
bool TouchesSymbolPlane(std::string_view bytes) {
  return bytes.find('\xF4') != std::string_view::npos;
}

}  // namespace

std::string GrammarSymbol(int32_t id) { return grammar::TokenSymbolGbnf(id); }

Result<std::shared_ptr<const grammar::Vocabulary>> GrammarVocabulary(const Tokenizer& tok) {
  const int32_t n = tok.size();
  std::vector<std::string> pieces(n);
  std::vector<grammar::TokenKind> kinds(n, grammar::TokenKind::kSpecial);
  static constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁
  for (int32_t id = 0; id < n; ++id) {
    if (tok.IsEog(id)) {
      kinds[id] = grammar::TokenKind::kEnd;
      continue;
    }
    if (tok.IsSpecial(id)) {
      if (id <= grammar::kMaxSymbolToken) {
        pieces[id] = grammar::TokenSymbolUtf8(id);
        kinds[id] = grammar::TokenKind::kText;
      }
      continue;
    }
    const int byte = tok.ByteValue(id);
    std::string p;
    if (byte >= 0) {
      p.assign(1, static_cast<char>(byte));
    } else {
      std::string_view piece = tok.Piece(id);
      for (size_t at = 0; at < piece.size();) {
        if (piece.compare(at, kSpace.size(), kSpace) == 0) {
          p += ' ';
          at += kSpace.size();
        } else {
          p += piece[at++];
        }
      }
    }
    if (p.empty() || TouchesSymbolPlane(p)) continue;  // never allowed
    pieces[id] = std::move(p);
    kinds[id] = grammar::TokenKind::kText;
  }
  return grammar::Vocabulary::Create(pieces, kinds);
}

GrammarSchedule ChatAnswerSchedule(bool thinking) {
  GrammarSchedule s;
  if (thinking) {
    s.block_open = gemma4::kChannelOpenId;
    s.block_close = gemma4::kChannelCloseId;
  }
  return s;
}

Result<std::unique_ptr<GrammarConstraint>> GrammarConstraint::Create(
    std::string_view gbnf, std::shared_ptr<const grammar::Vocabulary> vocab,
    const GrammarSchedule& schedule, std::string_view start) {
  ASSIGN_OR_RETURN(grammar::Grammar g, grammar::ParseGbnf(gbnf, start));
  auto shared = std::make_shared<const grammar::Grammar>(std::move(g));
  grammar::Matcher m(shared);
  m.set_max_history(kMaxUndo);
  return std::unique_ptr<GrammarConstraint>(
      new GrammarConstraint(grammar::TokenMatcher(std::move(vocab), std::move(m)), schedule));
}

GrammarConstraint::GrammarConstraint(grammar::TokenMatcher start, const GrammarSchedule& schedule)
    : start_(start), matcher_(std::move(start)), schedule_(schedule) {
  phase_ = !schedule_.triggers.empty() ? Phase::kWaiting
           : schedule_.block_open >= 0 ? Phase::kStart
                                       : Phase::kGrammar;
}

bool GrammarConstraint::IsTrigger(int32_t t) const {
  return std::find(schedule_.triggers.begin(), schedule_.triggers.end(), t) !=
         schedule_.triggers.end();
}

bool GrammarConstraint::IsEnd(int32_t t) const {
  return matcher_.vocab().kind(t) == grammar::TokenKind::kEnd;
}

// In a free phase: any token of the vocabulary; inside the block not an end (the block must
// close so that the constrained part follows).
bool GrammarConstraint::FreeAllows(int32_t t) const {
  if (t < 0 || static_cast<size_t>(t) >= matcher_.vocab().size()) return false;
  return phase_ == Phase::kWaiting || !IsEnd(t);
}

bool GrammarConstraint::Allows(int32_t t) {
  if (t < 0 || static_cast<size_t>(t) >= matcher_.vocab().size()) return false;
  switch (phase_) {
    case Phase::kWaiting:
    case Phase::kBlock:
      return FreeAllows(t);
    case Phase::kStart:
      return t == schedule_.block_open || matcher_.IsAllowed(t);
    case Phase::kGrammar:
      return matcher_.IsAllowed(t);
  }
  return false;
}

void GrammarConstraint::Mask(std::span<uint32_t> mask) {
  const size_t V = matcher_.vocab().size();
  if (phase_ == Phase::kWaiting || phase_ == Phase::kBlock) {
    std::fill(mask.begin(), mask.end(), 0u);
    for (size_t t = 0; t < V; ++t) {
      if (FreeAllows(static_cast<int32_t>(t))) mask[t >> 5] |= 1u << (t & 31);
    }
    return;
  }
  matcher_.FillMask(mask);
  if (phase_ == Phase::kStart) {
    const int32_t o = schedule_.block_open;
    mask[static_cast<size_t>(o) >> 5] |= 1u << (o & 31);
  }
}

Status GrammarConstraint::Accept(int32_t t) {
  if (!Allows(t)) return InvalidArgument("token " + std::to_string(t) + " is not allowed by the grammar here");
  Undo u{phase_, false, std::nullopt};
  switch (phase_) {
    case Phase::kWaiting:
      if (IsTrigger(t)) {
        u.restarted = matcher_;
        matcher_ = start_;
        phase_ = Phase::kGrammar;
      }
      break;
    case Phase::kBlock:
      if (t == schedule_.block_close) phase_ = Phase::kGrammar;
      break;
    case Phase::kStart:
      if (t == schedule_.block_open) {
        phase_ = Phase::kBlock;
        break;
      }
      [[fallthrough]];
    case Phase::kGrammar:
      if (!IsEnd(t)) {
        if (!matcher_.AcceptToken(t)) return Internal("grammar refused an allowed token");
        u.matcher_step = true;
      }
      phase_ = Phase::kGrammar;
      // Lazy: a completed call frees the output again.
      if (!schedule_.triggers.empty() && matcher_.IsDeadEnd()) phase_ = Phase::kWaiting;
      break;
  }
  undo_.push_back(std::move(u));
  if (undo_.size() > kMaxUndo) undo_.pop_front();
  return Status::Ok();
}

Status GrammarConstraint::Rollback(int64_t n) {
  if (n < 0 || static_cast<size_t>(n) > undo_.size()) {
    return OutOfRange("grammar rollback of " + std::to_string(n) + " tokens; " +
                      std::to_string(undo_.size()) + " remembered");
  }
  for (int64_t i = 0; i < n; ++i) {
    Undo& u = undo_.back();
    if (u.matcher_step) RETURN_IF_ERROR(matcher_.Rollback(1));
    if (u.restarted) matcher_ = std::move(*u.restarted);
    phase_ = u.phase;
    undo_.pop_back();
  }
  return Status::Ok();
}

bool GrammarConstraint::Complete() const {
  return phase_ == Phase::kGrammar && schedule_.triggers.empty() && matcher_.IsDeadEnd();
}

std::unique_ptr<TokenConstraint> GrammarConstraint::Clone() const {
  return std::unique_ptr<TokenConstraint>(new GrammarConstraint(*this));
}

}  // namespace gemlet::runtime
