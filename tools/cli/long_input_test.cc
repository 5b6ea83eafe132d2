// `gemlet logits` and `gemlet run` with long inputs: --tokens-file (the ids as an int32 .npy),
// `logits --rows` (only those rows' logits, in the order asked), and `--kv-type` per layer kind
// (full=T,sliding=T). Each is checked against the plain --tokens form on the tiny model.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "tools/cli/cli_test_util.h"
#include "format/npy.h"

namespace gemlet::cli {
namespace long_input_test {

namespace fs = std::filesystem;

const std::string& Dir() {
  static const std::string d = testing_util::MakeScratchDir("long_input");
  return d;
}

// `gemlet ARGS`, stdout and stderr to files; the exit code.
int Gemlet(const std::string& args, std::string* out, std::string* err = nullptr) {
  return testing_util::RunGemlet(Dir(), args, out, err);
}

const std::string& TinyModel() {
  static const std::string path = testing_util::MakeTinyModel(Dir(), 3);
  return path;
}

// An .npy of `ids` with dtype `descr` ('<i4' or '<i8'), written the way NumPy writes it.
std::string WriteIds(const std::string& name, const std::vector<int64_t>& ids, const std::string& descr = "<i4") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(ids.size()) + ",), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  for (int64_t id : ids) {
    if (descr == "<i4") {
      const int32_t v = static_cast<int32_t>(id);
      bytes.append(reinterpret_cast<const char*>(&v), 4);
    } else {
      bytes.append(reinterpret_cast<const char*>(&id), 8);
    }
  }
  const std::string path = Dir() + "/" + name;
  EXPECT_TRUE(WriteStringToFile(path, bytes).ok());
  return path;
}

const std::vector<int64_t> kIds = {2, 105, 437, 107, 300, 301, 302, 303, 107, 105, 494, 107, 77, 88, 99,
                                   5,  6,   7,   8,   9,   10,  11,  12,  13,  14,  15,  16,  17, 18, 19};

std::string Join(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

NpyArray Read(const std::string& path) {
  auto a = ReadNpy(path);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::move(*a) : NpyArray{};
}

TEST(LongInput, LogitsTokensFileAndRows) {
  const std::string model = TinyModel(), all = Dir() + "/all.npy", file = Dir() + "/file.npy",
                    rows = Dir() + "/rows.npy";
  std::string out, err;
  const std::string common = "logits -m " + model + " --exact --threads 1 --mode chunk:8 ";
  ASSERT_EQ(Gemlet(common + "--tokens " + Join(kIds) + " -o " + all, &out, &err), 0) << err;
  const std::string i4 = WriteIds("ids4.npy", kIds), i8 = WriteIds("ids8.npy", kIds, "<i8");
  for (const std::string& ids : {i4, i8}) {
    ASSERT_EQ(Gemlet(common + "--tokens-file " + ids + " -o " + file, &out, &err), 0) << err;
    const NpyArray a = Read(all), b = Read(file);
    ASSERT_EQ(b.shape, a.shape);
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size() * 4), 0) << "--tokens-file " << ids;
  }
  // --rows: those rows, in the order given (repeats allowed), bit-identical to the full run.
  const std::vector<int64_t> want = {29, 0, 17, 3, 17};
  ASSERT_EQ(Gemlet(common + "--tokens-file " + i4 + " --rows " + Join(want) + " -o " + rows, &out, &err), 0) << err;
  const NpyArray a = Read(all), r = Read(rows);
  const int64_t V = a.shape.at(1);
  ASSERT_EQ(r.shape, (std::vector<int64_t>{static_cast<int64_t>(want.size()), V}));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::memcmp(r.data.data() + i * V, a.data.data() + want[i] * V, V * 4), 0) << "row " << want[i];
  }
  EXPECT_NE(std::memcmp(r.data.data(), r.data.data() + V, V * 4), 0) << "distinct rows differ";
  // Per-kind KV types: full=f32,sliding=f32 is the f32 cache exactly; an f16 sliding cache
  // changes the logits (slightly).
  ASSERT_EQ(Gemlet(common + "--tokens-file " + i4 + " --kv-type full=f32,sliding=f32 -o " + file, &out, &err), 0)
      << err;
  EXPECT_EQ(std::memcmp(Read(file).data.data(), a.data.data(), a.data.size() * 4), 0);
  ASSERT_EQ(Gemlet(common + "--tokens-file " + i4 + " --kv-type sliding=f16 -o " + file, &out, &err), 0) << err;
  const NpyArray h = Read(file);
  double max_abs = 0;
  for (size_t i = 0; i < a.data.size(); ++i) max_abs = std::max(max_abs, std::abs(double(h.data[i]) - a.data[i]));
  EXPECT_GT(max_abs, 0.0);
  EXPECT_LT(max_abs, 0.1);
}

