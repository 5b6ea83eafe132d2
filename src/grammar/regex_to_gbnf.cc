#include "grammar/regex_to_gbnf.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

namespace gemlet::grammar {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxCount = 1000;

// A set of code points: sorted, disjoint, non-adjacent inclusive ranges.
using CharSet = std::vector<std::pair<uint32_t, uint32_t>>;

CharSet Normalize(CharSet s) {
  std::sort(s.begin(), s.end());
  CharSet out;
  for (auto [lo, hi] : s) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.push_back({lo, hi});
    }
  }
  return out;
}

// Everything but `s` (and but the surrogates, which are not characters of a JSON text).
CharSet Complement(const CharSet& s) {
  CharSet n = Normalize(s), out;
  uint32_t next = 0;
  for (auto [lo, hi] : n) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

CharSet Minus(const CharSet& a, const CharSet& b) {
  CharSet comp_b = Complement(b), out;
  for (auto [alo, ahi] : Normalize(a))
    for (auto [blo, bhi] : comp_b) {
      uint32_t lo = std::max(alo, blo), hi = std::min(ahi, bhi);
      if (lo <= hi) out.push_back({lo, hi});
    }
  return Normalize(out);
}

bool Contains(const CharSet& s, uint32_t c) {
  for (auto [lo, hi] : s)
    if (lo <= c && c <= hi) return true;
  return false;
}

const CharSet kDigits = {{'0', '9'}};
const CharSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript WhiteSpace and LineTerminator.
const CharSet kSpace = {{0x09, 0x0D}, {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                        {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                        {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const CharSet kNotDot = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, v);
  return buf;
}

// One code point inside a GBNF class: printable ASCII but the class syntax as is, else escaped.
std::string ClassChar(uint32_t c) {
  if (c >= 0x20 && c < 0x7F && c != '\\' && c != ']' && c != '[' && c != '^' && c != '-' &&
      c != '"')
    return std::string(1, static_cast<char>(c));
  if (c < 0x100) return "\\x" + Hex(c, 2);
  if (c < 0x10000) return "\\u" + Hex(c, 4);
  return "\\U" + Hex(c, 8);
}

// The JSON encodings of the characters of `set`, as one GBNF expression.
std::string JsonEncodedSet(const CharSet& set) {
  const CharSet kSpecial = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0xD800, 0xDFFF}};
  CharSet plain = Minus(set, kSpecial);
  std::vector<std::string> alts;
  if (!plain.empty()) {
    if (plain.size() == 1 && plain[0].first == plain[0].second && plain[0].first < 0x7F &&
        plain[0].first >= 0x20) {
      std::string lit = "\"";
      lit += static_cast<char>(plain[0].first);
      lit += '"';
      alts.push_back(lit);
    } else {
      std::string cls = "[";
      for (auto [lo, hi] : plain) {
        cls += ClassChar(lo);
        if (lo != hi) {
          cls += '-';
          cls += ClassChar(hi);
        }
      }
      alts.push_back(cls + "]");
    }
  }
  if (Contains(set, '"')) alts.push_back(R"("\\\"")");
  if (Contains(set, '\\')) alts.push_back(R"("\\\\")");
  for (uint32_t c = 0; c < 0x20; ++c) {
    if (!Contains(set, c)) continue;
    switch (c) {
      case '\b': alts.push_back(R"("\\b")"); break;
      case '\t': alts.push_back(R"("\\t")"); break;
      case '\n': alts.push_back(R"("\\n")"); break;
      case '\f': alts.push_back(R"("\\f")"); break;
      case '\r': alts.push_back(R"("\\r")"); break;
      default: alts.push_back("\"\\\\u00" + Hex(c, 2) + "\"");
    }
  }
  if (alts.empty()) return "";  // only surrogates
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
  return out + " )";
}

class RegexParser {
 public:
  RegexParser(std::string_view p, std::string_view any) : p_(p), any_(any) {}

  Result<std::string> Run() {
    ASSIGN_OR_RETURN(std::string out, Alternation(0));
    if (pos_ < p_.size()) return Error("unmatched ')'");
    return out;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("pattern offset " + std::to_string(pos_) + ": " + what);
  }
  bool AtEnd() const { return pos_ >= p_.size(); }
  char Peek() const { return p_[pos_]; }

  // Decodes one UTF-8 code point of the pattern.
  Result<uint32_t> NextCodePoint() {
    const auto b = static_cast<uint8_t>(p_[pos_]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || pos_ + len > p_.size()) return Error("invalid UTF-8");
    uint32_t c = len == 1 ? b : b & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      const auto cb = static_cast<uint8_t>(p_[pos_ + i]);
      if ((cb & 0xC0) != 0x80) return Error("invalid UTF-8");
      c = (c << 6) | (cb & 0x3F);
    }
    pos_ += len;
    return c;
  }

  Result<std::string> Alternation(int depth) {
    std::vector<std::string> alts;
    for (;;) {
      ASSIGN_OR_RETURN(std::string seq, Sequence(depth));
      alts.push_back(seq);
      if (AtEnd() || Peek() != '|') break;
      ++pos_;
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
    return out + " )";
  }

  Result<std::string> Sequence(int depth) {
    std::vector<std::string> items;
    bool start_anchor = false, end_anchor = false;
    if (depth == 0 && !AtEnd() && Peek() == '^') {
      start_anchor = true;
      ++pos_;
    }
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      if (Peek() == '^') return Error("'^' is supported only at the start of the pattern");
      if (Peek() == '$') {
        ++pos_;
        if (depth == 0 && (AtEnd() || Peek() == '|')) {
          end_anchor = true;
          break;
        }
        --pos_;
        return Error("'$' is supported only at the end of the pattern");
      }
      ASSIGN_OR_RETURN(std::string atom, Atom(depth));
      ASSIGN_OR_RETURN(std::string item, Quantified(atom));
      items.push_back(item);
    }
    if (depth == 0 && !AtEnd() && Peek() == ')') return Error("unmatched ')'");
    std::string out;
    if (depth == 0 && !start_anchor) out = any_ + "*";
    for (const std::string& it : items) out += (out.empty() ? "" : " ") + it;
    if (depth == 0 && !end_anchor) out += (out.empty() ? "" : " ") + any_ + "*";
    if (out.empty()) out = "\"\"";
    return "( " + out + " )";
  }

  Result<int> Number() {
    if (AtEnd() || Peek() < '0' || Peek() > '9') return Error("expected a number in '{}'");
    const size_t start = pos_;
    int v = 0;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      v = v * 10 + (Peek() - '0');
      if (v > kMaxCount) {
        pos_ = start;
        return Error("a count above " + std::to_string(kMaxCount));
      }
      ++pos_;
    }
    return v;
  }

  Result<std::string> Quantified(const std::string& atom) {
    if (AtEnd()) return atom;
    std::string q;
    const char c = Peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      q = std::string(1, c);
    } else if (c == '{') {
      ++pos_;
      ASSIGN_OR_RETURN(int m, Number());
      q = "{" + std::to_string(m);
      if (!AtEnd() && Peek() == ',') {
        ++pos_;
        q += ",";
        if (!AtEnd() && Peek() != '}') {
          ASSIGN_OR_RETURN(int n, Number());
          if (n < m) return Error("{m,n} with n < m");
          q += std::to_string(n);
        }
      }
      if (AtEnd() || Peek() != '}') return Error("expected '}'");
      ++pos_;
      q += "}";
    } else {
      return atom;
    }
    if (!AtEnd() && Peek() == '?') ++pos_;  // lazy: the same strings
    if (!AtEnd() && (Peek() == '*' || Peek() == '+' || Peek() == '?' || Peek() == '{'))
      return Error("nothing to repeat");
    return atom + q;
  }

  Result<std::string> Atom(int depth) {
    const char c = Peek();
    if (c == '(') {
      ++pos_;
      if (!AtEnd() && Peek() == '?') {
        if (pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
          pos_ += 2;
        } else {
          return Error("lookaround and named groups are not supported");
        }
      }
      if (depth >= 64) return Error("groups nested too deeply");
      ASSIGN_OR_RETURN(std::string inner, Alternation(depth + 1));
      if (AtEnd() || Peek() != ')') return Error("missing ')'");
      ++pos_;
      return "( " + inner + " )";
    }
    if (c == '[') return Class();
    if (c == '.') {
      ++pos_;
      return JsonEncodedSet(Complement(kNotDot));
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') return Error("nothing to repeat");
    if (c == '}' || c == ']') return Error(std::string("lone '") + c + "'");
    const size_t start = pos_;
    CharSet set;
    RETURN_IF_ERROR(CharOrEscape(false, set));
    std::string out = JsonEncodedSet(set);
    if (out.empty()) {
      pos_ = start;
      return Error("a surrogate code point, which JSON text cannot hold");
    }
    return out;
  }

  // One character or escape (outside or inside a class) into `set`.
  Status CharOrEscape(bool in_class, CharSet& set) {
    if (Peek() != '\\') {
      ASSIGN_OR_RETURN(uint32_t cp, NextCodePoint());
      set.push_back({cp, cp});
      return Status::Ok();
    }
    ++pos_;
    if (AtEnd()) return Error("a '\\' at the end");
    const char e = Peek();
    ++pos_;
    auto one = [&](uint32_t cp) { set.push_back({cp, cp}); return Status::Ok(); };
    auto add = [&](const CharSet& s) { set.insert(set.end(), s.begin(), s.end()); return Status::Ok(); };
    switch (e) {
      case 'd': return add(kDigits);
      case 'D': return add(Complement(kDigits));
      case 'w': return add(kWord);
      case 'W': return add(Complement(kWord));
      case 's': return add(kSpace);
      case 'S': return add(Complement(kSpace));
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case '0':
        if (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
          --pos_;
          return Error("octal escapes are not supported");
        }
        return one(0);
      case 'x': {
        ASSIGN_OR_RETURN(uint32_t v, HexDigits(2));
        return one(v);
      }
      case 'u': {
        if (!AtEnd() && Peek() == '{') {
          ++pos_;
          uint32_t v = 0;
          int n = 0;
          while (!AtEnd() && Peek() != '}' && n < 7) {
            int d = HexValue(Peek());
            if (d < 0) return Error("expected a hex digit in \\u{...}");
            v = v * 16 + d;
            ++pos_;
            ++n;
          }
          if (AtEnd() || Peek() != '}' || n == 0 || v > kMaxCodePoint)
            return Error("bad \\u{...} escape");
          ++pos_;
          return one(v);
        }
        ASSIGN_OR_RETURN(uint32_t v, HexDigits(4));
        return one(v);
      }
      case 'b':
        if (in_class) return one('\b');
        [[fallthrough]];
      case 'B':
        pos_ -= 2;
        return Error("word boundaries (\\b, \\B) are not supported");
      default: break;
    }
    const std::string_view syntax = "^$\\.*+?()[]{}|/";
    if (syntax.find(e) != std::string_view::npos || (in_class && e == '-')) return one(e);
    pos_ -= 2;
    if (e >= '1' && e <= '9') return Error("backreferences are not supported");
    return Error(std::string("unsupported escape '\\") + e + "'");
  }

  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // n hex digits (after \x or \u).
  Result<uint32_t> HexDigits(int n) {
    const size_t escape = pos_ - 2;
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      int d = AtEnd() ? -1 : HexValue(Peek());
      if (d < 0) {
        pos_ = escape;
        return Error("expected " + std::to_string(n) + " hex digits after \\" + p_[escape + 1]);
      }
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  Result<std::string> Class() {
    ++pos_;  // '['
    bool negate = false;
    if (!AtEnd() && Peek() == '^') {
      negate = true;
      ++pos_;
    }
    CharSet set;
    while (!AtEnd() && Peek() != ']') {
      const size_t start = pos_;
      CharSet lo;
      RETURN_IF_ERROR(CharOrEscape(true, lo));
      if (pos_ + 1 < p_.size() && Peek() == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        CharSet hi;
        RETURN_IF_ERROR(CharOrEscape(true, hi));
          if (lo.size() != 1 || hi.size() != 1 || lo[0].first != lo[0].second ||
            hi[0].first != hi[0].second) {
          pos_ = start;
          return Error("a class escape cannot bound a range");
        }
        if (hi[0].first < lo[0].first) {
          pos_ = start;
          return Error("a range out of order");
        }
        set.push_back({lo[0].first, hi[0].first});
      } else {
        set.insert(set.end(), lo.begin(), lo.end());
      }
    }
    if (AtEnd()) return Error("missing ']'");
    ++pos_;
    CharSet s = negate ? Complement(set) : Normalize(set);
    if (Minus(s, {{0xD800, 0xDFFF}}).empty()) return Error("a class that matches nothing");
    return JsonEncodedSet(s);
  }

  std::string_view p_;
  std::string any_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::string> RegexToGbnf(std::string_view pattern, std::string_view any_char_rule) {
  RegexParser parser(pattern, any_char_rule);
  return parser.Run();
}

}  // namespace gemlet::grammar
