#include "format/gemma4_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "format/tokenizer_json.h"

namespace gemlet {
namespace gemma4_tokens_test {

const std::string kShared = GEMLET_SHARED_DIR;

// Every named control token is at its named id in the real Gemma 4 vocabulary, and is a
// control token there (so the tokenizer matches it in text and the model generates it whole).
TEST(Gemma4Tokens, NamesMatchTheRealVocabulary) {
  auto r = LoadHfTokenizer(kShared + "/tokenizer/gemma4");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Vocab& v = r->vocab;
  const std::pair<int32_t, std::string_view> named[] = {
      {gemma4::kPadId, gemma4::kPad},
      {gemma4::kEosId, gemma4::kEos},
      {gemma4::kBosId, gemma4::kBos},
      {gemma4::kUnkId, gemma4::kUnk},
      {gemma4::kToolOpenId, gemma4::kToolOpen},
      {gemma4::kToolCloseId, gemma4::kToolClose},
      {gemma4::kToolCallOpenId, gemma4::kToolCallOpen},
      {gemma4::kToolCallCloseId, gemma4::kToolCallClose},
      {gemma4::kToolResponseOpenId, gemma4::kToolResponseOpen},
      {gemma4::kToolResponseCloseId, gemma4::kToolResponseClose},
      {gemma4::kQuoteId, gemma4::kQuote},
      {gemma4::kThinkId, gemma4::kThink},
      {gemma4::kChannelOpenId, gemma4::kChannelOpen},
      {gemma4::kChannelCloseId, gemma4::kChannelClose},
      {gemma4::kTurnOpenId, gemma4::kTurnOpen},
      {gemma4::kTurnCloseId, gemma4::kTurnClose},
      {gemma4::kImageOpenId, gemma4::kImageOpen},
      {gemma4::kAudioOpenId, gemma4::kAudioOpen},
      {gemma4::kImageId, gemma4::kImage},
      {gemma4::kAudioId, gemma4::kAudio},
      {gemma4::kImageCloseId, gemma4::kImageClose},
      {gemma4::kAudioCloseId, gemma4::kAudioClose},
      {gemma4::kVideoId, gemma4::kVideo},
  };
  for (const auto& [id, piece] : named) {
    ASSERT_LT(static_cast<size_t>(id), v.size()) << piece;
    EXPECT_EQ(v.pieces[id], piece) << "id " << id;
    EXPECT_EQ(v.types[id], TokenType::kControl) << piece;
  }
  // The special ids the loader reports are the named ones.
  EXPECT_EQ(r->special["bos_id"], gemma4::kBosId);
  EXPECT_EQ(r->special["eos_id"], gemma4::kEosId);
  EXPECT_EQ(r->special["pad_id"], gemma4::kPadId);
}

}  // namespace gemma4_tokens_test
}  // namespace gemlet
