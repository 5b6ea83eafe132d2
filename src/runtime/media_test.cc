#include "runtime/media.h"

#include <gtest/gtest.h>

namespace gemlet::runtime {
namespace media_test {

MediaRef Image(int64_t rows, int64_t dim, float base, uint64_t hash) {
  auto m = std::make_shared<MediaEmbedding>();
  m->rows = rows;
  m->dim = dim;
  m->hash = hash;
  for (int64_t i = 0; i < rows * dim; ++i) m->data.push_back(base + static_cast<float>(i));
  return m;
}

const MediaTokens kImageIds{53, 55, 57};

TEST(PlaceMedia, AliasPlaceholderOrFirst) {
  EXPECT_EQ(*PlaceMedia("what is {image}?", 1, "<|image|>", "{image}"), "what is <|image|>?");
  EXPECT_EQ(*PlaceMedia("a <|image|> b {image}", 2, "<|image|>", "{image}"), "a <|image|> b <|image|>");
  EXPECT_EQ(*PlaceMedia("describe", 2, "<|image|>", "{image}"), "<|image|><|image|>describe");
  auto bad = PlaceMedia("{image} and {image}", 1, "<|image|>", "{image}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("places 2"), std::string::npos) << bad.status().message();
}

TEST(ExpandMedia, PlaceholderBecomesOpenRowsClose) {
  const MediaRef a = Image(3, 2, 0, 1), b = Image(2, 2, 100, 2);
  const std::vector<int32_t> toks = {2, 7, 55, 8, 55, 9};
  auto p = ExpandMedia(toks, std::vector<MediaRef>{a, b}, std::vector<MediaTokens>{kImageIds});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->tokens, (std::vector<int32_t>{2, 7, 53, 55, 55, 55, 57, 8, 53, 55, 55, 57, 9}));
  ASSERT_EQ(p->media.size(), 2u);
  EXPECT_EQ(p->media[0].start, 3);
  EXPECT_EQ(p->media[0].rows, 3);
  EXPECT_EQ(p->media[0].media, a);
  EXPECT_EQ(p->media[1].start, 9);
  EXPECT_EQ(p->media[1].rows, 2);

  std::vector<int64_t> rows;
  std::vector<float> emb;
  ASSERT_TRUE(GatherMediaRows(p->media, p->size(), 2, &rows, &emb).ok());
  EXPECT_EQ(rows, (std::vector<int64_t>{3, 4, 5, 9, 10}));
  EXPECT_EQ(emb, (std::vector<float>{0, 1, 2, 3, 4, 5, 100, 101, 102, 103}));
  EXPECT_FALSE(GatherMediaRows(p->media, p->size(), 3, &rows, &emb).ok());  // wrong width
  EXPECT_FALSE(GatherMediaRows(p->media, 10, 2, &rows, &emb).ok());         // past the tokens

  // A slice through the first image keeps its part of the rows.
  const MediaPrompt s = p->Slice(4, 10);
  EXPECT_EQ(s.tokens, (std::vector<int32_t>{55, 55, 57, 8, 53, 55}));
  ASSERT_EQ(s.media.size(), 2u);
  EXPECT_EQ(s.media[0].start, 0);
  EXPECT_EQ(s.media[0].offset, 1);
  EXPECT_EQ(s.media[0].rows, 2);
  EXPECT_EQ(s.media[1].start, 5);
  EXPECT_EQ(s.media[1].rows, 1);
  ASSERT_TRUE(GatherMediaRows(s.media, s.size(), 2, &rows, &emb).ok());
  EXPECT_EQ(emb, (std::vector<float>{2, 3, 4, 5, 100, 101}));
}

TEST(ExpandMedia, CountsMustAgree) {
  const MediaRef a = Image(1, 2, 0, 1);
  const std::vector<MediaTokens> kinds{kImageIds};
  EXPECT_FALSE(ExpandMedia(std::vector<int32_t>{2, 55, 55}, std::vector<MediaRef>{a}, kinds).ok());
  EXPECT_FALSE(ExpandMedia(std::vector<int32_t>{2, 9}, std::vector<MediaRef>{a}, kinds).ok());
  EXPECT_FALSE(ExpandMedia(std::vector<int32_t>{2, 55}, std::vector<MediaRef>{a}, std::vector<MediaTokens>{{}}).ok());
  auto audio = std::make_shared<MediaEmbedding>(*a);
  audio->kind = MediaKind::kAudio;
  auto r = ExpandMedia(std::vector<int32_t>{2, 55}, std::vector<MediaRef>{a, audio}, kinds);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("audio"), std::string::npos);
}

TEST(MediaPrefix, MediaRowsMatchByContent) {
  const MediaRef a = Image(3, 2, 0, 1), a2 = Image(3, 2, 0, 1), b = Image(3, 2, 50, 2);
  const MediaRef collide = Image(3, 2, 7, 1);  // a's hash, other rows
  const std::vector<MediaTokens> kinds{kImageIds};
  const std::vector<int32_t> toks = {2, 7, 55, 8};
  auto pa = *ExpandMedia(toks, std::vector<MediaRef>{a}, kinds);
  auto pa2 = *ExpandMedia(toks, std::vector<MediaRef>{a2}, kinds);
  auto pb = *ExpandMedia(toks, std::vector<MediaRef>{b}, kinds);
  auto pc = *ExpandMedia(toks, std::vector<MediaRef>{collide}, kinds);
  EXPECT_EQ(CommonPrefixLength(pa.tokens, pa.media, pa2.tokens, pa2.media), pa.size());
  EXPECT_EQ(CommonPrefixLength(pa.tokens, pa.media, pb.tokens, pb.media), 3);  // stops at the first row
  EXPECT_EQ(CommonPrefixLength(pa.tokens, pa.media, pc.tokens, pc.media), 3);
  EXPECT_EQ(CommonPrefixLength(pa.tokens, pa.media, pa.tokens, {}), 3);  // rows against ids
  // The same media split into two spans (a chunked prefill) still matches.
  MediaPrompt split = pa.Slice(0, 4);
  MediaPrompt rest = pa.Slice(4, pa.size());
  for (MediaSpan s : rest.media) {
    s.start += 4;
    split.media.push_back(s);
  }
  split.tokens = pa.tokens;
  EXPECT_EQ(CommonPrefixLength(split.tokens, split.media, pa2.tokens, pa2.media), pa.size());
}

}  // namespace media_test
}  // namespace gemlet::runtime