TEST(LongInput, RunTokensFileMatchesTokens) {
  const std::string model = TinyModel();
  std::string a, b, err;
  const std::string common = "run -m " + model + " -n 12 --temp 0 --ignore-eos --json --threads 1 ";
  ASSERT_EQ(Gemlet(common + "--tokens " + Join(kIds), &a, &err), 0) << err;
  ASSERT_EQ(Gemlet(common + "--tokens-file " + WriteIds("run.npy", kIds), &b, &err), 0) << err;
  const auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
  EXPECT_EQ(ja["ids"], jb["ids"]);
  EXPECT_EQ(jb["prompt_tokens"], static_cast<int64_t>(kIds.size()));
  EXPECT_EQ(jb["ids"].size(), 12u);
  // Per-kind KV types through run: q8 for both kinds spelled either way gives the same ids.
  ASSERT_EQ(Gemlet(common + "--kv-type q8 --tokens " + Join(kIds), &a, &err), 0) << err;
  ASSERT_EQ(Gemlet(common + "--kv-type sliding=q8,full=q8 --tokens " + Join(kIds), &b, &err), 0) << err;
  EXPECT_EQ(nlohmann::json::parse(a)["ids"], nlohmann::json::parse(b)["ids"]);
}

TEST(LongInput, BadInputIsAUsageErrorOrAFailure) {
  const std::string model = TinyModel(), ids = WriteIds("bad.npy", {2, 3, 4});
  std::string out, err;
  const std::string logits = "logits -m " + model + " -o " + Dir() + "/x.npy ";
  EXPECT_EQ(Gemlet(logits + "--tokens-file " + ids + " --rows 3", &out, &err), 2) << "row past the end";
  EXPECT_NE(err.find("--rows"), std::string::npos) << err;
  EXPECT_EQ(Gemlet(logits + "--tokens-file " + ids + " --rows 0 --last", &out, &err), 2);
  EXPECT_EQ(Gemlet(logits + "--tokens-file " + ids + " --tokens 2,3", &out, &err), 2);
  EXPECT_EQ(Gemlet(logits + "--tokens-file " + WriteIds("oov.npy", {2, 100000}), &out, &err), 2);
  EXPECT_NE(err.find("vocabulary"), std::string::npos) << err;
  EXPECT_EQ(Gemlet(logits + "--tokens-file " + Dir() + "/missing.npy", &out, &err), 1);
  const std::string f4 = Dir() + "/f4.npy";
  const float one = 1.0f;
  ASSERT_TRUE(WriteNpyF32(f4, &one, {1}).ok());
  EXPECT_EQ(Gemlet(logits + "--tokens-file " + f4, &out, &err), 1) << "float ids";
  EXPECT_NE(err.find("int32"), std::string::npos) << err;
  for (const char* kv : {"full=q9", "middle=f16", "full=f16,full=q8", "full=", "f16,sliding=f32"}) {
    EXPECT_EQ(Gemlet(logits + "--tokens-file " + ids + " --kv-type " + kv, &out, &err), 2) << kv;
    EXPECT_NE(err.find("full=T,sliding=T"), std::string::npos) << err;
  }
  EXPECT_EQ(Gemlet("run -m " + model + " --tokens-file " + ids + " --tokens 2", &out, &err), 2);
  EXPECT_EQ(Gemlet("run -m " + model + " --tokens-file " + ids + " -n 8 --ctx 10", &out, &err), 2);
}

}  // namespace long_input_test
}  // namespace gemlet::cli
