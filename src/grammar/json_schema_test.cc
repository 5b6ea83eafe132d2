#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/grammar_sampler_test_util.h"
#include "grammar/json_grammar.h"
#include "grammar/matcher.h"

namespace gemlet::grammar {
namespace json_schema_test {

std::shared_ptr<const Grammar> CompileSchema(const std::string& schema) {
  auto gbnf = JsonSchemaTextToGbnf(schema);
  if (!gbnf.ok()) {
    ADD_FAILURE() << schema << ": " << gbnf.status().message();
    return nullptr;
  }
  auto g = ParseGbnf(*gbnf);
  if (!g.ok()) {
    ADD_FAILURE() << schema << ": the grammar does not parse: " << g.status().message() << "\n"
                  << *gbnf;
    return nullptr;
  }
  return std::make_shared<const Grammar>(std::move(g).value());
}

bool FullMatch(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  return m.AcceptBytes(text) && m.IsAccepting();
}

struct Case {
  const char* keyword;
  const char* schema;
  std::vector<std::string> valid;
  std::vector<std::string> invalid;
};

// Per keyword: hand-written instances the grammar must accept and reject.
const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"true", "true", {"1", "\"x\"", "[1, {\"a\": null}]", "{}", "-2.5e+3", "null"},
       {"", "nul", "[1,]", "{\"a\"}", "01", "'x'", "\"\\ud800\""}},
      {"{}", "{}", {"false", "[]", "{\"k\": [true]}"}, {"{", "True"}},
      {"type null", R"({"type": "null"})", {"null", "null "}, {"0", "\"null\"", "nul"}},
      {"type boolean", R"({"type": "boolean"})", {"true", "false"}, {"1", "\"true\"", "tru"}},
      {"type integer", R"({"type": "integer"})", {"0", "-7", "1234567890123456"},
       {"1.0", "01", "1e3", "12345678901234567", "+1", "-"}},
      {"type number", R"({"type": "number"})", {"0", "-0.5", "3.25e-10", "1E+99", "7"},
       {".5", "1.", "1e", "1e100", "--1", "0x10", "NaN"}},
      {"type string", R"({"type": "string"})",
       {"\"\"", "\"abc\"", "\"a\\\"b\\\\c\\n\\u00e9\\/\"", "\"日本\"", "\"\U0001F600\""},
       {"\"a", "abc", "\"\t\"", "\"\\x\"", "\"\\ud83d\\ude00\"", "\"\\u12\""}},
      {"type list", R"({"type": ["string", "null"]})", {"\"a\"", "null"}, {"1", "true"}},
      {"object properties, required",
       R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
           "required": ["a"], "additionalProperties": false})",
       {"{\"a\": 1}", "{\"a\": 1, \"b\": \"x\"}", "{ \"a\" : 1 ,\"b\":\"\" }"},
       {"{}", "{\"b\": \"x\"}", "{\"b\": \"x\", \"a\": 1}", "{\"a\": 1, \"c\": 2}",
        "{\"a\": \"1\"}", "{\"a\": 1,}", "{\"a\": 1, \"a\": 2}"}},
      {"optional properties in declared order",
       R"({"properties": {"z": {"type": "null"}, "y": {"type": "null"}, "x": {"type": "null"}},
           "additionalProperties": false})",
       {"{}", "{\"z\": null}", "{\"y\": null}", "{\"x\": null}", "{\"z\": null, \"x\": null}",
        "{\"z\": null, \"y\": null, \"x\": null}"},
       {"{\"x\": null, \"z\": null}", "{\"y\": null, \"y\": null}", "{, \"x\": null}",
        "{\"w\": null}"}},
      {"additionalProperties true",
       R"({"properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": true})",
       {"{\"id\": 1}", "{\"id\": 1, \"x\": [1], \"ide\": 2}", "{\"id\": 1, \"i\": {}}"},
       {"{\"x\": 1}", "{\"id\": 1, \"id\": 2}", "{\"id\": 1, \"a\\u0062\": 2}"}},
      {"additionalProperties schema",
       R"({"type": "object", "additionalProperties": {"type": "boolean"}})",
       {"{}", "{\"a\": true}", "{\"a\": true, \"b\": false}"}, {"{\"a\": 1}", "{\"a\"}"}},
      {"additionalProperties absent: none written",
       R"({"type": "object", "properties": {"a": {"type": "null"}}})", {"{}", "{\"a\": null}"},
       {"{\"b\": null}"}},
      {"object without properties: any object", R"({"type": "object"})",
       {"{}", "{\"a\": 1, \"b\": [true]}"}, {"[]", "{\"a\"}"}},
      {"required without a property schema",
       R"({"type": "object", "required": ["q"]})", {"{\"q\": 1}", "{\"q\": {\"r\": []}}"},
       {"{}", "{\"r\": 1}"}},
      {"array items, minItems, maxItems",
       R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
       {"[1]", "[1, 2]", "[1,2,3]", "[ 1 ]"}, {"[]", "[1,2,3,4]", "[1,]", "[\"1\"]", "[,1]"}},
      {"array without items", R"({"type": "array", "maxItems": 2, "uniqueItems": false})",
       {"[]", "[1, \"a\"]", "[1, 1]"}, {"[1, 2, 3]"}},
      {"large maxLength, maxItems taken as 10000",
       R"({"type": "array", "items": {"type": "string", "maxLength": 1e9}, "maxItems": 99999999999999999999})",
       {"[]", "[\"abc\"]"}, {"[1]"}},
      {"prefixItems then items",
       R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}],
           "items": {"type": "null"}})",
       {"[]", "[\"a\"]", "[\"a\", true]", "[\"a\", true, null, null]"},
       {"[true]", "[\"a\", null]", "[\"a\", true, 1]"}},
      {"prefixItems, items false, minItems",
       R"({"prefixItems": [{"const": 1}, {"const": 2}], "items": false, "minItems": 1})",
       {"[1]", "[1, 2]"}, {"[]", "[2]", "[1, 2, 3]"}},
      {"string minLength, maxLength", R"({"type": "string", "minLength": 2, "maxLength": 3})",
       {"\"ab\"", "\"abc\"", "\"a\\n\"", "\"日本\""}, {"\"a\"", "\"abcd\"", "\"\""}},
      {"string enum", R"({"type": "string", "enum": ["red", "green", 3]})",
       {"\"red\"", "\"green\""}, {"\"blue\"", "3", "\"re\""}},
      {"const of any value", R"({"const": {"a": [1, "x\"y"]}})", {"{\"a\":[1,\"x\\\"y\"]}"},
       {"{\"a\": [1, \"x\\\"y\"]}", "{}"}},
      {"enum of any values", R"({"enum": [null, 1.5, "é", [true]]})",
       {"null", "1.5", "\"é\"", "[true]"}, {"1", "[false]", "\"e\""}},
      {"pattern", R"({"type": "string", "pattern": "^[a-c]{2}\\d$"})", {"\"ab1\"", "\"cc9\""},
       {"\"ab\"", "\"abd\"", "\"xab1\"", "\"ab12\""}},
      {"pattern unanchored", R"({"type": "string", "pattern": "x+"})",
       {"\"x\"", "\"axxb\"", "\"\\\"x\""}, {"\"\"", "\"ab\""}},
      {"format date", R"({"type": "string", "format": "date"})",
       {"\"2024-01-31\"", "\"1999-02-28\"", "\"2000-04-30\""},
       {"\"2024-02-30\"", "\"2024-04-31\"", "\"2024-13-01\"", "\"2024-00-10\"", "\"24-01-01\""}},
      {"format time", R"({"type": "string", "format": "time"})",
       {"\"23:59:59Z\"", "\"00:00:00.123+05:30\""},
       {"\"24:00:00Z\"", "\"12:60:00Z\"", "\"12:00:00\"", "\"12:00Z\""}},
      {"format date-time", R"({"type": "string", "format": "date-time"})",
       {"\"2024-05-06T07:08:09-01:00\""}, {"\"2024-05-06 07:08:09Z\"", "\"2024-05-06\""}},
      {"format uuid", R"({"type": "string", "format": "uuid"})",
       {"\"123e4567-e89b-12d3-a456-426614174000\""},
       {"\"123e4567e89b12d3a456426614174000\"", "\"123E4567-E89B-12D3-A456-42661417400\""}},
      {"format email", R"({"type": "string", "format": "email"})",
       {"\"a.b+c@example.com\"", "\"x@y.z\""}, {"\"a@b\"", "\"@b.c\"", "\"a b@c.d\"", "\"a@-b.c\""}},
      {"format ipv4", R"({"type": "string", "format": "ipv4"})",
       {"\"192.168.0.1\"", "\"255.255.255.0\"", "\"0.0.0.0\""},
       {"\"256.1.1.1\"", "\"01.1.1.1\"", "\"1.1.1\"", "\"1.1.1.1.1\""}},
      {"format hostname", R"({"type": "string", "format": "hostname"})",
       {"\"example.com\"", "\"a-b.c\"", "\"x\""}, {"\"-a.com\"", "\"a..b\"", "\"a_b\""}},
      {"format uri", R"({"type": "string", "format": "uri"})",
       {"\"https://example.com\"", "\"http://a.b:8080/x/y.html?q=1&r=2\""},
       {"\"example.com\"", "\"https://\"", "\"http://a b\"", "\"/relative\""}},
      {"integer minimum, maximum", R"({"type": "integer", "minimum": -12, "maximum": 105})",
       {"-12", "-1", "0", "9", "99", "105"}, {"-13", "106", "-0", "007", "1000"}},
      {"integer exclusive bounds",
       R"({"type": "integer", "exclusiveMinimum": 2.5, "exclusiveMaximum": 10})",
       {"3", "9"}, {"2", "10", "-3"}},
      {"number bounds", R"({"type": "number", "minimum": -1, "maximum": 2.5})",
       {"-1", "0", "2", "1.5", "-0.25", "0.125"}, {"3", "-2", "2.6", "-1.5", "1e0", "2.50"}},
      {"number exclusiveMinimum", R"({"type": "number", "exclusiveMinimum": 0})",
       {"1", "0.5", "1234.75"}, {"0", "-1", "-0.5", "0.0"}},
      {"anyOf", R"({"anyOf": [{"type": "integer", "maximum": 3}, {"type": "string", "maxLength": 1}]})",
       {"3", "-5", "\"a\"", "\"\""}, {"4", "\"ab\"", "null"}},
      {"oneOf (as anyOf)", R"({"oneOf": [{"const": "a"}, {"const": "b"}]})", {"\"a\"", "\"b\""},
       {"\"c\""}},
      {"allOf merged",
       R"({"allOf": [{"properties": {"a": {"type": "null"}}, "required": ["a"]},
                     {"properties": {"b": {"type": "null"}}, "required": ["b"]}]})",
       {"{\"a\": null, \"b\": null}"}, {"{\"a\": null}", "{\"b\": null}"}},
      {"$ref to $defs and definitions",
       R"({"$defs": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
           "definitions": {"s": {"const": "s"}},
           "type": "array", "prefixItems": [{"$ref": "#/$defs/n"}, {"$ref": "#/definitions/s"}],
           "items": false, "minItems": 2})",
       {"[5, \"s\"]"}, {"[10, \"s\"]", "[5]", "[5, \"t\"]"}},
      {"recursive $ref",
       R"({"type": "object", "properties": {"next": {"$ref": "#"}}, "additionalProperties": false})",
       {"{}", "{\"next\": {}}", "{\"next\": {\"next\": {\"next\": {}}}}"},
       {"{\"next\": 1}", "{\"next\": {\"next\": []}}"}},
      {"whitespace is bounded", R"({"type": "array", "items": {"type": "integer"}})",
       {"[1, 2]", "[\n        1,\n2\n]", "[1 ,2 ]"},
       {"[1,  2]", "[\n         1]", "[1,\n\n2]", "[\t1]", "[1, \n2]", " [1]"}},
  };
  return cases;
}

