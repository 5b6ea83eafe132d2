// `run --grammar` / `--json-schema` (and chat's): the output of the random tiny model matches
// the grammar or validates against the schema, whatever the seed; bad grammars and schemas are
// usage errors (exit 2) that say where.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "base/mapped_file.h"
#include "tools/cli/cli_test_util.h"

namespace gemlet::cli {
namespace grammar_flags_test {

namespace fs = std::filesystem;

const std::string& Dir() {
  static const std::string d = testing_util::MakeScratchDir("grammar_flags");
  return d;
}

using testing_util::WriteFile;

int Gemlet(const std::string& args, std::string* out, std::string* err = nullptr,
           const std::string& stdin_file = "/dev/null") {
  return testing_util::RunGemlet(Dir(), args, out, err, stdin_file);
}

// The tiny shapes with the tiny synthetic vocabulary (byte tokens and Gemma's control tokens):
// every grammar character can be written, one byte token at a time if need be.
const std::string& TinyModel() {
  static const std::string path = testing_util::MakeTinyModel(Dir(), 3);
  return path;
}

TEST(GrammarFlags, RunOutputMatchesTheGrammarForEverySeed) {
  const std::string g = Dir() + "/g.gbnf";
  WriteFile(g, "root ::= (\"yes\" | \"no\") \" \" [0-9]{1,3} (\",\" [a-z]+)*\n");
  const std::regex check("(yes|no) [0-9]{1,3}(,[a-z]+)*");
  for (int seed = 1; seed <= 6; ++seed) {
    std::string out, err;
    ASSERT_EQ(Gemlet("run -m " + TinyModel() + " -p Hi -n 40 --json --grammar " + g + " --seed " +
                         std::to_string(seed), &out, &err), 0) << err;
    const auto j = nlohmann::json::parse(out);
    const std::string text = j["text"];
    EXPECT_TRUE(std::regex_match(text, check)) << "seed " << seed << ": " << text;
    // Unbounded lists end within -n: the budget steers the output to a whole match.
    EXPECT_EQ(j["stop"], "eog") << text;
  }
}

TEST(GrammarFlags, RunOutputValidatesAgainstTheSchema) {
  const std::string schema =
      R"({"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": -5, "maximum": 5},
          "tag": {"enum": ["a", "b"]}}, "required": ["ok", "n"], "additionalProperties": false})";
  for (int seed = 1; seed <= 6; ++seed) {
    std::string out, err;
    ASSERT_EQ(Gemlet("run -m " + TinyModel() + " -p Hi -n 60 --json --seed " + std::to_string(seed) +
                         " --json-schema '" + schema + "'", &out, &err), 0) << err;
    const std::string text = nlohmann::json::parse(out)["text"];
    const auto v = nlohmann::json::parse(text, nullptr, false);
    ASSERT_TRUE(v.is_object()) << text;
    EXPECT_TRUE(v["ok"].is_boolean()) << text;
    ASSERT_TRUE(v["n"].is_number_integer()) << text;
    EXPECT_LE(std::abs(v["n"].get<int>()), 5) << text;
    if (v.contains("tag")) {
      EXPECT_TRUE(v["tag"] == "a" || v["tag"] == "b") << text;
    }
    for (const auto& [k, _] : v.items()) EXPECT_TRUE(k == "ok" || k == "n" || k == "tag") << text;
  }
}

TEST(GrammarFlags, ChatAnswersMatchTheGrammar) {
  const std::string g = Dir() + "/chat.gbnf";
  WriteFile(g, "root ::= \"[\" [0-9]+ \"]\"\n");
  const std::string in = Dir() + "/chat.in";
  WriteFile(in, "first\nsecond\n");
  std::string out, err;
  ASSERT_EQ(Gemlet("chat -m " + TinyModel() + " -n 12 --seed 4 --no-history --grammar " + g, &out, &err, in), 0)
      << err;
  const std::regex answer("\\[[0-9]+\\]");
  int answers = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), answer); it != std::sregex_iterator(); ++it) ++answers;
  EXPECT_EQ(answers, 2) << out;
}

TEST(GrammarFlags, BadGrammarsAndSchemasAreUsageErrorsThatSayWhere) {
  const std::string bad = Dir() + "/bad.gbnf";
  WriteFile(bad, "root ::= \"a\"\nitem ::= [a-\n");
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"--grammar " + bad, "gbnf 2:"},
      {"--grammar " + Dir() + "/none.gbnf", "none.gbnf"},
      {"--json-schema '{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"string\", \"contentEncoding\": \"base64\"}}}'",
       "#/properties/x/contentEncoding"},
      {"--json-schema '{\"type\": '", "not JSON"},
      {"--grammar " + bad + " --json-schema '{}'", "not both"},
  };
  for (const Case& c : cases) {
    std::string out, err;
    EXPECT_EQ(Gemlet("run -m " + TinyModel() + " -p Hi " + c.args, &out, &err), 2) << c.args << "\n" << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args << "\n" << err;
    EXPECT_EQ(out, "") << c.args;
  }
}

}  // namespace grammar_flags_test
}  // namespace gemlet::cli
