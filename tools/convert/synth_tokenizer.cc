#include "tools/convert/synth_tokenizer.h"

#include <cstdio>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "format/gemma4_tokens.h"

namespace gemlet::convert {

namespace {

const char kSpace[] = "\xe2\x96\x81";  // "▁" U+2581, what the normalizer turns " " into

struct Special {
  int64_t id;
  std::string_view text;
};
// Gemma 4 control tokens (../shared/spec/gemma4-text.md §4.2).
constexpr Special kControl[] = {
    {gemma4::kPadId, gemma4::kPad},
    {gemma4::kEosId, gemma4::kEos},
    {gemma4::kBosId, gemma4::kBos},
    {gemma4::kUnkId, gemma4::kUnk},
    {gemma4::kMaskId, gemma4::kMask},
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
};
// Multimodal control tokens, added when the vocabulary is large enough to hold them.
constexpr Special kMultimodal[] = {
    {gemma4::kImageOpenId, gemma4::kImageOpen},   {gemma4::kAudioOpenId, gemma4::kAudioOpen},
    {gemma4::kImageId, gemma4::kImage},           {gemma4::kAudioId, gemma4::kAudio},
    {gemma4::kImageCloseId, gemma4::kImageClose}, {gemma4::kAudioCloseId, gemma4::kAudioClose},
    {gemma4::kVideoId, gemma4::kVideo},
};

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Ordinary English pieces: single characters, then merged pieces as (left, right) in merge
// rank order. "▁"+letter merges come first so that words like ▁hello are reachable.
void EnglishPieces(std::vector<std::string>* singles,
                   std::vector<std::pair<std::string, std::string>>* merges) {
  const std::string sp = kSpace;
  singles->push_back(sp);
  for (char c = 'a'; c <= 'z'; ++c) singles->push_back(std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) singles->push_back(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) singles->push_back(std::string(1, c));
  for (const char* p : {".", ",", "!", "?", "'", "\"", "-", ":", ";", "(", ")", "/"}) singles->push_back(p);
  for (const char* c :
       {"t", "a", "s", "c", "w", "o", "b", "f", "m", "p", "i", "h", "d", "l", "y", "I", "H", "T"}) {
    merges->push_back({sp, c});
  }
  const std::pair<const char*, const char*> kRest[] = {
      {"h", "e"},
      {"i", "n"},
      {"e", "r"},
      {"o", "n"},
      {"r", "e"},
      {"a", "n"},
      {"e", "n"},
      {"a", "t"},
      {"o", "r"},
      {"e", "s"},
      {"i", "s"},
      {"i", "t"},
      {"o", "u"},
      {"e", "d"},
      {"l", "l"},
      {"in", "g"},
      {"\xe2\x96\x81t", "he"},
      {"\xe2\x96\x81t", "o"},
      {"\xe2\x96\x81o", "f"},
      {"\xe2\x96\x81"
       "a",
       "n"},
      {"\xe2\x96\x81"
       "an",
       "d"},
      {"\xe2\x96\x81i", "n"},
      {"\xe2\x96\x81i", "s"},
      {"\xe2\x96\x81i", "t"},
      {"\xe2\x96\x81y", "ou"},
      {"\xe2\x96\x81w", "h"},
      {"\xe2\x96\x81wh", "at"},
      {"\xe2\x96\x81h", "e"},
      {"\xe2\x96\x81he", "ll"},
      {"\xe2\x96\x81hell", "o"},
      {"\xe2\x96\x81H", "e"},
      {"\xe2\x96\x81He", "ll"},
      {"\xe2\x96\x81Hell", "o"},
      {"\xe2\x96\x81w", "or"},
      {"\xe2\x96\x81wor", "l"},
      {"\xe2\x96\x81worl", "d"},
      {"\xe2\x96\x81"
       "f",
       "or"},
      {"\xe2\x96\x81"
       "b",
       "e"},
  };
  for (const auto& [l, r] : kRest) merges->push_back({l, r});
}

}  // namespace

Result<nlohmann::json> SyntheticTokenizerJson(int64_t vocab_size) {
  if (vocab_size < kSynthTokenizerMinVocab || vocab_size > (int64_t{1} << 31)) {
    return InvalidArgument("synthetic tokenizer: vocabulary size " + std::to_string(vocab_size) +
                           " is not in [512, 2^31]");
  }
  std::vector<std::string> pieces(static_cast<size_t>(vocab_size));
  std::vector<bool> special(pieces.size(), false);
  for (const Special& s : kControl) {
    pieces[s.id] = s.text;
    special[s.id] = true;
  }
  pieces[5] = "[multimodal]";
  // <unusedN> where the real vocabulary has them: N = id − 6.
  for (int64_t id = 6; id < 105; ++id) {
    if (pieces[id].empty()) pieces[id] = "<unused" + std::to_string(id - 6) + ">";
  }
  pieces[107] = "\n";
  pieces[108] = "\n\n";
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  merges.push_back({"\n", "\n"});
  for (int n = 3; n <= 9; ++n) {  // ids 109..115
    pieces[106 + n] = Repeat("\n", n);
    merges.push_back({Repeat("\n", n - 1), "\n"});
  }
  for (int n = 2; n <= 9; ++n) {  // ids 116..123
    pieces[114 + n] = Repeat(kSpace, n);
    merges.push_back({Repeat(kSpace, n - 1), kSpace});
  }
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    pieces[238 + b] = buf;
  }
  // English pieces fill 124..237 and 494..511.
  std::vector<std::string> singles;
  std::vector<std::pair<std::string, std::string>> english;
  EnglishPieces(&singles, &english);
  std::vector<int64_t> free_ids;
  for (int64_t id = 124; id < 238; ++id) free_ids.push_back(id);
  for (int64_t id = 494; id < 512; ++id) free_ids.push_back(id);
  GEMLET_CHECK(singles.size() + english.size() <= free_ids.size());
  size_t next = 0;
  for (const auto& s : singles) pieces[free_ids[next++]] = s;
  for (const auto& m : english) {
    pieces[free_ids[next++]] = m.first + m.second;
    merges.push_back(m);
  }
  int64_t unused = 99;  // the low range used <unused0>..<unused98>
  while (next < free_ids.size()) pieces[free_ids[next++]] = "<unused" + std::to_string(unused++) + ">";
  if (vocab_size > kMultimodal[std::size(kMultimodal) - 1].id) {
    for (const Special& s : kMultimodal) {
      pieces[s.id] = s.text;
      special[s.id] = true;
    }
  }
  for (int64_t id = 512; id < vocab_size; ++id) {
    if (pieces[id].empty()) pieces[id] = "<unused" + std::to_string(unused++) + ">";
  }

