#include "tools/hub/pull.h"

#include <gtest/gtest.h>

namespace gemlet::hub {
namespace pull_test {

TEST(SelectFiles, TakesTopLevelWeightsConfigAndTokenizer) {
  RepoListing l;
  for (const char* p : {"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                        "model.safetensors.index.json", "tokenizer.json", "chat_template.jinja", "README.md",
                        ".gitattributes", "onnx/model.safetensors", "model.gguf", "tokenizer.model"}) {
    l.files.push_back(HubFile{p, 1, ""});
  }
  auto files = SelectFiles(l, "o/n");
  ASSERT_TRUE(files.ok());
  std::vector<std::string> names;
  for (const auto& f : *files) names.push_back(f.path);
  EXPECT_EQ(names, (std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                             "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                             "tokenizer.json", "chat_template.jinja"}));
}

TEST(SelectFiles, ARepositoryWithoutSafetensorsIsRefused) {
  RepoListing l;
  l.files.push_back(HubFile{"model-q4_0.gguf", 1, ""});
  l.files.push_back(HubFile{"config.json", 1, ""});
  auto files = SelectFiles(l, "o/gguf");
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("o/gguf has no *.safetensors"), std::string::npos);
}

}  // namespace pull_test
}  // namespace gemlet::hub
