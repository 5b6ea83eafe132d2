// `gemlet tokenize` / `gemlet detokenize` run as a process (GEMLET_BINARY): ids and text
// against the library and shared/tokenizer/vectors.json, -f with NULs and control characters,
// --chat with a vectors.json chat case, the three tokenizer sources (tokenizer.json, .gemlet,
// GGUF), and the exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/gemlet_writer.h"
#include "format/tokenizer_json.h"
#include "text/tokenizer.h"

namespace gemlet {
namespace tokenize_cli_test {

using nlohmann::json;

const std::string kShared = GEMLET_SHARED_DIR;
const std::string kTok = kShared + "/tokenizer/gemma4";

struct CliRun {
  int code = -1;
  std::string out;
};

void AppendQuoted(const std::string& a, std::string* cmd) {
  cmd->push_back('\'');
  for (char c : a) {
    if (c == '\'') {
      cmd->append("'\\''");
    } else {
      cmd->push_back(c);
    }
  }
  cmd->push_back('\'');
}

CliRun Gemlet(const std::vector<std::string>& args) {
  std::string cmd;
  AppendQuoted(GEMLET_BINARY, &cmd);
  for (const auto& a : args) {
    cmd.push_back(' ');
    AppendQuoted(a, &cmd);
  }
  cmd.append(" 2>/dev/null");
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/tokcli." + std::to_string(::getpid()) + "." + name;
}

// The real tokenizer's files, parsed once (the library tokenizer and the .gemlet below both
// start from them; a parse takes seconds under the sanitizers).
const TokenizerInfo& Info() {
  static const TokenizerInfo* info = [] {
    auto r = LoadHfTokenizer(kTok);
    if (!r.ok()) std::abort();
    return new TokenizerInfo(std::move(r).value());
  }();
  return *info;
}

const Tokenizer& Lib() {
  static const Tokenizer* tok = [] {
    const TokenizerInfo* info = &Info();
    auto t = Tokenizer::Create(info->vocab, info->special);
    if (!t.ok()) std::abort();
    return new Tokenizer(std::move(t).value());
  }();
  return *tok;
}

const json& Vectors() {
  static const json* v =
      new json(json::parse(*ReadFileToString(kShared + "/tokenizer/vectors.json")));
  return *v;
}

// The real vocabulary in a .gemlet (fast to load: most runs below use it with -m).
const std::string& Model() {
  static const std::string* path = [] {
    auto* p = new std::string(TempPath("vocab.gemlet"));
    const TokenizerInfo* info = &Info();
    auto w = GemletWriter::Create(*p);
    if (!w.ok()) std::abort();
    (*w)->SetVocab(info->vocab);
    (*w)->SetMetadata({{"config", json::object()}, {"tokenizer", info->special}});
    if (!(*w)->Finish().ok()) std::abort();
    std::atexit([] { std::remove(Model().c_str()); });
    return p;
  }();
  return *path;
}

std::string IdsLine(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "\n";
}

TEST(TokenizeCli, IdsTableAndJson) {
  CliRun r = Gemlet({"tokenize", "--tokenizer", kTok, "--ids", "Hello, world!"});  // a folder
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "9259,236764,1902,236888\n");
  r = Gemlet({"tokenize", "--tokenizer", kTok + "/tokenizer.json", "line1\nline2"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "1257\tline\n236770\t1\n107\t\\n\n1257\tline\n236778\t2\n");
  r = Gemlet({"tokenize", "-m", Model(), "--json", " hello<turn|>"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(json::parse(r.out),
            json::parse(R"({"ids":[29104,106],"pieces":["▁hello","<turn|>"]})"));
}

TEST(TokenizeCli, FileBytesIncludingNulsAndTrailingNewlines) {
  std::string bytes = Vectors()["cases"][0]["text"];  // reuse below for a second check
  for (const json& c : Vectors()["cases"]) {
    if (c["name"] == "control_chars") bytes = c["text"];
  }
  ASSERT_EQ(bytes.size(), 9u);  // "a\0b\1c\x1fd\x7fe"
  bytes += "\n\n";
  const std::string path = TempPath("nul.txt");
  ASSERT_TRUE(WriteStringToFile(path, bytes).ok());
  CliRun r = Gemlet({"tokenize", "-m", Model(), "--ids", "-f", path});
  EXPECT_EQ(r.code, 0);
  const std::vector<int32_t> want = {236746, 238,    236763, 249732, 236755,
                                     253998, 236753, 251541, 236744, 108};
  EXPECT_EQ(r.out, IdsLine(want));
  EXPECT_EQ(r.out, IdsLine(*Lib().Encode(bytes)));
  // And back: detokenize prints exactly the bytes (no newline added).
  r = Gemlet({"detokenize", "-m", Model(), IdsLine(want).substr(0, IdsLine(want).size() - 1)});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, bytes);
  std::remove(path.c_str());
}

TEST(TokenizeCli, ChatCaseFromVectors) {
  for (const json& c : Vectors()["chat"]) {
    if (!c.contains("messages")) continue;
    const std::string path = TempPath("chat.json");
    ASSERT_TRUE(WriteStringToFile(path, c.dump()).ok());
    CliRun r = Gemlet({"tokenize", "-m", Model(), "--chat", path});
    EXPECT_EQ(r.code, 0) << c["name"];
    const json got = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(got.is_discarded()) << r.out;
    EXPECT_EQ(got["prompt"], c["prompt"]) << c["name"];
    EXPECT_EQ(got["ids"], c["ids"]) << c["name"];
    std::remove(path.c_str());
  }
}

TEST(TokenizeCli, Detokenize) {
  const json& ref = Vectors()["reference_decode"];
  std::string ids = IdsLine(ref["ids"].get<std::vector<int32_t>>());
  ids.pop_back();  // the newline
  CliRun r = Gemlet({"detokenize", "-m", Model(), ids});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, ref["text"].get<std::string>());
  r = Gemlet({"detokenize", "-m", Model(), "--skip-special", "--json", ids});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(json::parse(r.out)["text"], ref["text_skip_special"]);
  r = Gemlet({"detokenize", "-m", Model(), "433", "407,", "366"});  // space-separated too
  EXPECT_EQ(r.out, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

// The vocabulary stored in a .gemlet, and a GGUF's tokenizer.ggml.* (tiny oracle vocabulary).
TEST(TokenizeCli, GemletAndGgufSources) {
  const std::string& path = Model();
  const std::string text = "<|turn>user\nGrüße 世界 🙂<turn|>";
  CliRun r = Gemlet({"tokenize", "-m", path, "--ids", text});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, IdsLine(*Lib().Encode(text)));
  r = Gemlet({"tokenize", "--tokenizer", path, "--ids", text});  // .gemlet found by its magic
  EXPECT_EQ(r.out, IdsLine(*Lib().Encode(text)));

  const std::string tiny = kShared + "/oracle/tiny-e2b";
  auto info = LoadHfTokenizer(tiny);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto small = Tokenizer::Create(info->vocab, info->special);
  ASSERT_TRUE(small.ok());
  const std::string t2 = "<bos><|turn>user\n  in a\t\tt<turn|>";
  r = Gemlet({"tokenize", "--tokenizer", tiny + "/model-q4_0.gguf", "--ids", t2});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, IdsLine(*small->Encode(t2)));
  r = Gemlet({"detokenize", "--tokenizer", tiny + "/model-q4_0.gguf", "--skip-special",
              IdsLine(*small->Encode(t2))});
  // This vocabulary has no "▁" piece: spaces went through byte tokens, and a byte run is
  // decoded after the "▁" -> " " step (Hugging Face's decoder order), so "▁" stays.
  EXPECT_EQ(r.out, "user\n\u2581\u2581in\u2581a\t\tt");
}

// Without -m or --tokenizer, tokenize and detokenize use the demo model, as run, chat and
// serve do (they were usage errors).
TEST(TokenizeCli, WithoutAModelTheDemoModelIsUsed) {
  const std::string cache = ::testing::TempDir() + "/tokenize_demo." + std::to_string(::getpid());
  const std::string env = "XDG_CACHE_HOME='" + cache + "' HOME='" + cache + "' ";
  auto run = [&](const std::string& args, std::string* out) {
    FILE* p = popen((env + "'" + GEMLET_BINARY + "' " + args + " 2>/dev/null").c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  std::string ids, text;
  ASSERT_EQ(run("tokenize --ids 'Hello <|turn>'", &ids), 0) << ids;
  EXPECT_NE(ids.find("105"), std::string::npos) << ids;  // <|turn> of the synthetic vocabulary
  while (!ids.empty() && ids.back() == '\n') ids.pop_back();
  ASSERT_EQ(run("detokenize " + ids, &text), 0);
  EXPECT_EQ(text, "Hello <|turn>");
}

TEST(TokenizeCli, ExitCodes) {
  EXPECT_EQ(Gemlet({"tokenize", "-m", "x.gemlet", "--tokenizer", kTok, "hi"}).code, 2);
  EXPECT_EQ(Gemlet({"tokenize", "-m", Model()}).code, 2);  // no input
  EXPECT_EQ(Gemlet({"tokenize", "-m", Model(), "a", "b"}).code, 2);
  EXPECT_EQ(Gemlet({"tokenize", "-m", Model(), "--bogus", "a"}).code, 2);
  EXPECT_EQ(Gemlet({"tokenize", "--tokenizer", "/nonexistent/tokenizer.json", "a"}).code, 1);
  EXPECT_EQ(Gemlet({"tokenize", "-m", Model(), "-f", "/nonexistent/file"}).code, 1);
  EXPECT_EQ(Gemlet({"tokenize", "-m", "/nonexistent/model.gemlet", "a"}).code, 1);
  EXPECT_EQ(Gemlet({"detokenize", "-m", Model(), "12,abc"}).code, 2);
  EXPECT_EQ(Gemlet({"detokenize", "-m", Model(), "262144"}).code, 2);
  EXPECT_EQ(Gemlet({"detokenize", "-m", Model()}).code, 2);
  const CliRun help = Gemlet({"tokenize", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("examples:"), std::string::npos);
}

}  // namespace tokenize_cli_test
}  // namespace gemlet
