#include "tools/hub/model_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gemlet::hub {
namespace model_store_test {

namespace fs = std::filesystem;

class ModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gemlet-store-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Put(const std::string& rel, const std::string& text = "x") {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  fs::path dir_;
};

TEST(ModelName, MainIsLeftOut) {
  EXPECT_EQ(ModelName({"o/n", "main"}), "o/n");
  EXPECT_EQ(ModelName({"o/n", "v2"}), "o/n@v2");
}

TEST_F(ModelStoreTest, ListsModelsWithTheirSidecars) {
  ModelStore store(dir_.string());
  Put("b/two.gemlet", "12345");
  Put("a/one@v2.gemlet");
  Put("a/one@v2.json", R"({"repo": "a/one", "revision": "v2", "commit": "c1", "pulled_at": 7})");
  Put("a/one.gemlet.tmp.123");      // a conversion in progress
  Put(".downloads/a/x.gemlet");     // not a model
  Put("a/notes.txt");
  auto models = store.List();
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "a/one@v2");
  EXPECT_EQ(models[0].commit, "c1");
  EXPECT_EQ(models[0].revision, "v2");
  EXPECT_EQ(models[0].pulled_at, 7);
  EXPECT_EQ(models[1].name, "b/two");
  EXPECT_EQ(models[1].bytes, 5);
  EXPECT_EQ(models[1].commit, "");  // no sidecar
  EXPECT_EQ(*store.PathOf("b/two"), (dir_ / "b/two.gemlet").string());
  EXPECT_FALSE(store.PathOf("../two").ok());
}

TEST_F(ModelStoreTest, FindsByFullNameOrAnUnambiguousShortName) {
  ModelStore store(dir_.string());
  Put("a/m.gemlet");
  Put("b/m.gemlet");
  Put("b/solo.gemlet");
  EXPECT_EQ(store.Find("a/m")->name, "a/m");
  EXPECT_EQ(store.Find("solo")->name, "b/solo");
  EXPECT_FALSE(store.Find("m").has_value());  // two owners have one
  EXPECT_FALSE(store.Find("c/m").has_value());
}

TEST_F(ModelStoreTest, RemoveDeletesTheModelItsSidecarAndTheEmptyOwnerFolder) {
  ModelStore store(dir_.string());
  Put("a/m.gemlet");
  Put("a/m.json", "{}");
  ASSERT_TRUE(store.WriteInfo({"a/m", "main"}, "c2", "http://hub").ok());
  EXPECT_EQ(store.Find("a/m")->commit, "c2");
  EXPECT_EQ(store.Find("a/m")->endpoint, "http://hub");
  ASSERT_TRUE(store.Remove("a/m").ok());
  EXPECT_FALSE(fs::exists(dir_ / "a"));
  Status st = store.Remove("a/m");
  EXPECT_EQ(st.code(), ErrorCode::kNotFound);
  EXPECT_NE(st.message().find("gemlet list"), std::string::npos);
}

TEST_F(ModelStoreTest, ResolveModelArgPrefersExistingPaths) {
  Put("o/n.gemlet");
  ::setenv("GEMLET_MODELS", dir_.c_str(), 1);
  EXPECT_EQ(ResolveModelArg("o/n"), (dir_ / "o/n.gemlet").string());
  EXPECT_EQ(ResolveModelArg("n"), (dir_ / "o/n.gemlet").string());
  EXPECT_EQ(ResolveModelArg("x/y"), "x/y");  // not stored: left for the command to report
  const std::string real = (dir_ / "o").string();  // an existing path wins
  EXPECT_EQ(ResolveModelArg(real), real);
  EXPECT_EQ(*StoreDir(), dir_.string());
  ::unsetenv("GEMLET_MODELS");
}

}  // namespace model_store_test
}  // namespace gemlet::hub
