// `gemlet run` as a one-shot product: --chat (with --system and --think) feeds exactly the
// Gemma 4 chat format, the prompt may come from stdin, --json carries the text, the token
// counts and the timings, and the exit code tells success (0), failure (1) and misuse (2)
// apart, with one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "tools/cli/cli_test_util.h"
#include "format/gemlet_file.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace gemlet::cli {
namespace run_chat_test {

namespace fs = std::filesystem;

const std::string& Dir() {
  static const std::string d = testing_util::MakeScratchDir("run_chat");
  return d;
}

using testing_util::WriteFile;

// `gemlet ARGS <stdin_file`, stdout and stderr to files; the exit code.
int Gemlet(const std::string& args, std::string* out, std::string* err = nullptr,
           const std::string& stdin_file = "/dev/null") {
  return testing_util::RunGemlet(Dir(), args, out, err, stdin_file);
}

const std::string& TinyModel() {
  static const std::string path = testing_util::MakeTinyModel(Dir(), 5);
  return path;
}

nlohmann::json ParseJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << text;
  return j;
}

// `run --chat` feeds the chat template's rendering of one user turn (after an optional system
// turn, with <|think|> for --think): the same ids and continuation as that text given raw.
TEST(RunChat, ChatFlagsFeedTheRenderedChatFormat) {
  struct Case {
    std::string flags;
    std::vector<ChatMessage> messages;
    bool thinking;
  };
  const std::vector<Case> cases = {
      {"--chat", {{.role = "user", .content = "Hello there"}}, false},
      {"--chat --system 'Answer briefly.' --think",
       {{.role = "system", .content = "Answer briefly."}, {.role = "user", .content = "Hello there"}},
       true},
  };
  for (const Case& c : cases) {
    ChatOptions co;
    co.add_generation_prompt = true;
    co.enable_thinking = c.thinking;
    auto rendered = RenderChat(c.messages, co);
    ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
    ASSERT_EQ(rendered->rfind("<bos>", 0), 0u) << *rendered;
    const std::string raw_file = Dir() + "/raw_prompt.txt";
    WriteFile(raw_file, *rendered);

    const std::string common = " -m " + TinyModel() + " --temp 0 -n 6 --ignore-eos --json";
    std::string chat_out, raw_out, err;
    ASSERT_EQ(Gemlet("run " + c.flags + " -p 'Hello there'" + common, &chat_out, &err), 0) << err;
    // The raw text from stdin (no -p): special tokens are read as such, <bos> is already first.
    ASSERT_EQ(Gemlet("run" + common, &raw_out, &err, raw_file), 0) << err;
    const auto chat = ParseJson(chat_out), raw = ParseJson(raw_out);
    EXPECT_EQ(chat["prompt_tokens"], raw["prompt_tokens"]) << c.flags;
    EXPECT_EQ(chat["ids"], raw["ids"]) << c.flags;
    EXPECT_EQ(chat["text"], raw["text"]) << c.flags;

    // The prompt from stdin with --chat is the same as -p.
    const std::string msg_file = Dir() + "/message.txt";
    WriteFile(msg_file, "Hello there");
    std::string stdin_out;
    ASSERT_EQ(Gemlet("run " + c.flags + common, &stdin_out, &err, msg_file), 0) << err;
    EXPECT_EQ(ParseJson(stdin_out)["ids"], chat["ids"]) << c.flags;
  }
}

// --json: the text (the decoded ids), the token counts and the timings, as one object.
TEST(RunChat, JsonCarriesTextTokenCountsAndTimings) {
  std::string out, err;
  ASSERT_EQ(Gemlet("run -m " + TinyModel() + " --chat -p Hi --temp 0 -n 5 --ignore-eos --json", &out, &err), 0)
      << err;
  const auto j = ParseJson(out);
  ASSERT_TRUE(j["ids"].is_array());
  EXPECT_EQ(j["ids"].size(), 5u);
  EXPECT_EQ(j["stop"], "length");
  EXPECT_EQ(j["timings"]["generated_tokens"], 5);
  EXPECT_EQ(j["timings"]["prompt_tokens"], j["prompt_tokens"]);
  EXPECT_GT(j["prompt_tokens"].get<int>(), 4);
  for (const char* key : {"prefill_ms", "decode_ms", "prefill_tok_s", "decode_tok_s"}) {
    EXPECT_TRUE(j["timings"][key].is_number()) << key;
  }
  EXPECT_GT(j["timings"]["kv_bytes"].get<int64_t>(), 0);  // the KV of the prompt and the reply
  auto file = GemletFile::Open(TinyModel());
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::FromGemlet(**file);
  ASSERT_TRUE(tok.ok());
  auto text = tok->Decode(j["ids"].get<std::vector<int32_t>>());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(j["text"], *text);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one JSON line: " << out;
}

