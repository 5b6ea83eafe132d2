#include "model/config_field.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace gemlet::model {
namespace config_field_test {

const nlohmann::json kConfig = nlohmann::json::parse(R"({
  "layers": 35, "eps": 1e-6, "whole": 2, "flag": true, "none": null, "text": "35", "fraction": 0.5
})");

TEST(ConfigField, ReadsEachTypeFromItsJsonType) {
  int64_t layers = 0;
  double eps = 0;
  float whole = 0;
  bool flag = false;
  ASSERT_TRUE(GetConfigField(kConfig, "layers", &layers, true).ok());
  ASSERT_TRUE(GetConfigField(kConfig, "eps", &eps, true).ok());
  ASSERT_TRUE(GetConfigField(kConfig, "whole", &whole, true).ok());  // an integer is a number too
  ASSERT_TRUE(GetConfigField(kConfig, "flag", &flag, true).ok());
  EXPECT_EQ(layers, 35);
  EXPECT_EQ(eps, 1e-6);
  EXPECT_EQ(whole, 2.0f);
  EXPECT_TRUE(flag);
}

TEST(ConfigField, MissingOrNullKeepsTheDefaultUnlessRequired) {
  int64_t v = 7;
  EXPECT_TRUE(GetConfigField(kConfig, "absent", &v, false).ok());
  EXPECT_TRUE(GetConfigField(kConfig, "none", &v, false).ok());
  EXPECT_EQ(v, 7);
  const Status missing = GetConfigField(kConfig, "absent", &v, true);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(), "config has no \"absent\"");
  const Status null = GetConfigField(kConfig, "none", &v, true, "drafter config");
  EXPECT_EQ(null.message(), "drafter config has no \"none\"");
  EXPECT_EQ(v, 7);
}

TEST(ConfigField, AWrongJsonTypeIsAnErrorNamingTheField) {
  int64_t i = 1;
  bool b = false;
  double d = 3;
  EXPECT_EQ(GetConfigField(kConfig, "fraction", &i, true).message(), "config \"fraction\" is not an integer");
  EXPECT_EQ(GetConfigField(kConfig, "text", &i, true, "vision config").message(),
            "vision config \"text\" is not an integer");
  EXPECT_EQ(GetConfigField(kConfig, "layers", &b, true).message(), "config \"layers\" is not a boolean");
  EXPECT_EQ(GetConfigField(kConfig, "flag", &d, true).message(), "config \"flag\" is not a number");
  EXPECT_EQ(i, 1);  // left as it was
  EXPECT_FALSE(b);
  EXPECT_EQ(d, 3);
}

}  // namespace config_field_test
}  // namespace gemlet::model
