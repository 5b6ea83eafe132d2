// Image prompts through the server on ../shared/oracle/tiny-e2b-vision: an OpenAI chat request's
// image parts render to the oracle's token layout (Gemma4Processor's boi, n × image, eoi) with
// the images' soft tokens as media rows; the scheduler feeds those rows in prefill chunks that
// cut through the images and share steps with other prompts, and each greedy stream equals a
// Session fed the same prompt alone (and the oracle's greedy continuation up to its first
// near-tie); the prefix cache resumes a prompt about the same image past that image, and never
// matches a different image in the same place; the encoder runs once per image content.
#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "runtime/generate.h"
#include "runtime/image_encoder.h"
#include "runtime/media.h"
#include "tests/oracle_test_util.h"
#include "tests/server_test_util.h"
#include "tools/server/model_backend.h"
#include "tools/server/scheduler.h"

namespace gemlet::oracle {
namespace server_vision_test {

const std::string& Dir() {
  static const std::string d = OracleDir() + "tiny-e2b-vision/";
  return d;
}

const nlohmann::json& Cases() { return oracle::OracleCases("tiny-e2b-vision"); }

std::vector<uint8_t> FileBytes(const std::string& name) {
  std::ifstream f(Dir() + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

server::ImageInput Image(const std::string& file, const std::string& part, size_t offset) {
  server::ImageInput im;
  im.bytes = FileBytes(file);
  im.part = part;
  im.offset = offset;
  return im;
}

// The oracle's prompts as chat requests: 0 "What is it?" after image A, 2 "Compare" B "and" C.
server::ChatRequest Request(int prompt) {
  server::ChatRequest req;
  server::ChatMessage m;
  if (prompt == 0) {
    m.content = "What is it?";
    m.images.push_back(Image("image-A.png", "messages[0].content[0]", 0));
  } else {
    m.content = "Compareand";
    m.images.push_back(Image("image-B.png", "messages[0].content[1]", 7));
    m.images.push_back(Image("image-C.png", "messages[0].content[3]", 10));
  }
  req.messages.push_back(std::move(m));
  return req;
}

struct Fixture {
  std::unique_ptr<runtime::Engine> engine;
  std::unique_ptr<server::GemmaChatModel> model;
};

Fixture Open(int64_t image_tokens) {
  Fixture f;
  f.engine = OpenEngine(Converted("tiny-e2b-vision", "model.safetensors"), 2);
  if (!f.engine) return f;
  runtime::ImageEncoderOptions io;
  io.tokens = image_tokens;
  auto model = server::GemmaChatModel::Create(*f.engine, "tiny-vision", 512, io);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (model.ok()) f.model = std::move(model).value();
  return f;
}

TEST(ServerVision, ImagePartsRenderAsTheOracleLayout) {
  GEMLET_NEED_IMAGE_LIBS();
  Fixture f = Open(70);
  ASSERT_TRUE(f.model);
  for (int prompt : {0, 2}) {
    const nlohmann::json& p = Cases()["prompts"][prompt];
    auto r = f.model->RenderChat(Request(prompt));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens, p["tokens"].get<std::vector<int32_t>>()) << "prompt " << prompt;
    ASSERT_EQ(r->media.size(), p["image_spans"].size());
    for (size_t k = 0; k < r->media.size(); ++k) {
      EXPECT_EQ(r->media[k].start, p["image_spans"][k][0].get<int64_t>());
      EXPECT_EQ(r->media[k].rows, p["image_spans"][k][1].get<int64_t>());
      EXPECT_EQ(r->media[k].offset, 0);
    }
  }
  // Images A, B, C once each: rendering again encodes nothing.
  EXPECT_EQ(f.model->image_encoder()->encodes(), 3);
  ASSERT_TRUE(f.model->RenderChat(Request(0)).ok());
  EXPECT_EQ(f.model->image_encoder()->encodes(), 3);

  // Bad images are 400s naming their part; a text that places the wrong count names the content.
  server::ChatRequest bad = Request(0);
  bad.messages[0].images[0].bytes.resize(200);  // a truncated PNG
  auto e = f.model->RenderChat(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().status, 400);
  EXPECT_EQ(e.error().param, "messages[0].content[0]");
  EXPECT_NE(e.error().message.find("messages[0].content[0]"), std::string::npos) << e.error().message;
  bad = Request(0);
  bad.messages[0].content = "{image} and {image}";
  e = f.model->RenderChat(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().param, "messages[0].content");
  // {image} places the image instead of its part's offset: "What is it?" after the image again.
  server::ChatRequest placed = Request(0);
  placed.messages[0].content = "{image}What is it?";
  placed.messages[0].images[0].offset = 5;
  auto r = f.model->RenderChat(placed);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, Cases()["prompts"][0]["tokens"].get<std::vector<int32_t>>());
}

// The oracle's greedy continuation of prompt p agrees with `got` up to its first near-tie
// (soft tokens from the image files move the logits by up to ~0.05: the README's tier).
void ExpectOracleGreedy(int prompt, const std::vector<int32_t>& got) {
  const nlohmann::json& g = Cases()["prompts"][prompt]["greedy"];
  const auto want = g["tokens"].get<std::vector<int32_t>>();
  const auto gaps = g["gaps"].get<std::vector<double>>();
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (gaps[i] < 0.1) break;
    ASSERT_EQ(got[i], want[i]) << "prompt " << prompt << " token " << i;
  }
}

TEST(ServerVision, ImagePromptsInSharedStepsEqualSessionsAlone) {
  GEMLET_NEED_IMAGE_LIBS();
  Fixture f = Open(70);
  ASSERT_TRUE(f.model);
  const int64_t n = 16;
  std::vector<server::RenderedPrompt> prompts;
  for (int p : {0, 2}) {
    auto r = f.model->RenderChat(Request(p));
    ASSERT_TRUE(r.ok()) << r.error().message;
    prompts.push_back(std::move(r).value());
  }
  // A text-only prompt beside them.
  prompts.push_back(server::RenderedPrompt{});
  prompts.back().tokens = LoadOracle("tiny-e2b").cases[0].tokens;
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : prompts) {
    auto r = GreedyAlone(*f.engine, runtime::MediaPrompt{p.tokens, p.media}, n, 512);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    want.push_back(r->ids);
  }
  ExpectOracleGreedy(0, want[0]);
  ExpectOracleGreedy(2, want[1]);