// The tiny model with its config's hidden_size made 0 (same length, so the file stays valid).
std::string CorruptConfigModel() {
  const std::string path = Dir() + "/bad-config.gemlet";
  auto bytes = ReadFileToString(TinyModel());
  EXPECT_TRUE(bytes.ok());
  if (!bytes.ok()) return path;
  std::string b = *bytes;
  const std::string key = "\"hidden_size\":";
  const size_t at = b.find(key);
  EXPECT_NE(at, std::string::npos);
  if (at == std::string::npos) return path;
  size_t v = at + key.size();
  while (b[v] == ' ') ++v;
  for (bool first = true; std::isdigit(static_cast<unsigned char>(b[v])); ++v, first = false) {
    b[v] = first ? '0' : ' ';
  }
  WriteFile(path, b);
  return path;
}

// Without -n, run generates until the context is full, as chat does (the old default -n 256
// refused a short prompt with --ctx 64); --exact is accepted by run and chat.
TEST(RunChat, WithoutNRunGeneratesToTheEndOfTheContext) {
  std::string out, err;
  ASSERT_EQ(Gemlet("run -m " + TinyModel() + " --ctx 64 -p short --temp 0 --ignore-eos --json", &out, &err), 0)
      << err;
  const auto j = ParseJson(out);
  EXPECT_EQ(j["prompt_tokens"].get<int>() + j["timings"]["generated_tokens"].get<int>(), 64) << out;
  EXPECT_EQ(j["stop"], "length");
  ASSERT_EQ(Gemlet("run -m " + TinyModel() + " --exact --ctx 64 -p short -n 3 --temp 0 --ignore-eos --json", &out,
                   &err),
            0)
      << err;
  EXPECT_EQ(ParseJson(out)["timings"]["generated_tokens"], 3);
  WriteFile(Dir() + "/hi.txt", "Hi\n");
  EXPECT_EQ(Gemlet("chat -m " + TinyModel() + " --exact -n 3 --temp 0 --no-history", &out, &err, Dir() + "/hi.txt"), 0)
      << err;
  EXPECT_FALSE(out.empty());
}

TEST(RunChat, MisuseAndFailuresAreOneLineWithTheirExitCodes) {
  struct Case {
    std::string args;
    int code;
    std::string says;
  };
  const std::string m = " -m " + TinyModel();
  const std::vector<Case> cases = {
      {"run" + m + " --system X -p Hi", 2, "--system and --think need --chat"},
      {"run" + m + " --think -p Hi", 2, "--system and --think need --chat"},
      {"run" + m + " --chat --tokens 2,3", 2, "--chat applies to a text prompt"},
      {"run" + m + " --chat", 2, "the prompt on stdin is empty"},
      {"run -m " + Dir() + "/missing.gemlet -p Hi", 1, "missing.gemlet"},
      {"run" + m + " -p Hi -n 5000 --ctx 64", 2, "--ctx 64"},
      // A bad model file is 1 (README "Exit codes"), whatever the reader's error: a
      // directory, a file whose config is corrupt.
      {"run -m " + Dir() + " -p Hi", 1, Dir()},
      {"run -m " + CorruptConfigModel() + " -p Hi", 1, "bad-config.gemlet"},
      {"chat -m " + Dir(), 1, Dir()},
      {"chat -m " + CorruptConfigModel(), 1, "bad-config.gemlet"},
  };
  for (const Case& c : cases) {
    std::string out, err;
    EXPECT_EQ(Gemlet(c.args, &out, &err), c.code) << c.args << "\n" << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args << "\n" << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << c.args << "\n" << err;
    EXPECT_EQ(out, "") << c.args;
  }
}

// Every subcommand that `gemlet help` lists: --help (exit 0) shows its usage with examples,
// and an unknown flag is a one-line usage error (exit 2) naming the flag and --help, reported
// before any work (run would otherwise read stdin or make the demo model first).
TEST(Everywhere, EveryCommandHasHelpWithExamplesAndOneLineUsageErrors) {
  std::string list, err;
  ASSERT_EQ(Gemlet("help", &list, &err), 0) << err;
  const std::string all = list + err;
  const size_t from = all.find("commands:");
  ASSERT_NE(from, std::string::npos) << all;
  std::vector<std::string> commands;
  std::istringstream lines(all.substr(from));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ", 0) != 0 || line.size() < 3 || line[2] == ' ') continue;
    commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_GE(commands.size(), 8u) << all;
  for (const char* c : {"chat", "run", "perplexity", "convert"}) {
    EXPECT_NE(std::find(commands.begin(), commands.end(), c), commands.end()) << c;
  }
  for (const std::string& c : commands) {
    std::string out, e;
    EXPECT_EQ(Gemlet(c + " --help", &out, &e), 0) << c;
    const std::string help = out + e;
    EXPECT_NE(help.find("usage: gemlet " + c), std::string::npos) << c << "\n" << help;
    EXPECT_NE(help.find("examples:"), std::string::npos) << c << "\n" << help;
    EXPECT_EQ(Gemlet(c + " --no-such-flag", &out, &e), 2) << c << "\n" << e;
    EXPECT_EQ(e, "gemlet " + c + ": unknown flag --no-such-flag (see gemlet " + c + " --help)\n") << c;
    EXPECT_EQ(out, "") << c;
  }
  EXPECT_FALSE(fs::exists(Dir() + "/cache/gemlet/demo-tiny.gemlet")) << "a usage error made the demo model";
}

}  // namespace run_chat_test
}  // namespace gemlet::cli
