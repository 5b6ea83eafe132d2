// Images in prompts through the runtime (runtime/media.h, runtime/image_encoder.h, Session,
// Conversation) on ../shared/oracle/tiny-e2b-vision: the placeholder expansion gives the
// oracle's token layout, a MediaPrompt prefill equals the raw embedding-row prefill, Truncate
// and Fork reproduce the image rows, the encoder runs once per image content, and a
// conversation that prefills itself again feeds its images without encoding them again.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "format/gemma4_tokens.h"
#include "model/gemma4_vision.h"
#include "runtime/conversation.h"
#include "runtime/image_encoder.h"
#include "runtime/media.h"
#include "runtime/session.h"
#include "tests/oracle_test_util.h"

namespace gemlet {
namespace oracle_vision_prompt_test {

const std::string& Dir() {
  static const std::string d = oracle::OracleDir() + "tiny-e2b-vision/";
  return d;
}

const nlohmann::json& Prompt(int i) { return oracle::OracleCases("tiny-e2b-vision")["prompts"][i]; }

std::unique_ptr<runtime::Engine> OpenEngine() {
  runtime::EngineOptions eo;
  eo.threads = 2;
  eo.mode = ops::MatMulMode::kExact;
  auto e = runtime::Engine::Open(oracle::Converted("tiny-e2b-vision", "model.safetensors"), eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<runtime::ImageEncoder> Encoder(const runtime::Engine& engine, int64_t budget, size_t cache = 16) {
  runtime::ImageEncoderOptions o;
  o.tokens = budget;
  o.cache_entries = cache;
  auto enc = runtime::ImageEncoder::Create(engine, o);
  EXPECT_TRUE(enc.ok()) << enc.status().ToString();
  return enc.ok() ? std::move(*enc) : nullptr;
}

runtime::MediaRef EncodeFile(runtime::ImageEncoder& enc, const std::string& file) {
  auto m = enc.EncodeFile(Dir() + file);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : nullptr;
}

// The oracle prompt with each image span collapsed to its one placeholder (the rendered chat).
std::vector<int32_t> Collapsed(const nlohmann::json& p) {
  const auto t = p["tokens"].get<std::vector<int32_t>>();
  std::vector<int32_t> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == 53 || t[i] == 57 || (t[i] == 55 && t[i - 1] == 55)) continue;
    out.push_back(t[i]);
  }
  return out;
}

std::vector<runtime::MediaTokens> Kinds(const runtime::Engine& e) { return {runtime::ImageTokens(e)}; }

TEST(VisionPrompt, ExpansionGivesTheOracleLayoutAndPrefillsAsRawRows) {
  GEMLET_NEED_IMAGE_LIBS();
  auto engine = OpenEngine();
  ASSERT_TRUE(engine);
  auto enc = Encoder(*engine, 70);
  const nlohmann::json& p = Prompt(2);  // B@70, then C@70
  const runtime::MediaRef b = EncodeFile(*enc, "image-B.png"), c = EncodeFile(*enc, "image-C.png");
  ASSERT_TRUE(b && c);
  EXPECT_EQ(runtime::ImageTokens(*engine).placeholder, 55);
  auto prompt = runtime::ExpandMedia(Collapsed(p), std::vector<runtime::MediaRef>{b, c}, Kinds(*engine));
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  EXPECT_EQ(prompt->tokens, p["tokens"].get<std::vector<int32_t>>());
  ASSERT_EQ(prompt->media.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(prompt->media[k].start, p["image_spans"][k][0].get<int64_t>());
    EXPECT_EQ(prompt->media[k].rows, p["image_spans"][k][1].get<int64_t>());
  }

  runtime::SessionOptions so{256, 40};  // chunks that cut through the images
  runtime::Session with_media(*engine, so), raw(*engine, so);
  std::vector<float> got, want;
  ASSERT_TRUE(with_media.Prefill(*prompt, &got).ok());
  std::vector<int64_t> rows;
  std::vector<float> emb;
  ASSERT_TRUE(runtime::GatherMediaRows(prompt->media, prompt->size(), engine->config().hidden_size, &rows, &emb).ok());
  ASSERT_TRUE(raw.Prefill(prompt->tokens, rows, emb.data(), &want).ok());
  EXPECT_EQ(got, want);
  ASSERT_EQ(with_media.media().size(), 2u);  // kept (the 40-token chunks do not split the record)
  EXPECT_EQ(with_media.media()[1].start + with_media.media()[1].rows, 83 + 56);

  // Against the golden logits of the last position (soft tokens from the files: the tier of
  // SoftTokensFromImageFiles, so the logits move a little).
  const NpyArray& gold = oracle::Golden("tiny-e2b-vision", "ref");
  const int64_t V = engine->config().vocab_size;
  const float* g = gold.data.data() + (p["row_offset"].get<int64_t>() + prompt->size() - 1) * V;
  double max_abs = 0;
  for (int64_t v = 0; v < V; ++v) max_abs = std::max(max_abs, std::abs(double(got[v]) - g[v]));
  EXPECT_LE(max_abs, 0.05);
  EXPECT_EQ(oracle::TopGap(got.data(), V).first, oracle::TopGap(g, V).first);
}

TEST(VisionPrompt, TruncateAndForkReproduceImageRows) {
  GEMLET_NEED_IMAGE_LIBS();
  auto engine = OpenEngine();
  ASSERT_TRUE(engine);
  auto enc = Encoder(*engine, 70);
  const runtime::MediaRef a = EncodeFile(*enc, "image-A.png");
  ASSERT_TRUE(a);
  auto prompt = runtime::ExpandMedia(Collapsed(Prompt(0)), std::vector<runtime::MediaRef>{a}, Kinds(*engine));
  ASSERT_TRUE(prompt.ok());
  ASSERT_EQ(prompt->size(), 103);
  runtime::SessionOptions so{256, 32};
  runtime::Session s(*engine, so);
  std::vector<float> want, got;
  ASSERT_TRUE(s.Prefill(*prompt, &want).ok());
  // 40 is inside the image (rows 8..77) and 63 positions back: past the sliding window and
  // the in-place rollback, so the kept tokens and image rows are prefilled again.
  auto fork = s.Fork(40);
  ASSERT_TRUE(fork.ok());
  ASSERT_TRUE(s.Truncate(40).ok());
  ASSERT_EQ(s.media().size(), 1u);
  EXPECT_EQ(s.media()[0].rows, 40 - 8);
  ASSERT_TRUE(s.Prefill(prompt->Slice(40, 103), &got).ok());
  EXPECT_EQ(got, want);
  ASSERT_TRUE((*fork)->Prefill(prompt->Slice(40, 103), &got).ok());
  EXPECT_EQ(got, want);
  // Without the image rows the same ids give other logits (the check can fail).
  runtime::Session text(*engine, so);
  ASSERT_TRUE(text.Prefill(prompt->tokens, &got).ok());
  EXPECT_NE(got, want);
}

TEST(VisionPrompt, EncoderRunsOncePerImageContent) {
  GEMLET_NEED_IMAGE_LIBS();
  auto engine = OpenEngine();
  ASSERT_TRUE(engine);
  auto enc = Encoder(*engine, 70);
  EXPECT_FALSE(enc->bound());
  auto bytes = ReadFileToString(Dir() + "image-B.png");
  ASSERT_TRUE(bytes.ok());
  const std::vector<uint8_t> b1(bytes->begin(), bytes->end()), b2 = b1;  // two buffers, one content
  auto m1 = enc->Encode(b1, "first");
  auto m2 = enc->Encode(b2, "second");
  ASSERT_TRUE(m1.ok() && m2.ok());
  EXPECT_EQ(enc->encodes(), 1);
  EXPECT_EQ(*m1, *m2);
  EXPECT_EQ((*m1)->rows, 63);
  ASSERT_TRUE(EncodeFile(*enc, "image-C.png"));
  EXPECT_EQ(enc->encodes(), 2);
  // Another budget is another encoding; no cache encodes every time.
  auto enc140 = Encoder(*engine, 140, 0);
  auto m3 = enc140->Encode(b1, "b");
  auto m4 = enc140->Encode(b1, "b");
  ASSERT_TRUE(m3.ok() && m4.ok());
  EXPECT_EQ(enc140->encodes(), 2);
  EXPECT_NE((*m3)->hash, (*m1)->hash);
  EXPECT_EQ((*m3)->rows, 130);
  EXPECT_TRUE(runtime::SameMedia(**m3, **m4));
  // Bad bytes: an error naming the part, nothing cached.
  const std::vector<uint8_t> junk(100, 7);
  auto bad = enc->Encode(junk, "image part 3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("image part 3"), std::string::npos) << bad.status().message();
}

TEST(VisionConversation, ImageTurnsReprefillWithoutEncodingAgain) {
  GEMLET_NEED_IMAGE_LIBS();
  auto engine = OpenEngine();
  ASSERT_TRUE(engine);
  auto enc = Encoder(*engine, 70);
  runtime::ConversationOptions co;
  co.sampler.temperature = 0;
  co.max_tokens = 4;
  co.session = runtime::SessionOptions{512, 64};
  runtime::Conversation conv(*engine, *engine->tokenizer(), co);
  // A text turn first: the tower stays unbound.
  ASSERT_TRUE(conv.Send("hi").ok());
  EXPECT_FALSE(enc->bound());
  const runtime::MediaRef a = EncodeFile(*enc, "image-A.png");
  ASSERT_TRUE(a);
  auto t1 = conv.Send("What is {image}?", std::vector<runtime::MediaRef>{a});
  ASSERT_TRUE(t1.ok()) << t1.status().ToString();
  EXPECT_FALSE(t1->full_prefill);
  EXPECT_EQ(conv.messages()[2].content, "What is <|image|>?");
  ASSERT_EQ(conv.session().media().size(), 1u);
  const int64_t start = conv.session().media()[0].start;
  EXPECT_EQ(conv.session().history()[start - 1], 53);
  EXPECT_EQ(conv.session().history()[start + 70], 57);
  // A change at the start makes the next turn prefill everything again: the image's rows come
  // from the conversation, not from the encoder.
  conv.SetSystem("Be brief.");
  auto t2 = conv.Send("And now?");
  ASSERT_TRUE(t2.ok()) << t2.status().ToString();
  EXPECT_TRUE(t2->full_prefill);
  EXPECT_EQ(enc->encodes(), 1);
  ASSERT_EQ(conv.session().media().size(), 1u);
  EXPECT_EQ(conv.session().media()[0].media, a);
  // The state equals a fresh session fed the same tokens and rows.
  runtime::MediaPrompt same;
  same.tokens = conv.session().history();
  same.media.assign(conv.session().media().begin(), conv.session().media().end());
  runtime::Session fresh(*engine, co.session);
  ASSERT_TRUE(fresh.Prefill(same, nullptr).ok());
  auto fork = conv.session().Fork();
  ASSERT_TRUE(fork.ok());
  std::vector<float> x, y;
  ASSERT_TRUE(fresh.Decode(107, &x).ok());
  ASSERT_TRUE((*fork)->Decode(107, &y).ok());
  EXPECT_EQ(x, y);
  // Placeholders and images must agree; a saved conversation cannot hold images yet.
  EXPECT_FALSE(conv.Send("{image} {image}", std::vector<runtime::MediaRef>{a}).ok());
  EXPECT_FALSE(conv.Save(oracle::ScratchDir() + "/with_image.gemlet-session").ok());
}

// Pages of `file`'s mapping that hold only vision-tower bytes, at least 64 KiB (the kernel's
// fault-around window) from any other tensor's bytes, and whether each is mapped in this
// process (/proc/self/pagemap bit 63: the process touched it, or fault-around did).
struct TowerPages {
  int64_t checked = 0;
  int64_t present = 0;
  std::vector<int64_t> offsets;  // of the present pages in the file
};
TowerPages TowerPagesPresent(const GemletFile& file) {
  TowerPages r;
  auto cfg = model::Gemma4VisionConfig::FromJson(file.metadata()["vision"]);
  EXPECT_TRUE(cfg.ok());
  if (!cfg.ok()) return r;
  std::set<std::string> names;
  for (const auto& t : model::ExpectedVisionTensors(*cfg)) names.insert(t.name);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)), window = 64 * 1024;
  std::set<uintptr_t> other_windows, tower_pages;
  // The file's own sections before and after the tensor data (header, metadata, vocabulary)
  // are read at open.
  uintptr_t first = UINTPTR_MAX, last = 0;
  for (const TensorView& t : file.tensors()) {
    first = std::min(first, reinterpret_cast<uintptr_t>(t.data));
    last = std::max(last, reinterpret_cast<uintptr_t>(t.data) + t.nbytes);
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(file.base()), end = base + file.size();
  for (auto [b, e] : {std::pair{base, first}, std::pair{last, end}}) {
    for (uintptr_t w = b & ~(window - 1); w < e; w += window) other_windows.insert(w);
  }
  for (const TensorView& t : file.tensors()) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(t.data), e = b + t.nbytes;
    if (names.count(t.name)) {
      for (uintptr_t p = (b + page - 1) & ~(page - 1); p + page <= e; p += page) tower_pages.insert(p);
    } else {
      for (uintptr_t w = b & ~(window - 1); w < e; w += window) other_windows.insert(w);
    }
  }
  const int fd = ::open("/proc/self/pagemap", O_RDONLY);
  EXPECT_GE(fd, 0);
  if (fd < 0) return r;
  for (uintptr_t p : tower_pages) {
    const uintptr_t w = p & ~(window - 1);
    if (other_windows.count(w) || other_windows.count(w - window) || other_windows.count(w + window)) continue;
    uint64_t entry = 0;
    if (::pread(fd, &entry, sizeof(entry), static_cast<off_t>(p / page * sizeof(entry))) != sizeof(entry)) continue;
    ++r.checked;
    if (entry >> 63) {
      ++r.present;
      r.offsets.push_back(static_cast<int64_t>(p - reinterpret_cast<uintptr_t>(file.base())));
    }
  }
  ::close(fd);
  return r;
}

TEST(VisionPrompt, TextOnlyTurnsNeverTouchTheTowerPages) {
  GEMLET_NEED_IMAGE_LIBS();
  auto engine = OpenEngine();  // a mapping of its own
  ASSERT_TRUE(engine);
  auto enc = Encoder(*engine, 70);
  runtime::ConversationOptions co;
  co.sampler.temperature = 0;
  co.max_tokens = 4;
  runtime::Conversation conv(*engine, *engine->tokenizer(), co);
  ASSERT_TRUE(conv.Send("hi there").ok());
  ASSERT_TRUE(conv.Send("and again").ok());
  const TowerPages before = TowerPagesPresent(engine->file());
  ASSERT_GT(before.checked, 0) << "no page of the tower lies apart from the text tensors";
  EXPECT_EQ(before.present, 0) << "of " << before.checked << " tower pages; file size " << engine->file().size()
                               << ", first present at " << (before.offsets.empty() ? -1 : before.offsets[0]);
  EXPECT_FALSE(enc->bound());
  // An image turn does touch them (the check can fail).
  const runtime::MediaRef a = EncodeFile(*enc, "image-A.png");
  ASSERT_TRUE(a);
  ASSERT_TRUE(conv.Send("{image}?", std::vector<runtime::MediaRef>{a}).ok());
  EXPECT_GT(TowerPagesPresent(engine->file()).present, 0);
}

}  // namespace oracle_vision_prompt_test
}  // namespace gemlet
