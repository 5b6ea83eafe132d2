#include "grammar/number_range.h"

#include <cmath>
#include <vector>

namespace gemlet::grammar {
namespace {

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

std::string DigitClass(char a, char b) {
  if (a == b) return std::string("\"") + a + "\"";
  return std::string("[") + a + "-" + b + "]";
}

bool All(const std::string& s, size_t from, char c) {
  for (size_t i = from; i < s.size(); ++i)
    if (s[i] != c) return false;
  return true;
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// The digit strings of one length between a and b (a <= b, same length), as a GBNF sequence.
std::string SameLength(const std::string& a, const std::string& b, size_t from) {
  if (from == a.size()) return "";
  const size_t rest = a.size() - from - 1;
  if (a[from] == b[from]) {
    std::string tail = SameLength(a, b, from + 1);
    return std::string("\"") + a[from] + "\"" + (tail.empty() ? "" : " " + tail);
  }
  const bool low_full = All(a, from + 1, '0');   // a = d000: the whole decade of d
  const bool high_full = All(b, from + 1, '9');  // b = d999
  std::vector<std::string> alts;
  char mid_lo = low_full ? a[from] : static_cast<char>(a[from] + 1);
  char mid_hi = high_full ? b[from] : static_cast<char>(b[from] - 1);
  if (!low_full) {
    std::string nines(a.size(), '9');
    alts.push_back(std::string("\"") + a[from] + "\" " + SameLength(a, nines, from + 1));
  }
  if (mid_lo <= mid_hi) {
    std::string digits = AnyDigits(rest);
    alts.push_back(DigitClass(mid_lo, mid_hi) + (digits.empty() ? "" : " " + digits));
  }
  if (!high_full) {
    std::string zeros(b.size(), '0');
    alts.push_back(std::string("\"") + b[from] + "\" " + SameLength(zeros, b, from + 1));
  }
  return alts.size() == 1 ? alts[0] : "( " + Join(alts, " | ") + " )";
}

// The canonical forms of [lo, hi], 0 <= lo <= hi: one alternative per digit count.
void NonNegative(int64_t lo, int64_t hi, std::vector<std::string>& alts) {
  int64_t low_of_len = 0, high_of_len = 9;
  for (;;) {
    const int64_t a = std::max(lo, low_of_len), b = std::min(hi, high_of_len);
    if (a <= b) alts.push_back(SameLength(std::to_string(a), std::to_string(b), 0));
    if (high_of_len >= hi) break;
    low_of_len = high_of_len + 1;
    high_of_len = high_of_len * 10 + 9;
  }
}

int64_t Clamp(double v) {
  const double m = static_cast<double>(kMaxIntegerMagnitude);
  if (!(v > -m)) return -kMaxIntegerMagnitude;  // also NaN
  if (v >= m) return kMaxIntegerMagnitude;
  return static_cast<int64_t>(v);
}

// The smallest integer >= (or >) each lower bound and the largest <= (or <) each upper bound.
struct Range {
  int64_t lo = -kMaxIntegerMagnitude, hi = kMaxIntegerMagnitude;
};
Range IntegerRange(const NumberBounds& b) {
  Range r;
  if (b.minimum) r.lo = std::max(r.lo, Clamp(std::ceil(*b.minimum)));
  if (b.exclusive_minimum) r.lo = std::max(r.lo, Clamp(std::floor(*b.exclusive_minimum) + 1));
  if (b.maximum) r.hi = std::min(r.hi, Clamp(std::floor(*b.maximum)));
  if (b.exclusive_maximum) r.hi = std::min(r.hi, Clamp(std::ceil(*b.exclusive_maximum) - 1));
  return r;
}

std::string Group(const std::vector<std::string>& alts) {
  return "( " + Join(alts, " | ") + " )";
}

}  // namespace

std::string IntegerRangeGbnf(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  if (hi >= 0) NonNegative(std::max<int64_t>(lo, 0), hi, alts);
  if (lo < 0) {
    std::vector<std::string> neg;
    NonNegative(std::max<int64_t>(1, -hi), -lo, neg);
    alts.push_back("\"-\" " + Group(neg));
  }
  return Group(alts);
}

Result<std::pair<int64_t, int64_t>> IntegerBounds(const NumberBounds& bounds) {
  Range r = IntegerRange(bounds);
  if (r.lo > r.hi) return InvalidArgument("no integer lies within the bounds");
  return std::make_pair(r.lo, r.hi);
}

Result<std::string> BoundedIntegerGbnf(const NumberBounds& bounds) {
  ASSIGN_OR_RETURN(auto r, IntegerBounds(bounds));
  return IntegerRangeGbnf(r.first, r.second);
}

Result<std::string> BoundedNumberGbnf(const NumberBounds& bounds) {
  // Every bound is a closed or open limit on the open intervals of the fractional numbers:
  // (I, I+1) lies within [min, max] (or (xmin, xmax)) iff min <= I and I + 1 <= max.
  double lower = -INFINITY, upper = INFINITY;
  if (bounds.minimum) lower = std::max(lower, *bounds.minimum);
  if (bounds.exclusive_minimum) lower = std::max(lower, *bounds.exclusive_minimum);
  if (bounds.maximum) upper = std::min(upper, *bounds.maximum);
  if (bounds.exclusive_maximum) upper = std::min(upper, *bounds.exclusive_maximum);
  std::vector<std::string> alts;
  Range ints = IntegerRange(bounds);
  if (ints.lo <= ints.hi) alts.push_back(IntegerRangeGbnf(ints.lo, ints.hi));
  const std::string fraction = "\".\" [0-9]{0,5} [1-9]";
  // Non-negative integer part I: I >= lower and I + 1 <= upper.
  const int64_t p_lo = std::max<int64_t>(0, Clamp(std::ceil(lower)));
  const int64_t p_hi = Clamp(std::floor(upper) - 1);
  if (p_lo <= p_hi) alts.push_back(IntegerRangeGbnf(p_lo, p_hi) + " " + fraction);
  // Negative numbers "-J.f" (J >= 0): -(J + 1) >= lower and -J <= upper.
  const int64_t n_lo = std::max<int64_t>(0, Clamp(std::ceil(-upper)));
  const int64_t n_hi = Clamp(std::floor(-lower) - 1);
  if (n_lo <= n_hi) alts.push_back("\"-\" " + IntegerRangeGbnf(n_lo, n_hi) + " " + fraction);
  if (alts.empty()) return InvalidArgument("no number the grammar can write lies within the bounds");
  return Group(alts);
}

}  // namespace gemlet::grammar
