// Numeric ranges as GBNF: the digit-range construction (after the idea of llama.cpp's
// json-schema-to-grammar _generate_min_max_int; written anew). An integer range [lo, hi] becomes
// an exact grammar of the canonical decimal forms of its members (no leading zeros, no "-0").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace gemlet::grammar {

// The largest magnitude a bounded number's grammar writes: 16 digits, as the unbounded JSON
// integer rule (json_grammar.h). Wider bounds are clamped to it.
inline constexpr int64_t kMaxIntegerMagnitude = 9999999999999999;

// A GBNF expression (one parenthesized group) matching exactly the decimal integers in
// [lo, hi]. Requires -kMaxIntegerMagnitude <= lo <= hi <= kMaxIntegerMagnitude.
std::string IntegerRangeGbnf(int64_t lo, int64_t hi);

// JSON Schema bounds of a number: minimum / maximum (inclusive) and exclusiveMinimum /
// exclusiveMaximum (draft 2019+ numeric form). Unset: unbounded on that side.
struct NumberBounds {
  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  bool any() const { return minimum || maximum || exclusive_minimum || exclusive_maximum; }
};

// The integers allowed by `bounds`, clamped to +-kMaxIntegerMagnitude: [lo, hi]. Fails
// (kInvalidArgument, "no integer ...") when the range is empty.
Result<std::pair<int64_t, int64_t>> IntegerBounds(const NumberBounds& bounds);

// A GBNF expression for the bounded integers (integer schemas).
Result<std::string> BoundedIntegerGbnf(const NumberBounds& bounds);

// A GBNF expression for bounded numbers (number schemas). What it writes: the integers in range,
// and numbers with a fraction of 1 to 6 digits (last digit not 0, no exponent) whose integer
// part I is such that the whole open interval (I, I+1) (or (-(I+1), -I) for a negative number)
// lies within the bounds. So every written number is in range; numbers with an exponent, with
// more fraction digits, or whose integer part touches a non-integer bound (0.7 for
// minimum 0.5) are never written.
Result<std::string> BoundedNumberGbnf(const NumberBounds& bounds);

}  // namespace gemlet::grammar