TEST(JsonSchema, EveryKeywordAcceptsAndRejects) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.keyword);
    auto g = CompileSchema(c.schema);
    if (!g) continue;
    for (const std::string& s : c.valid) EXPECT_TRUE(FullMatch(g, s)) << "should match: " << s;
    for (const std::string& s : c.invalid) EXPECT_FALSE(FullMatch(g, s)) << "should not match: " << s;
  }
}

TEST(JsonSchema, GoldenGrammars) {
  auto gbnf = JsonSchemaTextToGbnf(R"({"type": "boolean", "title": "ignored"})");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  EXPECT_EQ(*gbnf,
            "root ::= boolean\n"
            "boolean ::= ( \"true\" | \"false\" ) ws\n"
            "ws ::= ( \" \" | \"\\n\" \" \"{0,8} )?\n");
  gbnf = JsonSchemaTextToGbnf(
      R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 12},
          "s": {"type": "string", "maxLength": 2}}, "required": ["n"]})");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  EXPECT_EQ(*gbnf,
            "root ::= \"{\" ws ( \"\\\"n\\\"\" ws \":\" ws root-n ( \",\" ws \"\\\"s\\\"\" ws \":\" ws "
            "root-s )? ) \"}\" ws\n"
            "root-n ::= ( [1-9] | \"1\" [0-2] ) ws\n"
            "root-s ::= \"\\\"\" char{0,2} \"\\\"\" ws\n"
            "char ::= [^\"\\\\\\x00-\\x1F\\uD800-\\uDFFF] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" hex4 )\n"
            "hex4 ::= ( [0-9a-cA-Ce-fE-F] [0-9a-fA-F] | [dD] [0-7] ) [0-9a-fA-F]{2}\n"
            "ws ::= ( \" \" | \"\\n\" \" \"{0,8} )?\n");
  gbnf = JsonSchemaTextToGbnf(R"({"type": "array", "prefixItems": [{"type": "null"}], "maxItems": 3})");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  EXPECT_NE(gbnf->find("root ::= \"[\" ws ( null ( \",\" ws value ){0,2} )? \"]\" ws\n"),
            std::string::npos)
      << *gbnf;
}

