// libFuzzer target: a GBNF grammar, then a NUL byte, then input for it. Checks: a parse error
// says where ("gbnf L:C: " or "gbnf: "); a parsed grammar prints (Grammar::ToString) as GBNF
// that parses back to the same rules; the matcher fed the input in chunks (the byte after the
// NUL sets the chunk size) never accepts into a dead state, agrees with CanAcceptBytes, and
// Rollback(1) then the same chunk again lands on the same state; over a small vocabulary (the
// 256 bytes and pieces cut from the input) the cached token mask equals the full walk and
// IsAllowed, token by token.
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DGEMLET_FUZZ=ON -DGEMLET_TESTS=OFF \
//     -DGEMLET_BENCH=OFF && cmake --build build-fuzz --target gbnf_fuzz
//   build-fuzz/fuzz/gbnf_fuzz fuzz/corpus/gbnf_fuzz -max_total_time=60
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/token_matcher.h"

namespace {

using namespace gemlet::grammar;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "gbnf_fuzz: %s\n", what.c_str());
  std::abort();
}

std::vector<std::string> SortedLines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const size_t nul = all.find('\0');
  const std::string text = all.substr(0, nul);
  const std::string input = nul == std::string::npos ? "" : all.substr(nul + 1);
  GbnfLimits limits;
  limits.max_elements = 1 << 14;  // keep each run short
  limits.max_repetition = 200;
  auto parsed = ParseGbnf(text, "root", limits);
  if (!parsed.ok()) {
    const std::string& m = parsed.status().message();
    if (m.rfind("gbnf ", 0) != 0 && m.rfind("gbnf: ", 0) != 0) Die("error without a place: " + m);
    return 0;
  }
  auto g = std::make_shared<const Grammar>(std::move(parsed).value());
  const std::string printed = g->ToString();
  auto again = ParseGbnf(printed, g->rule_names[g->root], limits);
  if (!again.ok()) Die("ToString does not parse back: " + again.status().message() + "\n" + printed);
  if (SortedLines(again->ToString()) != SortedLines(printed)) Die("ToString round trip differs:\n" + printed);

  const size_t chunk = input.empty() ? 1 : 1 + static_cast<uint8_t>(input[0]) % 7;
  const std::string body = input.empty() ? "" : input.substr(1);
  Matcher m(g);
  for (size_t i = 0; i < body.size() && i < 512; i += chunk) {
    const std::string piece = body.substr(i, chunk);
    const bool can = m.CanAcceptBytes(piece);
    const MatchState before = m.state();
    const bool ok = m.AcceptBytes(piece);
    if (ok != can) Die("AcceptBytes and CanAcceptBytes disagree");
    if (!ok) {
      if (!(m.state() == before)) Die("a failed AcceptBytes changed the state");
      continue;
    }
    if (m.state().empty()) Die("accepted into a dead state");
    const MatchState after = m.state();
    if (!m.Rollback(1).ok() || !(m.state() == before)) Die("Rollback(1) did not restore the state");
    if (!m.AcceptBytes(piece) || !(m.state() == after)) Die("the same bytes again gave another state");
    if (m.IsDeadEnd() && !m.IsAccepting()) Die("a dead end that cannot end");
  }

  // Token level over a small vocabulary.
  std::vector<std::string> pieces;
  std::vector<TokenKind> kinds;
  pieces.push_back("");
  kinds.push_back(TokenKind::kEnd);
  for (int b = 0; b < 256; ++b) {
    pieces.push_back(std::string(1, static_cast<char>(b)));
    kinds.push_back(TokenKind::kText);
  }
  for (size_t i = 0; i + 1 < body.size() && pieces.size() < 320; i += 3) {
    pieces.push_back(body.substr(i, 2 + i % 4));
    kinds.push_back(TokenKind::kText);
  }
  auto vocab = Vocabulary::Create(pieces, kinds);
  if (!vocab.ok()) Die("vocabulary: " + vocab.status().message());
  TokenMatcher tm(*vocab, Matcher(g));
  std::vector<uint32_t> cached((*vocab)->mask_words()), full((*vocab)->mask_words());
  for (int step = 0; step < 6; ++step) {
    tm.FillMask(cached);
    tm.FillMaskUncached(full);
    if (cached != full) Die("cached and full masks differ");
    int32_t next = -1;
    for (int32_t id = 0; id < static_cast<int32_t>(pieces.size()); ++id) {
      const bool bit = (cached[id >> 5] >> (id & 31)) & 1;
      if (bit != tm.IsAllowed(id)) Die("IsAllowed disagrees with the mask");
      if (bit && kinds[id] == TokenKind::kText && (next < 0 || id % 7 == step)) next = id;
    }
    if (next < 0 || !tm.AcceptToken(next)) break;
  }
  return 0;
}
