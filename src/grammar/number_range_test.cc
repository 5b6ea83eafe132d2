#include "grammar/number_range.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "grammar/gbnf.h"
#include "grammar/grammar_sampler_test_util.h"
#include "grammar/matcher.h"

namespace gemlet::grammar {
namespace number_range_test {

std::shared_ptr<const Grammar> Compile(const std::string& expr) {
  auto g = ParseGbnf("root ::= " + expr + "\n");
  EXPECT_TRUE(g.ok()) << expr << ": " << g.status().message();
  return g.ok() ? std::make_shared<const Grammar>(std::move(g).value()) : nullptr;
}

bool FullMatch(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  Matcher m(g);
  return m.AcceptBytes(s) && m.IsAccepting();
}

TEST(NumberRange, GoldenDigitRanges) {
  EXPECT_EQ(IntegerRangeGbnf(0, 9), "( [0-9] )");
  EXPECT_EQ(IntegerRangeGbnf(1, 12), "( [1-9] | \"1\" [0-2] )");
  EXPECT_EQ(IntegerRangeGbnf(10, 99), "( [1-9] [0-9] )");
  EXPECT_EQ(IntegerRangeGbnf(37, 421),
            "( ( \"3\" [7-9] | [4-9] [0-9] ) | ( [1-3] [0-9]{2} | \"4\" ( [0-1] [0-9] | \"2\" [0-1] ) ) )");
  EXPECT_EQ(IntegerRangeGbnf(-3, -1), "( \"-\" ( [1-3] ) )");
}

// Every integer near the ends of many ranges: matched exactly when inside, in canonical form.
TEST(NumberRange, IntegerRangesAreExact) {
  std::mt19937_64 rng(7);
  std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 0}, {-1, 1}, {0, 130}, {5, 5}, {-100, -10}, {99, 1001}, {-7, 2300}, {1900, 2100},
      {-kMaxIntegerMagnitude, kMaxIntegerMagnitude}, {123456789, 987654321}};
  for (int i = 0; i < 20; ++i) {
    int64_t a = static_cast<int64_t>(rng() % 200000) - 100000;
    int64_t b = a + static_cast<int64_t>(rng() % (i < 10 ? 100 : 100000));
    ranges.push_back({a, b});
  }
  for (auto [lo, hi] : ranges) {
    SCOPED_TRACE(std::to_string(lo) + ".." + std::to_string(hi));
    auto g = Compile(IntegerRangeGbnf(lo, hi));
    ASSERT_TRUE(g);
    std::vector<int64_t> probes;
    for (int64_t d = -25; d <= 25; ++d) {
      probes.push_back(lo + d);
      probes.push_back(hi + d);
    }
    for (int k = 0; k < 50; ++k) probes.push_back(lo + static_cast<int64_t>(rng() % (hi - lo + 1)));
    for (int64_t v : probes) {
      if (std::llabs(v) > kMaxIntegerMagnitude + 30) continue;
      EXPECT_EQ(FullMatch(g, std::to_string(v)), lo <= v && v <= hi) << v;
    }
    EXPECT_FALSE(FullMatch(g, "-0"));
    if (lo <= 7 && 7 <= hi) {
      EXPECT_FALSE(FullMatch(g, "07"));
    }
  }
}

TEST(NumberRange, IntegerBoundsFromSchemaKeywords) {
  NumberBounds b;
  b.exclusive_minimum = 2.5;
  b.maximum = 10.9;
  auto r = IntegerBounds(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 3);
  EXPECT_EQ(r->second, 10);
  b = {};
  b.exclusive_minimum = 3;
  b.exclusive_maximum = 4;
  EXPECT_EQ(IntegerBounds(b).status().message(), "no integer lies within the bounds");
  b = {};
  b.minimum = -1e300;
  r = IntegerBounds(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, -kMaxIntegerMagnitude);
  EXPECT_EQ(r->second, kMaxIntegerMagnitude);
}

// Random numbers of bounded-number grammars all lie within their bounds.
TEST(NumberRange, BoundedNumbersStayInBounds) {
  struct B {
    double min, max;
    bool xmin, xmax;
  };
  const std::vector<B> cases = {{0, 1, false, false},   {-40.5, 60, false, true},
                                {0, 1e9, true, false},  {-3, -2, false, false},
                                {-0.5, 0.5, true, true}, {2.25, 7.75, false, false},
                                {-1e6, -999, true, false}};
  std::mt19937_64 rng(3);
  for (const B& c : cases) {
    NumberBounds b;
    (c.xmin ? b.exclusive_minimum : b.minimum) = c.min;
    (c.xmax ? b.exclusive_maximum : b.maximum) = c.max;
    auto expr = BoundedNumberGbnf(b);
    ASSERT_TRUE(expr.ok()) << expr.status().message();
    auto g = Compile(*expr);
    ASSERT_TRUE(g);
    for (int i = 0; i < 200; ++i) {
      auto text = testing::SampleText(g, rng);
      ASSERT_TRUE(text.has_value());
      const double v = std::stod(*text);
      EXPECT_TRUE(c.xmin ? v > c.min : v >= c.min) << *text << " vs " << c.min;
      EXPECT_TRUE(c.xmax ? v < c.max : v <= c.max) << *text << " vs " << c.max;
    }
  }
  NumberBounds empty;
  empty.exclusive_minimum = 0.25;
  empty.exclusive_maximum = 0.75;
  EXPECT_EQ(BoundedNumberGbnf(empty).status().message(),
            "no number the grammar can write lies within the bounds");
}

}  // namespace number_range_test
}  // namespace gemlet::grammar