TEST(JsonSchema, PropertyOrderFollowsTheInput) {
  const char* schema = R"({"properties": {"b": {"type": "null"}, "a": {"type": "null"}},
                           "required": ["a", "b"]})";
  auto ordered = JsonSchemaToGbnf(nlohmann::ordered_json::parse(schema));
  auto sorted = JsonSchemaToGbnf(nlohmann::json::parse(schema));
  ASSERT_TRUE(ordered.ok() && sorted.ok());
  auto g1 = std::make_shared<const Grammar>(ParseGbnf(*ordered).value());
  auto g2 = std::make_shared<const Grammar>(ParseGbnf(*sorted).value());
  EXPECT_TRUE(FullMatch(g1, "{\"b\": null, \"a\": null}"));
  EXPECT_FALSE(FullMatch(g1, "{\"a\": null, \"b\": null}"));
  EXPECT_TRUE(FullMatch(g2, "{\"a\": null, \"b\": null}"));  // nlohmann::json sorts keys
}

TEST(JsonSchema, JsonObjectGrammar) {
  auto g = ParseGbnf(JsonObjectGrammar());
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto gp = std::make_shared<const Grammar>(std::move(g).value());
  for (const char* ok : {"{}", "{\"a\": [1, {\"b\": null}], \"c\": \"d\"}", "{\n  \"x\": -1.5e3\n}"})
    EXPECT_TRUE(FullMatch(gp, ok)) << ok;
  for (const char* bad : {"[]", "1", "\"{}\"", "{\"a\" 1}", "{}}", "{   }"})
    EXPECT_FALSE(FullMatch(gp, bad)) << bad;
  auto v = ParseGbnf(JsonValueGrammar());
  ASSERT_TRUE(v.ok()) << v.status().message();
}

