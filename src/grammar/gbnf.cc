// The GBNF parser: a recursive-descent reading of llama.cpp's grammars/README.md format (its
// grammar-parser.cpp is the reference for which constructs exist; this code is written anew).
#include "grammar/gbnf.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace gemlet::grammar {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A printable form of the character at a position, for messages.
std::string Describe(std::string_view src, size_t pos) {
  if (pos >= src.size()) return "the end of the input";
  const unsigned char c = src[pos];
  if (c == '\n' || c == '\r') return "the end of the line";
  if (c < 0x20 || c == 0x7f) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
    return buf;
  }
  if (c >= 0x80) return "a non-ASCII character";
  return std::string("'") + static_cast<char>(c) + "'";
}

class Parser {
 public:
  Parser(std::string_view src, const GbnfLimits& limits) : src_(src), limits_(limits) {}

  Result<Grammar> Run(std::string_view start) {
    RETURN_IF_ERROR(SkipSpace(true));
    while (pos_ < src_.size()) {
      RETURN_IF_ERROR(ParseRule());
      RETURN_IF_ERROR(SkipSpace(true));
    }
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (!defined_[r]) return Error(ref_pos_[r], "undefined rule '" + names_[r] + "'");
    }
    auto it = ids_.find(std::string(start));
    if (it == ids_.end()) return InvalidArgument("gbnf: no start rule '" + std::string(start) + "'");
    RETURN_IF_ERROR(CheckLeftRecursion());
    Grammar g;
    g.root = it->second;
    g.rule_names = std::move(names_);
    for (auto& rule : rules_) {
      g.rule_start.push_back(static_cast<uint32_t>(g.elements.size()));
      g.elements.insert(g.elements.end(), rule.begin(), rule.end());
    }
    return g;
  }

 private:
  Status Error(size_t at, const std::string& what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(src_[i]) & 0xC0) != 0x80) {
        ++col;  // columns count code points
      }
    }
    return InvalidArgument("gbnf " + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
  }
  std::string Where(size_t at) const {
    std::string m = Error(at, "").message();  // "gbnf L:C: "
    return m.substr(5, m.size() - 7);
  }

  Status SkipSpace(bool newline_ok) {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
    return Status::Ok();
  }

  // Whether a rule definition ("name ::=") starts at pos_.
  bool AtRuleStart() const {
    size_t i = pos_;
    while (i < src_.size() && IsWordChar(src_[i])) ++i;
    if (i == pos_) return false;
    while (i < src_.size() && (src_[i] == ' ' || src_[i] == '\t')) ++i;
    return src_.substr(i, 3) == "::=";
  }

  std::string ParseName() {
    const size_t b = pos_;
    while (pos_ < src_.size() && IsWordChar(src_[pos_])) ++pos_;
    return std::string(src_.substr(b, pos_ - b));
  }

  uint32_t RuleId(const std::string& name, size_t at) {
    auto [it, inserted] = ids_.emplace(name, static_cast<uint32_t>(rules_.size()));
    if (inserted) {
      names_.push_back(name);
      rules_.emplace_back();
      defined_.push_back(false);
      ref_pos_.push_back(at);
      def_pos_.push_back(at);
      is_helper_.push_back(false);
    }
    return it->second;
  }

  uint32_t NewHelper(const std::string& base, size_t at) {
    std::string name;
    do {
      name = base + "_" + std::to_string(++helper_count_[base]);
    } while (ids_.count(name));
    const uint32_t id = RuleId(name, at);
    defined_[id] = true;
    is_helper_[id] = true;
    return id;
  }

  Status Grow(size_t n, size_t at) {
    total_ += n;
    if (total_ > limits_.max_elements) {
      return Error(at, "the grammar is too large (over " + std::to_string(limits_.max_elements) +
                           " elements after expanding repetitions)");
    }
    return Status::Ok();
  }

  Status ParseRule() {
    const size_t at = pos_;
    const std::string name = ParseName();
    if (name.empty()) return Error(pos_, "expected a rule name, found " + Describe(src_, pos_));
    RETURN_IF_ERROR(SkipSpace(false));
    if (src_.substr(pos_, 3) != "::=") {
      return Error(pos_, "expected '::=' after the rule name '" + name + "', found " + Describe(src_, pos_));
    }
    pos_ += 3;
    RETURN_IF_ERROR(SkipSpace(true));
    const uint32_t id = RuleId(name, at);
    if (defined_[id]) {
      return Error(at, "rule '" + name + "' is defined twice (first at " + Where(def_pos_[id]) + ")");
    }
    defined_[id] = true;
    def_pos_[id] = at;
    std::vector<Element> body;
    RETURN_IF_ERROR(ParseAlternates(name, body, 0));
    if (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') {
      return Error(pos_, "expected an item, '|' or the end of the line, found " + Describe(src_, pos_));
    }
    body.push_back({ElementKind::kEnd, 0});
    RETURN_IF_ERROR(Grow(1, at));
    rules_[id] = std::move(body);
    return Status::Ok();
  }

  Status ParseAlternates(const std::string& rule, std::vector<Element>& out, int depth) {
    RETURN_IF_ERROR(ParseSequence(rule, out, depth));
    while (true) {
      // A line that starts with '|' goes on with the rule above it (as inside a group).
      if (depth == 0 && pos_ < src_.size() && (src_[pos_] == '\n' || src_[pos_] == '\r')) {
        const size_t save = pos_;
        RETURN_IF_ERROR(SkipSpace(true));
        if (pos_ >= src_.size() || src_[pos_] != '|') pos_ = save;
      }
      if (pos_ >= src_.size() || src_[pos_] != '|') break;
      out.push_back({ElementKind::kAlt, 0});
      RETURN_IF_ERROR(Grow(1, pos_));
      ++pos_;
      const size_t save = pos_;
      RETURN_IF_ERROR(SkipSpace(true));
      if (AtRuleStart()) {  // "a ::= x |" then the next rule: the last alternative is empty
        pos_ = save;
        RETURN_IF_ERROR(SkipSpace(false));
        break;
      }
      RETURN_IF_ERROR(ParseSequence(rule, out, depth));
    }
    return Status::Ok();
  }

  // One code point of a literal or class, escapes decoded; advances pos_.
  Status ParseChar(uint32_t& cp) {
    const size_t at = pos_;
    const unsigned char c = src_[pos_];
    if (c == '\\') {
      if (pos_ + 1 >= src_.size()) return Error(at, "expected an escape after '\\', found the end of the input");
      const char e = src_[pos_ + 1];
      int digits = 0;
      switch (e) {
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        case 'n': cp = '\n'; pos_ += 2; return Status::Ok();
        case 't': cp = '\t'; pos_ += 2; return Status::Ok();
        case 'r': cp = '\r'; pos_ += 2; return Status::Ok();
        case '\\': case '"': case '[': case ']': case '-': case '^':
          cp = static_cast<unsigned char>(e);
          pos_ += 2;
          return Status::Ok();
        default:
          return Error(at, "unknown escape '\\" + std::string(1, e) +
                               "' (expected one of \\n \\t \\r \\\\ \\\" \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH)");
      }
      pos_ += 2;
      uint32_t v = 0;
      for (int i = 0; i < digits; ++i) {
        const int h = pos_ < src_.size() ? HexValue(src_[pos_]) : -1;
        if (h < 0) {
          return Error(pos_, "expected " + std::to_string(digits) + " hex digits after '\\" + std::string(1, e) +
                                 "', found " + Describe(src_, pos_));
        }
        v = v * 16 + static_cast<uint32_t>(h);
        ++pos_;
      }
      if (v > 0x10FFFF) return Error(at, "code point out of range (over U+10FFFF)");
      cp = v;
      return Status::Ok();
    }
    // A UTF-8 sequence.
    int len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || pos_ + len > src_.size()) return Error(at, "invalid UTF-8");
    uint32_t v = len == 1 ? c : c & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      const unsigned char b = src_[pos_ + i];
      if ((b & 0xC0) != 0x80) return Error(at, "invalid UTF-8");
      v = (v << 6) | (b & 0x3F);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF))) {
      return Error(at, "invalid UTF-8");
    }
    pos_ += len;
    cp = v;
    return Status::Ok();
  }

  // Parses {m}, {m,}, {m,n} at pos_ ('{'); max < 0: unbounded.
  Status ParseBraces(int64_t& min, int64_t& max) {
    const size_t open = pos_;
    ++pos_;
    auto number = [&](int64_t& v) -> bool {
      const size_t b = pos_;
      v = 0;
      while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
        v = std::min<int64_t>(v * 10 + (src_[pos_] - '0'), int64_t{1} << 40);
        ++pos_;
      }
      return pos_ > b;
    };
    RETURN_IF_ERROR(SkipSpace(false));
    if (!number(min)) return Error(pos_, "expected a number after '{', found " + Describe(src_, pos_));
    RETURN_IF_ERROR(SkipSpace(false));
    max = min;
    if (pos_ < src_.size() && src_[pos_] == ',') {
      ++pos_;
      RETURN_IF_ERROR(SkipSpace(false));
      if (!number(max)) max = -1;
      RETURN_IF_ERROR(SkipSpace(false));
    }
    if (pos_ >= src_.size() || src_[pos_] != '}') {
      return Error(pos_, "expected '}' to close the '{' at " + Where(open) + ", found " + Describe(src_, pos_));
    }
    ++pos_;
    if (max >= 0 && max < min) return Error(open, "repetition {m,n} with n < m");
    if (min > limits_.max_repetition || max > limits_.max_repetition) {
      return Error(open, "repetition count over " + std::to_string(limits_.max_repetition));
    }
    return Status::Ok();
  }

  // Replaces out[item_start..] (one item) by `min` copies of it, then up to max - min optional
  // ones (max < 0: any number), through helper rules:
  //   x*      -> x_rep    with  x_rep ::= x x_rep |
  //   x{0,n}  -> x_opt_n  with  x_opt_k ::= x x_opt_{k-1} |   and   x_opt_1 ::= x |
  Status Repeat(const std::string& rule, std::vector<Element>& out, size_t item_start, int64_t min,
                int64_t max, size_t at) {
    const std::vector<Element> item(out.begin() + item_start, out.end());
    out.resize(item_start);
    if (item.empty()) return Status::Ok();  // ""*: still nothing
    for (int64_t i = 0; i < min; ++i) {
      RETURN_IF_ERROR(Grow(item.size(), at));
      out.insert(out.end(), item.begin(), item.end());
    }
    if (max < 0) {
      const uint32_t rec = NewHelper(rule, at);
      std::vector<Element> body = item;
      body.push_back({ElementKind::kRuleRef, rec});
      body.push_back({ElementKind::kAlt, 0});
      body.push_back({ElementKind::kEnd, 0});
      RETURN_IF_ERROR(Grow(body.size() + 1, at));
      rules_[rec] = std::move(body);
      out.push_back({ElementKind::kRuleRef, rec});
      return Status::Ok();
    }
    int64_t prev = -1;
    for (int64_t k = 0; k < max - min; ++k) {
      const uint32_t h = NewHelper(rule, at);
      std::vector<Element> body = item;
      if (prev >= 0) body.push_back({ElementKind::kRuleRef, static_cast<uint32_t>(prev)});
      body.push_back({ElementKind::kAlt, 0});
      body.push_back({ElementKind::kEnd, 0});
      RETURN_IF_ERROR(Grow(body.size(), at));
      rules_[h] = std::move(body);
      prev = h;
    }
    if (prev >= 0) {
      RETURN_IF_ERROR(Grow(1, at));
      out.push_back({ElementKind::kRuleRef, static_cast<uint32_t>(prev)});
    }
    return Status::Ok();
  }

  Status ParseSequence(const std::string& rule, std::vector<Element>& out, int depth) {
    size_t item_start = out.size();
    bool have_item = false;
    while (pos_ < src_.size()) {
      const size_t at = pos_;
      const char c = src_[pos_];
      if (c == '"') {
        item_start = out.size();
        have_item = true;
        ++pos_;
        while (true) {
          if (pos_ >= src_.size() || src_[pos_] == '\n' || src_[pos_] == '\r') {
            return Error(at, "unterminated string literal (expected a closing '\"')");
          }
          if (src_[pos_] == '"') break;
          uint32_t cp;
          RETURN_IF_ERROR(ParseChar(cp));
          out.push_back({ElementKind::kChar, cp});
        }
        ++pos_;
        RETURN_IF_ERROR(Grow(out.size() - item_start, at));
      } else if (c == '[') {
        item_start = out.size();
        have_item = true;
        ++pos_;
        ElementKind first = ElementKind::kChar;
        if (pos_ < src_.size() && src_[pos_] == '^') {
          first = ElementKind::kCharNot;
          ++pos_;
        }
        bool empty = true;
        while (true) {
          if (pos_ >= src_.size() || src_[pos_] == '\n' || src_[pos_] == '\r') {
            return Error(at, "unterminated character class (expected a closing ']')");
          }
          if (src_[pos_] == ']') break;
          const size_t cat = pos_;
          uint32_t lo;
          RETURN_IF_ERROR(ParseChar(lo));
          out.push_back({empty ? first : ElementKind::kCharAlt, lo});
          empty = false;
          if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
            ++pos_;
            uint32_t hi;
            RETURN_IF_ERROR(ParseChar(hi));
            if (hi < lo) return Error(cat, "character range with its end below its start");
            out.push_back({ElementKind::kCharRangeUpper, hi});
          }
        }
        if (empty) return Error(at, "empty character class");
        ++pos_;
        RETURN_IF_ERROR(Grow(out.size() - item_start, at));
      } else if (IsWordChar(c)) {
        item_start = out.size();
        have_item = true;
        const std::string name = ParseName();
        out.push_back({ElementKind::kRuleRef, RuleId(name, at)});
        RETURN_IF_ERROR(Grow(1, at));
      } else if (c == '(') {
        if (depth + 1 > limits_.max_nesting) {
          return Error(at, "groups nested deeper than " + std::to_string(limits_.max_nesting));
        }
        item_start = out.size();
        have_item = true;
        ++pos_;
        RETURN_IF_ERROR(SkipSpace(true));
        const uint32_t sub = NewHelper(rule, at);
        std::vector<Element> body;
        RETURN_IF_ERROR(ParseAlternates(rule, body, depth + 1));
        if (pos_ >= src_.size() || src_[pos_] != ')') {
          return Error(pos_, "expected ')' to close the '(' at " + Where(at) + ", found " + Describe(src_, pos_));
        }
        ++pos_;
        body.push_back({ElementKind::kEnd, 0});
        RETURN_IF_ERROR(Grow(body.size() + 1, at));
        rules_[sub] = std::move(body);
        out.push_back({ElementKind::kRuleRef, sub});
      } else if (c == '.') {
        item_start = out.size();
        have_item = true;
        ++pos_;
        out.push_back({ElementKind::kCharAny, 0});
        RETURN_IF_ERROR(Grow(1, at));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_item) return Error(at, "'" + std::string(1, c) + "' has no item before it to repeat");
        int64_t min = c == '+' ? 1 : 0, max = c == '?' ? 1 : -1;
        if (c == '{') {
          RETURN_IF_ERROR(ParseBraces(min, max));
        } else {
          ++pos_;
        }
        RETURN_IF_ERROR(Repeat(rule, out, item_start, min, max, at));
        // A repetition of a repetition repeats the helper reference just written.
      } else {
        break;
      }
      RETURN_IF_ERROR(SkipSpace(depth > 0));
      if (depth == 0 && src_.substr(pos_, 3) == "::=") {
        return Error(pos_, "expected an item, '|' or the end of the line, found '::=' "
                           "(a rule definition must start a new line)");
      }
    }
    return Status::Ok();
  }

  // A rule is left-recursive if it can reach itself through the first elements of its
  // alternatives, skipping rules that can match the empty string (nullable).
  Status CheckLeftRecursion() {
    const size_t n = rules_.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        bool alt_ok = true, any = false;
        for (const Element& e : rules_[r]) {
          if (e.kind == ElementKind::kAlt || e.kind == ElementKind::kEnd) {
            any = any || alt_ok;
            alt_ok = true;
          } else if (e.kind != ElementKind::kRuleRef || !nullable[e.value]) {
            alt_ok = false;
          }
        }
        if (any) {
          nullable[r] = true;
          changed = true;
        }
      }
    }
    // Left-edge edges.
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r) {
      bool open = true;  // still at the left edge of the current alternative
      for (const Element& e : rules_[r]) {
        if (e.kind == ElementKind::kAlt || e.kind == ElementKind::kEnd) {
          open = true;
          continue;
        }
        if (!open) continue;
        if (e.kind == ElementKind::kRuleRef) {
          left[r].push_back(e.value);
          if (!nullable[e.value]) open = false;
        } else if (e.kind == ElementKind::kChar || e.kind == ElementKind::kCharNot ||
                   e.kind == ElementKind::kCharAny) {
          open = false;
        }
      }
    }
    // Iterative DFS for a cycle; colors 0 new, 1 on the path, 2 done.
    std::vector<int> color(n, 0);
    std::vector<uint32_t> path;
    for (uint32_t s = 0; s < n; ++s) {
      if (color[s]) continue;
      std::vector<std::pair<uint32_t, size_t>> st{{s, 0}};
      color[s] = 1;
      path = {s};
      while (!st.empty()) {
        auto& [r, i] = st.back();
        if (i < left[r].size()) {
          const uint32_t t = left[r][i++];
          if (color[t] == 1) {
            const auto it = std::find(path.begin(), path.end(), t);
            // Name the cycle from its first user-written rule if it has one.
            std::vector<uint32_t> cyc(it, path.end());
            size_t start = 0;
            for (size_t k = 0; k < cyc.size(); ++k) {
              if (!is_helper_[cyc[k]]) {
                start = k;
                break;
              }
            }
            std::rotate(cyc.begin(), cyc.begin() + start, cyc.end());
            std::string desc;
            for (uint32_t k : cyc) desc += names_[k] + " -> ";
            desc += names_[cyc[0]];
            return Error(def_pos_[cyc[0]], "rule '" + names_[cyc[0]] + "' is left-recursive: " + desc);
          }
          if (color[t] == 0) {
            color[t] = 1;
            path.push_back(t);
            st.push_back({t, 0});
          }
        } else {
          color[r] = 2;
          path.pop_back();
          st.pop_back();
        }
      }
    }
    return Status::Ok();
  }

  std::string_view src_;
  GbnfLimits limits_;
  size_t pos_ = 0;
  size_t total_ = 0;
  std::map<std::string, uint32_t> ids_;
  std::map<std::string, int> helper_count_;
  std::vector<bool> is_helper_;
  std::vector<std::string> names_;
  std::vector<std::vector<Element>> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> ref_pos_;  // first reference (or definition)
  std::vector<size_t> def_pos_;
};

