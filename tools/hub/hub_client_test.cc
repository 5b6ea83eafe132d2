#include "tools/hub/hub_client.h"

#include <gtest/gtest.h>

namespace gemlet::hub {
namespace hub_client_test {

TEST(ParseRepoRef, OwnerNameAndRevision) {
  auto r = ParseRepoRef("google/gemma-4-E2B-it");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->repo, "google/gemma-4-E2B-it");
  EXPECT_EQ(r->revision, "main");
  r = ParseRepoRef("google/gemma-4-E2B-it@v1.0_rc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->revision, "v1.0_rc");
}

TEST(ParseRepoRef, RefusesWhatCannotNameAStoreFile) {
  for (const char* bad : {"", "gemma", "/x", "x/", "a/b/c", "../x", "a/..", ".a/b", "a/-b", "a/b@", "a/b@x/y",
                          "a/b@..", "a b/c", "a/b@c@d", "a/b?x", "a/b%2F"}) {
    auto r = ParseRepoRef(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
    }
  }
}

TEST(ParseListing, ReadsCommitSizesAndLfsHashes) {
  const std::string sha(64, 'A');
  auto l = ParseListing(R"({"id": "o/n", "sha": "abc123", "siblings": [
      {"rfilename": "config.json", "size": 812, "blobId": "00"},
      {"rfilename": "model.safetensors", "size": 134,
       "lfs": {"sha256": ")" + sha + R"(", "size": 4567890123, "pointerSize": 134}},
      {"rfilename": "README.md"}]})",
                        "test");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->commit, "abc123");
  ASSERT_EQ(l->files.size(), 3u);
  EXPECT_EQ(l->files[0].size, 812);
  EXPECT_EQ(l->files[0].sha256, "");
  EXPECT_EQ(l->files[1].size, 4567890123);  // the LFS size, not the pointer's
  EXPECT_EQ(l->files[1].sha256, std::string(64, 'a'));  // lowercased
  EXPECT_EQ(l->files[2].size, -1);
}

TEST(ParseListing, RefusesMalformedListingsWithTheirPlace) {
  for (const char* bad : {"", "[]", "{", R"({"sha": "x"})", R"({"siblings": {}})", R"({"siblings": [1]})",
                          R"({"siblings": [{"size": 3}]})",
                          R"({"siblings": [{"rfilename": "a", "lfs": {"sha256": "xyz"}}]})",
                          R"({"siblings": [{"rfilename": "a", "size": -5}]})"}) {
    auto l = ParseListing(bad, "http://hub/api/models/o/n");
    ASSERT_FALSE(l.ok()) << bad;
    EXPECT_NE(l.status().message().find("http://hub/api/models/o/n"), std::string::npos) << l.status().message();
  }
}

TEST(EscapeSegment, KeepsUnreservedCharacters) {
  EXPECT_EQ(EscapeSegment("model-00001_of.safetensors~"), "model-00001_of.safetensors~");
  EXPECT_EQ(EscapeSegment("a b/c?d"), "a%20b%2Fc%3Fd");
}

TEST(HubClient, EndpointFromTheEnvironmentWithoutItsTrailingSlash) {
  ::setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
  EXPECT_EQ(HubClient(HubOptions{}).endpoint(), "http://127.0.0.1:9");
  ::unsetenv("HF_ENDPOINT");
  EXPECT_EQ(HubClient(HubOptions{}).endpoint(), "https://huggingface.co");
  HubOptions o;
  o.endpoint = "http://mirror";
  EXPECT_EQ(HubClient(o).endpoint(), "http://mirror");
}

TEST(HubClient, ANetworkErrorNamesTheUrl) {
  HubOptions o;
  o.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  o.retries = 0;
  o.connect_timeout_s = 5;
  auto l = HubClient(o).List(RepoRef{"o/n", "main"});
  ASSERT_FALSE(l.ok());
#if GEMLET_HAVE_CURL
  EXPECT_NE(l.status().message().find("http://127.0.0.1:1/api/models/o/n/revision/main"), std::string::npos)
      << l.status().message();
#endif
}

}  // namespace hub_client_test
}  // namespace gemlet::hub