  std::unordered_map<std::string, int64_t> ids;
  ids.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    GEMLET_CHECK_MSG(!pieces[i].empty(), "every id has a piece");
    GEMLET_CHECK_MSG(ids.emplace(pieces[i], static_cast<int64_t>(i)).second, "pieces are unique");
  }
  for (const auto& [l, r] : merges) {
    GEMLET_CHECK_MSG(ids.count(l) && ids.count(r) && ids.count(l + r), "merge parts are pieces");
  }

  nlohmann::json added = nlohmann::json::array();
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!special[i]) continue;
    added.push_back({{"id", i},
                     {"content", pieces[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
  nlohmann::json merge_list = nlohmann::json::array();
  for (const auto& [l, r] : merges) merge_list.push_back({l, r});

  // The non-vocabulary sections are those of ../shared/tokenizer/gemma4/tokenizer.json.
  nlohmann::json t;
  t["version"] = "1.0";
  t["truncation"] = nullptr;
  t["padding"] = nullptr;
  t["added_tokens"] = std::move(added);
  t["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}};
  t["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"String", " "}}},
                        {"behavior", "MergedWithPrevious"},
                        {"invert", false}};
  t["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", gemma4::kBos}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair",
       {{{"SpecialToken", {{"id", gemma4::kBos}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", gemma4::kBos}, {"type_id", 1}}}},
        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
      {"special_tokens",
       {{gemma4::kBos, {{"id", gemma4::kBos}, {"ids", {gemma4::kBosId}}, {"tokens", {gemma4::kBos}}}}}}};
  t["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}}}}};
  t["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", gemma4::kUnk},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", true},
                {"byte_fallback", true},
                {"ignore_merges", false},
                {"vocab", std::move(vocab)},
                {"merges", std::move(merge_list)}};
  return t;
}

nlohmann::json SyntheticTokenizerConfigJson() {
  return {{"backend", "tokenizers"},
          {"bos_token", gemma4::kBos},
          {"eos_token", gemma4::kEos},
          {"pad_token", gemma4::kPad},
          {"unk_token", gemma4::kUnk},
          {"mask_token", gemma4::kMask},
          {"sot_token", gemma4::kTurnOpen},
          {"eot_token", gemma4::kTurnClose},
          {"soc_token", gemma4::kChannelOpen},
          {"eoc_token", gemma4::kChannelClose},
          {"think_token", gemma4::kThink},
          {"std_token", gemma4::kToolOpen},
          {"etd_token", gemma4::kToolClose},
          {"stc_token", gemma4::kToolCallOpen},
          {"etc_token", gemma4::kToolCallClose},
          {"str_token", gemma4::kToolResponseOpen},
          {"etr_token", gemma4::kToolResponseClose},
          {"escape_token", gemma4::kQuote},
          {"padding_side", "left"},
          {"tokenizer_class", "GemmaTokenizer"}};
}

Result<int64_t> TokenizerJsonVocabSize(const nlohmann::json& t) {
  constexpr int64_t kMaxId = int64_t{1} << 31;
  if (!t.is_object()) return InvalidArgument("tokenizer.json is not a JSON object");
  auto m = t.find("model");
  if (m == t.end() || !m->is_object()) return InvalidArgument("tokenizer.json has no \"model\" object");
  auto v = m->find("vocab");
  if (v == m->end() || !v->is_object()) {
    return InvalidArgument(
        "tokenizer.json: model.vocab is not an object of piece -> id (only BPE is supported)");
  }
  int64_t max_id = -1;
  for (const auto& [piece, id] : v->items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxId) {
      return InvalidArgument("tokenizer.json: model.vocab id of '" + piece +
                             "' is not an integer in [0, 2^31)");
    }
    max_id = std::max(max_id, id.get<int64_t>());
  }
  auto a = t.find("added_tokens");
  if (a != t.end() && !a->is_null()) {
    if (!a->is_array()) return InvalidArgument("tokenizer.json: added_tokens is not an array");
    for (const auto& tok : *a) {
      auto id = tok.is_object() ? tok.find("id") : tok.end();
      if (!tok.is_object() || id == tok.end() || !id->is_number_integer() || id->get<int64_t>() < 0 ||
          id->get<int64_t>() >= kMaxId) {
        return InvalidArgument("tokenizer.json: an added_tokens entry has no integer id in [0, 2^31)");
      }
      max_id = std::max(max_id, id->get<int64_t>());
    }
  }
  if (max_id < 0) return InvalidArgument("tokenizer.json: the vocabulary is empty");
  return max_id + 1;
}

}  // namespace gemlet::convert