void AppendCodePoint(std::string& s, uint32_t cp, bool in_class) {
  char buf[16];
  if (cp == '\n') {
    s += "\\n";
  } else if (cp == '\t') {
    s += "\\t";
  } else if (cp == '\r') {
    s += "\\r";
  } else if (cp == '\\' || cp == '"' || (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^'))) {
    s += '\\';
    s += static_cast<char>(cp);
  } else if (cp >= 0x20 && cp < 0x7f) {
    s += static_cast<char>(cp);
  } else {
    if (cp < 0x100) {
      std::snprintf(buf, sizeof buf, "\\x%02X", cp);
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    } else {
      std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    }
    s += buf;
  }
}

}  // namespace

std::string Grammar::ToString() const {
  std::string s;
  for (size_t r = 0; r < num_rules(); ++r) {
    s += rule_names[r] + " ::=";
    size_t i = rule_start[r];
    bool in_literal = false;
    auto close_literal = [&] {
      if (in_literal) s += '"';
      in_literal = false;
    };
    // An empty alternative is written "" (a bare "y ::=" would run on into the next line).
    auto mark_empty = [&] {
      if (s.size() >= 3 && (s.compare(s.size() - 3, 3, "::=") == 0 || s.back() == '|')) s += " \"\"";
    };
    while (true) {
      const Element& e = elements[i];
      if (e.kind == ElementKind::kEnd) break;
      if (e.kind == ElementKind::kAlt) {
        close_literal();
        mark_empty();
        s += " |";
        ++i;
        continue;
      }
      if (e.kind == ElementKind::kRuleRef) {
        close_literal();
        s += " " + rule_names[e.value];
        ++i;
        continue;
      }
      if (e.kind == ElementKind::kCharAny) {
        close_literal();
        s += " .";
        ++i;
        continue;
      }
      // A character set: a literal character if it is a single positive code point.
      const bool single = e.kind == ElementKind::kChar && elements[i + 1].kind != ElementKind::kCharAlt &&
                          elements[i + 1].kind != ElementKind::kCharRangeUpper;
      if (single) {
        if (!in_literal) s += " \"";
        in_literal = true;
        AppendCodePoint(s, e.value, false);
        ++i;
        continue;
      }
      close_literal();
      s += e.kind == ElementKind::kCharNot ? " [^" : " [";
      do {
        AppendCodePoint(s, elements[i].value, true);
        ++i;
        if (elements[i].kind == ElementKind::kCharRangeUpper) {
          s += '-';
          AppendCodePoint(s, elements[i].value, true);
          ++i;
        }
      } while (elements[i].kind == ElementKind::kCharAlt);
      s += ']';
    }
    close_literal();
    mark_empty();
    s += '\n';
  }
  return s;
}

Result<Grammar> ParseGbnf(std::string_view text, std::string_view start, const GbnfLimits& limits) {
  return Parser(text, limits).Run(start);
}

}  // namespace gemlet::grammar
