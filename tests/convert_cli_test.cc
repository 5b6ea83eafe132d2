// `gemlet convert` and `gemlet info` run as a user runs them: exit codes, one-line errors on
// stderr, the summary, the progress lines, and what info prints about the file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/mapped_file.h"

namespace gemlet {
namespace convert_cli_test {

namespace fs = std::filesystem;

const std::string kGemlet = std::string(GEMLET_BINARY_DIR) + "/tools/cli/gemlet";
const std::string kOracle = std::string(GEMLET_SHARED_DIR) + "/oracle/";

struct CmdResult {
  int rc = -1;
  std::string out, err;
};

CmdResult Exec(const std::string& args) {
  static int n = 0;
  const std::string err_file =
      ::testing::TempDir() + "/convert_cli_err." + std::to_string(::getpid()) + "." + std::to_string(n++);
  CmdResult r;
  FILE* p = ::popen((kGemlet + " " + args + " 2>" + err_file).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t k;
  while ((k = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, k);
  const int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  auto err = ReadFileToString(err_file);
  r.err = err.ok() ? *err : std::string();
  fs::remove(err_file);
  return r;
}

std::string Dir() {
  const std::string d = ::testing::TempDir() + "/convert_cli." + std::to_string(::getpid());
  fs::create_directories(d);
  return d;
}

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(ConvertCli, ConvertThenInfo) {
  ASSERT_TRUE(fs::exists(kGemlet)) << kGemlet << " is not built";
  const std::string out = Dir() + "/e2b.gemlet";
  CmdResult c = Exec("convert " + kOracle + "tiny-e2b -o " + out + " --plan keep --threads 2");
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("wrote " + out + ": 147 tensors"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("bf16"), std::string::npos) << c.out;
  // stderr is not a terminal here: plain progress lines, the last at 100%.
  EXPECT_NE(c.err.find("convert: 100%"), std::string::npos) << c.err;
  EXPECT_EQ(c.err.find('\r'), std::string::npos);

  CmdResult i = Exec("info " + out);
  ASSERT_EQ(i.rc, 0) << i.err;
  EXPECT_NE(i.out.find("7 layers (2 full, 5 sliding, window 16)"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("tokenizer: 512 pieces, 872 merges"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("source_format  safetensors"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("8e2abf085ac29a28d3967e61cdfdfde96ea28f0b5f1193a91f353efa9cd8ca87"),
            std::string::npos);
  EXPECT_NE(i.out.find("ple_table"), std::string::npos);
  EXPECT_EQ(i.out.find("blk.6.ffn_down "), std::string::npos);  // no table without --tensors
  CmdResult t = Exec("info " + out + " --tensors");
  ASSERT_EQ(t.rc, 0);
  EXPECT_NE(t.out.find("blk.6.ffn_down"), std::string::npos);
  EXPECT_NE(t.out.find("[64, 64]"), std::string::npos);  // blk.6.ffn_down: double-wide

  CmdResult j = Exec("info " + out + " --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  EXPECT_EQ(Lines(j.out), 1);
  const auto js = nlohmann::json::parse(j.out);
  EXPECT_EQ(js["tensors"].size(), 147u);  // 115 text + the stub vision tower's 32
  EXPECT_EQ(js["vocab"]["tokens"], 512);
  EXPECT_EQ(js["totals"]["attn"]["tensors"], 22);
  EXPECT_EQ(js["totals"]["ple_table"]["types"], nlohmann::json::array({"bf16"}));
  EXPECT_EQ(js["metadata"]["quant_plan"]["name"], "keep");
  uint64_t sum = 0;
  for (const auto& tt : js["tensors"]) sum += tt["bytes"].get<uint64_t>();
  uint64_t totals = 0;
  for (const auto& [k, v] : js["totals"].items()) totals += v["bytes"].get<uint64_t>();
  EXPECT_EQ(sum, totals);
}

TEST(ConvertCli, OverridesAndRequantizationSummary) {
  const std::string out = Dir() + "/q.gemlet";
  CmdResult c = Exec("convert " + kOracle + "tiny-e4b/model-q4_0.gguf -o " + out +
                     " --type attn=q8 --type=ffn=bf16 -q");
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.err, "");  // -q: no progress
  EXPECT_NE(c.out.find(
                "dequantized from a quantized source and quantized again (Q4_0 -> bf16: 18, Q4_0 -> q8: 18)"),
            std::string::npos)
      << c.out;
  CmdResult j = Exec("info " + out + " --json");
  ASSERT_EQ(j.rc, 0);
  const auto js = nlohmann::json::parse(j.out);
  EXPECT_EQ(js["metadata"]["quant_plan"]["overrides"],
            nlohmann::json::parse(R"({"attn": "q8", "ffn": "bf16"})"));
  EXPECT_EQ(js["totals"]["ffn"]["types"], nlohmann::json::array({"bf16"}));
  EXPECT_EQ(js["metadata"]["provenance"]["source_format"], "gguf");
}

TEST(ConvertCli, InfoOnGguf) {
  CmdResult i = Exec("info " + kOracle + "tiny-e2b/model-q4_0.gguf --tensors");
  ASSERT_EQ(i.rc, 0) << i.err;
  EXPECT_NE(i.out.find("GGUF v3, 42 metadata keys, 125 tensors"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("gemma4.attention.sliding_window_pattern"), std::string::npos);
  EXPECT_NE(i.out.find("token_embd.weight"), std::string::npos);
}

void ExpectFailure(const std::string& args, int rc, const std::string& needle) {
  CmdResult r = Exec(args);
  EXPECT_EQ(r.rc, rc) << args << "\n" << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("gemlet ", 0), 0u) << r.err;
}

TEST(ConvertCli, ErrorsAndExitCodes) {
  const std::string d = Dir();
  ExpectFailure("convert", 2, "SRC (a checkpoint folder or .gguf file) is required");
  ExpectFailure("convert " + kOracle + "tiny-e2b", 2, "-o OUT.gemlet is required");
  ExpectFailure("convert " + kOracle + "tiny-e2b -o " + d + "/x.gemlet --plan q5", 2,
                "unknown quantization plan 'q5'");
  ExpectFailure("convert " + kOracle + "tiny-e2b -o " + d + "/x.gemlet --type attn", 2,
                "--type expects CLASS=TYPE");
  ExpectFailure("convert " + kOracle + "tiny-e2b -o " + d + "/x.gemlet --type mlp=q8", 2,
                "unknown tensor class 'mlp'");
  ExpectFailure("convert " + kOracle + "tiny-e2b -o " + d + "/x.gemlet --bogus", 2, "unknown flag --bogus");
  ExpectFailure("convert " + kOracle + "tiny-e2b -o " + d + "/x.gemlet --threads -1", 2, "--threads");
  ExpectFailure("convert " + d + "/missing -o " + d + "/x.gemlet", 1, d + "/missing: no such file or folder");
  ExpectFailure("convert " + kOracle + "tiny-e2b/model-q8_0.gguf -o " + d + "/x.gemlet --multimodal " + d +
                    "/mm.gemlet",
                1, "mmproj");
  ExpectFailure("info", 2, "FILE is required");
  ExpectFailure("info " + d + "/missing.gemlet", 1, d + "/missing.gemlet");
  ExpectFailure("info " + kOracle + "tiny-e2b/config.json", 1, "not a valid .gemlet file");
  EXPECT_FALSE(fs::exists(d + "/x.gemlet"));
}

TEST(ConvertCli, Help) {
  for (const char* cmd : {"convert", "info"}) {
    CmdResult r = Exec(std::string(cmd) + " --help");
    EXPECT_EQ(r.rc, 0);
    EXPECT_NE(r.out.find("usage: gemlet " + std::string(cmd)), std::string::npos);
    EXPECT_NE(r.out.find("examples:"), std::string::npos);
  }
}

}  // namespace convert_cli_test
}  // namespace gemlet