  server::Metrics metrics;
  server::SchedulerOptions so;
  so.slots = 3;
  so.prefill_chunk = 24;  // chunks that cut through the images, beside the others' decoding
  server::Scheduler sched(f.model->backend(), metrics, so);
  auto submit = [&](const server::RenderedPrompt& p, std::shared_ptr<Collect> sink) {
    SubmitGreedy(sched, *f.model, p, n, std::move(sink));
  };

  std::vector<std::shared_ptr<Collect>> sinks;
  for (const auto& p : prompts) {
    sinks.push_back(std::make_shared<Collect>());
    submit(p, sinks.back());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const server::JobOutcome o = sinks[i]->Wait();
    EXPECT_EQ(o.reason, server::FinishReason::kLength) << o.status.ToString();
    EXPECT_EQ(sinks[i]->tokens(), want[i]) << "prompt " << i;
  }

  // The same image prompt again resumes from the finished sequence, past its image.
  auto again = std::make_shared<Collect>();
  submit(prompts[0], again);
  server::JobOutcome o = again->Wait();
  EXPECT_GT(o.cached_tokens, prompts[0].media[0].start + prompts[0].media[0].rows);
  EXPECT_EQ(again->tokens(), want[0]);

  // The same tokens with another image in that place (its rows changed, its hash too) must
  // not reuse the first image's rows: the cache matches up to the image at most.
  auto other = std::make_shared<runtime::MediaEmbedding>(*prompts[0].media[0].media);
  other->data[0] += 1.0f;
  other->hash ^= 1;
  server::RenderedPrompt swapped = prompts[0];
  swapped.media[0].media = other;
  auto diff = std::make_shared<Collect>();
  submit(swapped, diff);
  o = diff->Wait();
  EXPECT_LE(o.cached_tokens, swapped.media[0].start);
  auto alone = GreedyAlone(*f.engine, runtime::MediaPrompt{swapped.tokens, swapped.media}, n, 512);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(diff->tokens(), alone->ids);
  sched.Shutdown();
}

}  // namespace server_vision_test
}  // namespace gemlet::oracle
