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
// Closing starts when the budget is within this many tokens of the fewest needed to complete.
constexpr int64_t kClosingMargin = 4;

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
    const TokenType type = tok.Type(id);
    if (type == TokenType::kUnknown || type == TokenType::kUnused) continue;  // never allowed
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
  // The one-character tokens (printable ASCII, tab, newline, and the control-token symbols,
  // which a grammar may need to close: a string's quote, a call's end) and the byte tokens of
  // non-ASCII text: the closing steps' candidates, each one unit of grammar::CompletionCost.
  auto shorts = std::make_shared<std::vector<int32_t>>();
  for (size_t t = 0; t < vocab->size(); ++t) {
    const int32_t id = static_cast<int32_t>(t);
    if (vocab->kind(id) != grammar::TokenKind::kText) continue;
    const std::string_view p = vocab->piece(id);
    const bool ascii = p.size() == 1 && ((p[0] >= 0x20 && p[0] < 0x7F) || p[0] == '\n' || p[0] == '\t');
    const bool byte = p.size() == 1 && static_cast<unsigned char>(p[0]) >= 0x80;
    const bool symbol = p.size() == 4 && p[0] == '\xF4';
    if (ascii || byte || symbol) shorts->push_back(id);
  }
  std::unique_ptr<GrammarConstraint> c(
      new GrammarConstraint(grammar::TokenMatcher(std::move(vocab), std::move(m)), schedule));
  c->cost_ = std::make_shared<const grammar::CompletionCost>(*shared);
  c->short_tokens_ = std::move(shorts);
  return c;
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
  if (phase_ != Phase::kWaiting) return !IsEnd(t);
  // Lazy: a call may open only while the budget still holds the whole call (the trigger, the
  // grammar's fewest characters and an end token).
  if (budget_ >= 0 && IsTrigger(t) && budget_ < cost_->Min(start_.matcher().state()) + 2 + kClosingMargin) {
    return false;
  }
  return true;
}

void GrammarConstraint::SetBudget(int64_t tokens) {
  budget_ = tokens;
  closing_ready_ = false;
}

const std::vector<int32_t>* GrammarConstraint::Closing() {
  if (closing_ready_) return closing_on_ ? &closing_ : nullptr;
  closing_ready_ = true;
  closing_on_ = false;
  closing_.clear();
  if (budget_ < 0 || phase_ == Phase::kWaiting) return nullptr;
  if (phase_ == Phase::kBlock) {
    // The block must close in time for the grammar: its close token and the grammar's fewest.
    const int64_t need = 1 + cost_->Min(start_.matcher().state()) + 1;
    if (budget_ > need + kClosingMargin) return nullptr;
    closing_on_ = true;
    closing_.push_back(schedule_.block_close);
    return &closing_;
  }
  const int64_t now = cost_->Min(matcher_.matcher().state());
  if (budget_ > now + 1 + kClosingMargin) return nullptr;
  // Each one-character continuation and how close it leaves the grammar to the end; keep
  // those that leave room for the rest and the end token (else the closest ones).
  grammar::TokenMatcher probe = matcher_;
  probe.set_max_history(1);
  std::vector<std::pair<int64_t, int32_t>> options;
  for (int32_t t : *short_tokens_) {
    if (!probe.IsAllowed(t) || !probe.AcceptToken(t)) continue;
    options.push_back({cost_->Min(probe.matcher().state()), t});
    (void)probe.Rollback(1);
  }
  const bool accepting = matcher_.IsAccepting();
  if (options.empty() && !accepting) return nullptr;  // no short way on: the ordinary rules
  // A token is kept if the rest (m tokens at worst: CompletionCost) and the end token
  // still fit: m <= budget - 2. When even the best one does not, the best ones (the output
  // will be cut, but as close to whole as it can be) — unless it may end now: then it ends.
  int64_t best = grammar::CompletionCost::kNever;
  for (const auto& [m, t] : options) best = std::min(best, m);
  const int64_t limit = accepting ? budget_ - 2 : std::max(best, budget_ - 2);
  for (const auto& [m, t] : options) {
    if (m <= limit) closing_.push_back(t);
  }
  if (accepting) {
    for (int32_t e : matcher_.vocab().end_ids()) closing_.push_back(e);
  }
  std::sort(closing_.begin(), closing_.end());
  closing_on_ = true;
  return &closing_;
}

bool GrammarConstraint::Allows(int32_t t) {
  if (t < 0 || static_cast<size_t>(t) >= matcher_.vocab().size()) return false;
  if (const std::vector<int32_t>* c = Closing()) return std::binary_search(c->begin(), c->end(), t);
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
  if (const std::vector<int32_t>* c = Closing()) {
    std::fill(mask.begin(), mask.end(), 0u);
    for (int32_t t : *c) mask[static_cast<size_t>(t) >> 5] |= 1u << (t & 31);
    return;
  }
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
  // The next step's budget is one less (until the caller says otherwise).
  if (budget_ > 0) --budget_;
  closing_ready_ = false;
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
    if (budget_ >= 0) ++budget_;
  }
  closing_ready_ = false;
  return Status::Ok();
}

bool GrammarConstraint::Complete() const {
  return phase_ == Phase::kGrammar && schedule_.triggers.empty() && matcher_.IsDeadEnd();
}

std::unique_ptr<TokenConstraint> GrammarConstraint::Clone() const {
  return std::unique_ptr<TokenConstraint>(new GrammarConstraint(*this));
}

}  // namespace gemlet::runtime
