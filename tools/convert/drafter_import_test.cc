#include "tools/convert/drafter_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "format/gemlet_file.h"
#include "format/safetensors_writer.h"
#include "model/gemma4_drafter.h"

namespace gemlet::convert {
namespace drafter_import_test {

namespace fs = std::filesystem;

const std::string kOracle = std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b-assistant";

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/drafter_import." + std::to_string(::getpid()) + "." + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A copy of the oracle's drafter folder whose safetensors file is rewritten: `edit` may change
// each tensor's name and bytes (return false to drop it); `extra` tensors are appended.
std::string EditedCopy(const std::string& name,
                       const std::function<bool(SafetensorsTensorInfo&, std::vector<uint8_t>&)>& edit,
                       const std::vector<std::pair<SafetensorsTensorInfo, std::vector<uint8_t>>>& extra = {}) {
  const std::string dir = TempDir(name);
  fs::copy_file(kOracle + "/config.json", dir + "/config.json");
  auto src = SafetensorsFile::Open(kOracle + "/model.safetensors");
  EXPECT_TRUE(src.ok());
  std::vector<SafetensorsTensorInfo> infos;
  std::vector<std::vector<uint8_t>> data;
  for (const auto& t : (*src)->tensors()) {
    SafetensorsTensorInfo info{t.name, t.dtype, t.shape};
    std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
    if (!edit(info, bytes)) continue;
    infos.push_back(info);
    data.push_back(std::move(bytes));
  }
  for (const auto& [info, bytes] : extra) {
    infos.push_back(info);
    data.push_back(bytes);
  }
  auto w = SafetensorsWriter::Create(dir + "/model.safetensors", infos);
  EXPECT_TRUE(w.ok());
  for (const auto& b : data) EXPECT_TRUE((*w)->Append(b.data(), b.size()).ok());
  EXPECT_TRUE((*w)->Finish().ok());
  return dir;
}

TEST(DrafterImport, OracleFolderLoadsAndConverts) {
  EXPECT_TRUE(IsHfDrafterFolder(kOracle));
  EXPECT_FALSE(IsHfDrafterFolder(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b"));
  auto ck = LoadHfDrafter(kOracle);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  EXPECT_EQ(ck->tensors.size(), 49u);
  ASSERT_EQ(ck->token_ordering.size(), 512u);

  ConvertOptions o;
  o.src = kOracle;
  o.out = TempDir("convert") + "/d.gemlet";
  o.plan = "default";
  o.progress = false;
  o.threads = 1;
  auto rep = Convert(o);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->tensors.size(), 50u);
  auto f = GemletFile::Open(o.out);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->metadata()["kind"], "gemma4-drafter");
  EXPECT_EQ((*f)->Find("drafter.blk.0.attn_q")->type, TensorType::kQ4);     // the plan's matrices
  EXPECT_EQ((*f)->Find("drafter.pre_proj")->type, TensorType::kQ4);
  EXPECT_EQ((*f)->Find("drafter.centroids")->type, TensorType::kF32);       // kept exact
  EXPECT_EQ((*f)->Find("drafter.output_norm")->type, TensorType::kF32);
  auto d = model::Gemma4Drafter::Bind(**f);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE((*d)->has_sparse_head());
  for (size_t i = 0; i < 512; ++i) ASSERT_EQ((*d)->token_ordering()[i], ck->token_ordering[i]);
}

TEST(DrafterImport, RefusesBrokenCheckpoints) {
  auto same = [](SafetensorsTensorInfo&, std::vector<uint8_t>&) { return true; };
  // An unexpected tensor.
  std::vector<uint8_t> two(4, 0);
  auto st = LoadHfDrafter(EditedCopy("extra", same, {{{"model.layers.0.self_attn.k_proj.weight", "BF16", {2}}, two}}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("unexpected tensor model.layers.0.self_attn.k_proj.weight"), std::string::npos)
      << st.status().ToString();
  // A missing one.
  st = LoadHfDrafter(EditedCopy("missing", [](SafetensorsTensorInfo& i, std::vector<uint8_t>&) {
    return i.name != "post_projection.weight";
  }));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("post_projection.weight is missing"), std::string::npos)
      << st.status().ToString();
  // A token ordering that repeats an id.
  st = LoadHfDrafter(EditedCopy("ordering", [](SafetensorsTensorInfo& i, std::vector<uint8_t>& b) {
    if (i.name == "masked_embedding.token_ordering") std::copy(b.begin(), b.begin() + 8, b.begin() + 8);
    return true;
  }));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("not a permutation"), std::string::npos) << st.status().ToString();
}

}  // namespace drafter_import_test
}  // namespace gemlet::convert