struct ErrorCase {
  const char* schema;
  const char* message;
};

TEST(JsonSchema, ErrorsNameTheKeywordAndPointer) {
  const std::vector<ErrorCase> cases = {
      {R"({"type": "array", "contains": {}})", "json schema #/contains: unsupported keyword \"contains\""},
      {R"({"type": "array", "uniqueItems": true})",
       "json schema #/uniqueItems: \"uniqueItems\" other than false is not supported"},
      {R"({"minProperties": 1})", "json schema #/minProperties: unsupported keyword \"minProperties\""},
      {R"({"type": "integer", "multipleOf": 2})", "json schema #/multipleOf: unsupported keyword \"multipleOf\""},
      {R"({"properties": {"a/b": {"type": "string", "contentEncoding": "base64"}}})",
       "json schema #/properties/a~1b/contentEncoding: unsupported keyword \"contentEncoding\""},
      {R"({"items": {"not": {}}})", "json schema #/items/not: unsupported keyword \"not\""},
      {R"({"type": "strin"})", "json schema #/type: unknown type \"strin\""},
      {R"({"type": []})", "json schema #/type: \"type\" must be a type name or a list of them"},
      {R"({"type": "string", "format": "ipv6"})",
       "json schema #/format: unsupported format \"ipv6\""},
      {R"({"type": "string", "minLength": -1})",
       "json schema #/minLength: \"minLength\" must be a non-negative integer"},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})",
       "json schema #/maxLength: \"maxLength\" is below \"minLength\""},
      {R"({"type": "string", "minLength": 10001})",
       "json schema #/minLength: \"minLength\" above 10000 is not supported"},
      {R"({"type": "array", "maxItems": 2.5})",
       "json schema #/maxItems: \"maxItems\" must be a non-negative integer"},
      {R"({"type": "string", "pattern": "^a$", "maxLength": 3})",
       "json schema #/maxLength: a length beside \"pattern\" is not supported"},
      {R"({"type": "string", "format": "date", "minLength": 3})",
       "json schema #/minLength: \"minLength\" beside \"format\" is not supported"},
      {R"({"type": "string", "pattern": "(a"})",
       "json schema #/pattern: pattern offset 2: missing ')'"},
      {R"({"type": "string", "pattern": "\\bword"})",
       "json schema #/pattern: pattern offset 0: word boundaries (\\b, \\B) are not supported"},
      {R"({"type": "integer", "minimum": "1"})",
       "json schema #/minimum: \"minimum\" must be a number"},
      {R"({"type": "integer", "exclusiveMinimum": true})",
       "json schema #/exclusiveMinimum: \"exclusiveMinimum\" must be a number"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4.5})",
       "json schema #: no integer lies within the bounds"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})",
       "json schema #/minItems: no array length satisfies the schema"},
      {R"({"prefixItems": [true], "items": false, "minItems": 2})",
       "json schema #/minItems: no array length satisfies the schema"},
      {R"({"properties": {"a": false}})", "json schema #/properties/a: the schema false matches nothing"},
      {R"({"properties": {"a": 3}})", "json schema #/properties/a: a schema must be an object or a boolean"},
      {R"({"required": ["a"], "additionalProperties": false})",
       "json schema #/required/0: required property \"a\" is not allowed by \"additionalProperties\": false"},
      {R"({"required": "a"})", "json schema #/required: \"required\" must be a list of names"},
      {R"({"$ref": "#/$defs/missing"})", "json schema #/$ref: \"$ref\" \"#/$defs/missing\": no such schema"},
      {R"({"$ref": "other.json#/a"})",
       "json schema #/$ref: \"$ref\" \"other.json#/a\" is not local (only \"#...\" is supported)"},
      {R"({"$ref": "#/$defs/a", "type": "string", "$defs": {"a": {}}})",
       "json schema #/type: \"type\" beside \"$ref\" is not supported"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})",
       "json schema #/$defs/b/anyOf/0/$ref: a \"$ref\" cycle that matches no character: # -> "
       "#/$defs/a -> #/$defs/b -> #/$defs/a"},
      {R"({"anyOf": []})", "json schema #/anyOf: \"anyOf\" must be a non-empty list of schemas"},
      {R"({"anyOf": [{}], "minLength": 1})", "json schema #/minLength: \"minLength\" beside \"anyOf\" is not supported"},
      {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})",
       "json schema #/allOf/1/type: \"type\" differs between the schemas of \"allOf\""},
      {R"({"allOf": [{"anyOf": [{}]}]})",
       "json schema #/allOf/0/anyOf: \"anyOf\" inside \"allOf\" is not supported"},
      {R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]})",
       "json schema #/allOf: \"allOf\" with \"additionalProperties\" and properties in several "
       "schemas is not supported"},
      {R"({"enum": []})", "json schema #/enum: \"enum\" must be a non-empty list"},
      {R"({"type": "string", "enum": [1, 2]})", "json schema #/enum: no value of \"enum\" has the type"},
      {R"({"enum": ["a"], "maxLength": 1})", "json schema #/maxLength: \"maxLength\" beside \"enum\" is not supported"},
      {R"({"$defs": []})", "json schema #/$defs: \"$defs\" must be an object"},
      {"{\"type\": ", "json schema: not JSON: [json.exception.parse_error.101] parse error at line 1, "
                     "column 10: syntax error while parsing value - unexpected end of input; "
                     "expected '[', '{', or a literal"},
  };
  for (const ErrorCase& c : cases) {
    auto r = JsonSchemaTextToGbnf(c.schema);
    ASSERT_FALSE(r.ok()) << c.schema << " gave\n" << *r;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), c.message) << c.schema;
  }
}

// The part of the random-document check that needs no Node (so it runs under qemu too): 10
// random documents of each test schema's grammar parse as JSON. tests/grammar/run_ajv.sh
// (ctest gemlet_json_schema_ajv) writes 50 per schema and validates them with ajv.
TEST(JsonSchema, TestSchemasSampleAsJson) {
  const std::filesystem::path dir = std::filesystem::path(GEMLET_SOURCE_DIR) / "tests/data/schemas";
  int schemas = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().filename().string());
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    auto g = CompileSchema(text.str());
    if (!g) continue;
    ++schemas;
    std::mt19937_64 rng(schemas);
    for (int i = 0; i < 10; ++i) {
      std::string partial;
      auto doc = testing::SampleText(g, rng, 20000, &partial);
      ASSERT_TRUE(doc.has_value()) << "the walk did not finish: " << partial.substr(0, 300);
      EXPECT_TRUE(nlohmann::json::accept(*doc)) << *doc;
    }
  }
  EXPECT_GE(schemas, 20);
}

}  // namespace json_schema_test
}  // namespace gemlet::grammar
