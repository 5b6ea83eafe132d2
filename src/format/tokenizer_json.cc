#include "format/tokenizer_json.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "base/mapped_file.h"
#include "format/gemma4_tokens.h"

namespace gemlet {

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxVocab = 1 << 24;  // far above any real vocabulary; bounds allocation

// Type-safe reads (json::value() throws on a type mismatch; hostile files must not).
std::string Str(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return std::string();
  return obj[key].get<std::string>();
}
bool Bool(const json& obj, const char* key, bool def) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_boolean()) return def;
  return obj[key].get<bool>();
}
json Get(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) ? obj[key] : json();
}

bool IsNullOrEmpty(const json& obj, const char* key) {
  if (!obj.contains(key)) return true;
  const json& v = obj[key];
  return v.is_null() || (v.is_string() && v.get<std::string>().empty());
}

bool IsStringPattern(const json& pattern, const std::string& want) {
  return pattern.is_object() && pattern.contains("String") && pattern["String"].is_string() &&
         pattern["String"].get<std::string>() == want;
}

bool IsReplace(const json& j, const std::string& from, const std::string& to) {
  return Str(j, "type") == "Replace" && j.contains("pattern") &&
         IsStringPattern(j["pattern"], from) && j.contains("content") && j["content"].is_string() &&
         j["content"].get<std::string>() == to;
}

Status CheckPipeline(const json& t, const std::string& name) {
  auto unsupported = [&](const std::string& what, const json& v) {
    std::string shown = v.dump();
    if (shown.size() > 200) shown = shown.substr(0, 200) + "...";
    return Unsupported(name + ": " + what + " " + shown + " is not supported (" +
                       "gemlet implements the Gemma 4 pipeline only)");
  };
  const json& m = t["model"];
  if (m.contains("type") && m["type"] != "BPE") return unsupported("model type", m["type"]);
  if (!m.contains("byte_fallback") || m["byte_fallback"] != true) {
    return unsupported("model.byte_fallback", Get(m, "byte_fallback"));
  }
  if (m.contains("dropout") && !m["dropout"].is_null()) {
    return unsupported("model.dropout", m["dropout"]);
  }
  if (!IsNullOrEmpty(m, "continuing_subword_prefix")) {
    return unsupported("model.continuing_subword_prefix", m["continuing_subword_prefix"]);
  }
  if (!IsNullOrEmpty(m, "end_of_word_suffix")) {
    return unsupported("model.end_of_word_suffix", m["end_of_word_suffix"]);
  }
  if (m.contains("ignore_merges") && m["ignore_merges"] != false) {
    return unsupported("model.ignore_merges", m["ignore_merges"]);
  }
  const std::string space = " ", mark = "\xE2\x96\x81";
  const json norm = Get(t, "normalizer");
  const bool norm_ok = IsReplace(norm, space, mark) ||
                       (Str(norm, "type") == "Sequence" && norm.contains("normalizers") &&
                        norm["normalizers"].is_array() && norm["normalizers"].size() == 1 &&
                        IsReplace(norm["normalizers"][0], space, mark));
  if (!norm_ok) return unsupported("normalizer", norm);
  const json pre = Get(t, "pre_tokenizer");
  const bool pre_ok = pre.is_null() ||
                      (Str(pre, "type") == "Split" && pre.contains("pattern") &&
                       IsStringPattern(pre["pattern"], space) &&
                       Str(pre, "behavior") == "MergedWithPrevious" && !Bool(pre, "invert", false));
  if (!pre_ok) return unsupported("pre_tokenizer", pre);
  const json dec = Get(t, "decoder");
  bool dec_ok = Str(dec, "type") == "Sequence" && dec.contains("decoders") &&
                dec["decoders"].is_array() && dec["decoders"].size() == 3;
  if (dec_ok) {
    const json& ds = dec["decoders"];
    dec_ok = IsReplace(ds[0], mark, space) && Str(ds[1], "type") == "ByteFallback" &&
             Str(ds[2], "type") == "Fuse";
  }
  if (!dec_ok) return unsupported("decoder", dec);
  return Status::Ok();
}

// A token name in tokenizer_config.json: "<bos>" or {"content": "<bos>", ...}.
std::string TokenName(const json& config, const char* key, const std::string& def) {
  if (!config.is_object() || !config.contains(key)) return def;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return def;
}

int BytePieceValue(const std::string& p) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (p.size() != 6 || p.compare(0, 3, "<0x") != 0 || p[5] != '>') return -1;
  const int hi = hex(p[3]), lo = hex(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Result<json> ParseJson(const std::string& text, const std::string& name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt(name + ": not valid JSON");
  return j;
}

// piece -> id for the merge conversion (1.5M lookups): open addressing over a flat table,
// several times faster than std::unordered_map on this many short strings.
class PieceIndex {
 public:
  explicit PieceIndex(const std::vector<std::string>& pieces) : pieces_(pieces) {
    size_t size = 16;
    while (size < 2 * pieces.size()) size <<= 1;
    slots_.assign(size, 0);
    mask_ = size - 1;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const uint64_t h = Hash(pieces[i]);
      for (uint64_t s = h & mask_;; s = (s + 1) & mask_) {
        if (slots_[s] == 0) {
          slots_[s] = (h & 0xFFFFFFFF00000000ull) | (i + 1);
          break;
        }
        if (pieces_[(slots_[s] & 0xFFFFFFFF) - 1] == pieces[i]) break;  // first id wins
      }
    }
  }
  int64_t Find(std::string_view p) const {
    const uint64_t h = Hash(p);
    for (uint64_t s = h & mask_;; s = (s + 1) & mask_) {
      const uint64_t v = slots_[s];
      if (v == 0) return -1;
      if ((v >> 32) == (h >> 32) && pieces_[(v & 0xFFFFFFFF) - 1] == p) {
        return static_cast<int64_t>(v & 0xFFFFFFFF) - 1;
      }
    }
  }

 private:
  static uint64_t Hash(std::string_view p) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : p) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
  }
  const std::vector<std::string>& pieces_;
  std::vector<uint64_t> slots_;
  uint64_t mask_ = 0;
};

// tokenizer.json is 13 MB, nearly all of it model.vocab (262k entries) and model.merges
// (515k pairs). A SAX reader takes those two straight into vectors and builds a DOM only for
// the rest, several times faster than a full DOM.
struct MergeText {
  std::string left, right;
  bool joined = false;  // the older "left right" single-string form, in `left`
};

class HfSax {
 public:
  json root;
  std::vector<std::pair<std::string, int64_t>> vocab;
  std::vector<MergeText> merges;
  bool have_vocab = false, have_merges = false;
  std::string error;

  bool null() { return Value(json(nullptr)); }
  bool boolean(bool b) { return Value(json(b)); }
  bool number_integer(json::number_integer_t v) {
    if (mode_ == Mode::kVocab) return VocabId(v);
    return Value(json(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (mode_ == Mode::kVocab)
      return VocabId(v > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v));
    return Value(json(v));
  }
  bool number_float(json::number_float_t v, const std::string&) { return Value(json(v)); }
  bool string(std::string& v) {
    if (mode_ == Mode::kMerges) {
      merges.push_back({std::move(v), std::string(), true});
      return true;
    }
    if (mode_ == Mode::kPair) {
      pair_.push_back(std::move(v));
      return true;
    }
    return Value(json(std::move(v)));
  }
  bool binary(json::binary_t&) { return Fail("binary values are not JSON"); }
  bool key(std::string& k) {
    if (mode_ == Mode::kVocab) {
      vocab_key_ = std::move(k);
    } else {
      key_ = std::move(k);
    }
    return true;
  }
  bool start_object(std::size_t) {
    if (mode_ != Mode::kDom) return Fail(Where() + " holds an object");
    if (InModel() && key_ == "vocab") {
      if (have_vocab) return Fail("model.vocab appears twice");
      have_vocab = true;
      mode_ = Mode::kVocab;
      return true;
    }
    return Open(json::object());
  }
  bool end_object() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      return true;
    }
    return Close();
  }
  bool start_array(std::size_t) {
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kPair;
      pair_.clear();
      pair_bad_ = false;
      return true;
    }
    if (mode_ != Mode::kDom) return Fail(Where() + " holds a list");
    if (InModel() && key_ == "merges") {
      if (have_merges) return Fail("model.merges appears twice");
      have_merges = true;
      mode_ = Mode::kMerges;
      return true;
    }
    return Open(json::array());
  }
  bool end_array() {
    if (mode_ == Mode::kPair) {
      if (pair_bad_ || pair_.size() != 2) {
        return Fail("merge " + std::to_string(merges.size()) + " is not a pair of strings");
      }
      merges.push_back({std::move(pair_[0]), std::move(pair_[1]), false});
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      return true;
    }
    return Close();
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception&) {
    return Fail("not valid JSON (at byte " + std::to_string(pos) + ")");
  }

 private:
  enum class Mode { kDom, kVocab, kMerges, kPair };

  bool Fail(const std::string& what) {
    if (error.empty()) error = what;
    return false;
  }
  std::string Where() const {
    if (mode_ == Mode::kVocab) return "model.vocab[\"" + vocab_key_ + "\"]";
    return "merge " + std::to_string(merges.size());
  }
  bool InModel() const { return stack_.size() == 2 && path_[1] == "model"; }
  bool VocabId(int64_t id) {
    if (id < 0 || id >= kMaxVocab) return Fail(Where() + " is not a valid id");
    vocab.emplace_back(std::move(vocab_key_), id);
    return true;
  }
  // A scalar in DOM mode (or an invalid one inside vocab/merges).
  bool Value(json v) {
    if (mode_ == Mode::kVocab) return Fail(Where() + " is not a valid id");
    if (mode_ == Mode::kPair) {
      pair_bad_ = true;
      return true;
    }
    if (mode_ == Mode::kMerges) return Fail(Where() + " is not a pair of strings");
    Insert(std::move(v));
    return true;
  }
  json* Insert(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json* top = stack_.back();
    if (top->is_object()) {
      json& slot = (*top)[key_];
      slot = std::move(v);
      return &slot;
    }
    top->push_back(std::move(v));
    return &top->back();
  }
  bool Open(json container) {
    path_.push_back(stack_.empty() ? std::string() : key_);
    stack_.push_back(Insert(std::move(container)));
    return true;
  }
  bool Close() {
    if (stack_.empty()) return Fail("unbalanced JSON");
    stack_.pop_back();
    path_.pop_back();
    return true;
  }

  Mode mode_ = Mode::kDom;
  std::vector<json*> stack_;
  std::vector<std::string> path_;
  std::string key_, vocab_key_;
  std::vector<std::string> pair_;
  bool pair_bad_ = false;
};

}  // namespace

Result<TokenizerInfo> ParseHfTokenizer(const std::string& tokenizer_json,
                                       const std::string& config_json,
                                       const std::string& generation_config_json,
                                       const std::string& name) {
  HfSax sax;
  if (!json::sax_parse(tokenizer_json, &sax) || !sax.error.empty()) {
    return Corrupt(name + ": " + (sax.error.empty() ? std::string("not valid JSON") : sax.error));
  }
  json& t = sax.root;
  if (!t.is_object() || !t.contains("model") || !t["model"].is_object()) {
    return Corrupt(name + ": no \"model\" object");
  }
  if (!sax.have_vocab) return Corrupt(name + ": model.vocab is not an object of piece -> id");
  if (!sax.have_merges) return Corrupt(name + ": model.merges is not an array");
  RETURN_IF_ERROR(CheckPipeline(t, name));
  const json& model = t["model"];

  TokenizerInfo info;
  Vocab& v = info.vocab;
  // Vocabulary: ids must be dense 0..n-1.
  int64_t max_id = -1;
  for (const auto& [piece, id] : sax.vocab) max_id = std::max(max_id, id);
  v.pieces.resize(max_id + 1);
  std::vector<uint8_t> have(max_id + 1, 0);
  for (auto& [piece, id] : sax.vocab) {
    if (have[id])
      return Corrupt(name + ": id " + std::to_string(id) + " appears twice in model.vocab");
    have[id] = 1;
    v.pieces[id] = std::move(piece);
  }
  v.types.assign(v.pieces.size(), TokenType::kNormal);

  // Added tokens: the same piece at the same id, or appended right after the vocabulary.
  if (t.contains("added_tokens") && !t["added_tokens"].is_null()) {
    if (!t["added_tokens"].is_array()) return Corrupt(name + ": added_tokens is not an array");
    for (const json& a : t["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          !a.contains("content") || !a["content"].is_string()) {
        return Corrupt(name + ": an added token lacks an integer id or a string content");
      }
      const int64_t id = a["id"].get<int64_t>();
      const std::string content = a["content"].get<std::string>();
      if (Bool(a, "lstrip", false) || Bool(a, "rstrip", false) || Bool(a, "single_word", false) ||
          (Bool(a, "normalized", false) && content.find(' ') != std::string::npos)) {
        return Unsupported(name + ": added token '" + content +
                           "' uses lstrip/rstrip/single_word or a normalized space");
      }
      if (id < 0 || id >= kMaxVocab)
        return Corrupt(name + ": added token id " + std::to_string(id));
      if (id == static_cast<int64_t>(v.pieces.size())) {
        v.pieces.push_back(content);
        v.types.push_back(TokenType::kNormal);
        have.push_back(1);
      } else if (id > static_cast<int64_t>(v.pieces.size())) {
        // Leave a hole for now; reported below if nothing fills it.
        v.pieces.resize(id + 1);
        v.types.resize(id + 1, TokenType::kNormal);
        have.resize(id + 1, 0);
        v.pieces[id] = content;
        have[id] = 1;
      } else if (!have[id]) {
        v.pieces[id] = content;
        have[id] = 1;
      } else if (v.pieces[id] != content) {
        return Corrupt(name + ": added token " + std::to_string(id) + " '" + content +
                       "' differs from vocabulary piece '" + v.pieces[id] + "'");
      }
      v.types[id] = Bool(a, "special", false) ? TokenType::kControl : TokenType::kUserDefined;
    }
  }
  for (size_t i = 0; i < have.size(); ++i) {
    if (!have[i]) return Corrupt(name + ": no piece has id " + std::to_string(i));
  }
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    if (v.types[i] == TokenType::kNormal && BytePieceValue(v.pieces[i]) >= 0) {
      v.types[i] = TokenType::kByte;
    }
  }
  v.scores.assign(v.pieces.size(), 0.0f);

  // Merges, as id pairs; both halves and their concatenation must be pieces.
  const PieceIndex ids(v.pieces);
  v.merges.reserve(sax.merges.size());
  std::string joined;
  for (size_t r = 0; r < sax.merges.size(); ++r) {
    MergeText& m = sax.merges[r];
    if (m.joined) {  // the older "left right" form
      const size_t sp = m.left.find(' ');
      if (sp == std::string::npos || m.left.find(' ', sp + 1) != std::string::npos) {
        return Corrupt(name + ": merge " + std::to_string(r) + " '" + m.left +
                       "' is not 'left right'");
      }
      m.right = m.left.substr(sp + 1);
      m.left.resize(sp);
    }
    joined = m.left + m.right;
    const int64_t a = ids.Find(m.left), b = ids.Find(m.right);
    if (a < 0 || b < 0 || ids.Find(joined) < 0) {
      return Corrupt(name + ": merge " + std::to_string(r) + " ('" + m.left + "', '" + m.right +
                     "') uses or makes a piece that is not in the vocabulary");
    }
    v.merges.emplace_back(static_cast<int32_t>(a), static_cast<int32_t>(b));
  }

  // Special ids and the chat template.
  json config;
  if (!config_json.empty()) {
    ASSIGN_OR_RETURN(config, ParseJson(config_json, name + " (tokenizer_config.json)"));
  }
  auto id_of = [&](const std::string& piece) { return ids.Find(piece); };
  json special = json::object();
  special["model"] = "gemma4";
  const std::string unk_default = model.contains("unk_token") && model["unk_token"].is_string()
                                      ? model["unk_token"].get<std::string>()
                                      : std::string(gemma4::kUnk);
  const std::pair<const char*, std::string> names[] = {
      {"bos", TokenName(config, "bos_token", std::string(gemma4::kBos))},
      {"eos", TokenName(config, "eos_token", std::string(gemma4::kEos))},
      {"pad", TokenName(config, "pad_token", std::string(gemma4::kPad))},
      {"unk", TokenName(config, "unk_token", unk_default)}};
  for (const auto& [key, piece] : names) {
    const int64_t id = id_of(piece);
    if (id >= 0) special[std::string(key) + "_id"] = id;
  }
  std::vector<int64_t> eog;
  auto add_eog = [&](int64_t id) {
    if (id >= 0 && id < static_cast<int64_t>(v.pieces.size()) &&
        std::find(eog.begin(), eog.end(), id) == eog.end()) {
      eog.push_back(id);
    }
  };
  if (!generation_config_json.empty()) {
    ASSIGN_OR_RETURN(json gen,
                     ParseJson(generation_config_json, name + " (generation_config.json)"));
    const json e = Get(gen, "eos_token_id");
    if (e.is_number_integer()) add_eog(e.get<int64_t>());
    if (e.is_array()) {
      for (const json& x : e) {
        if (x.is_number_integer()) add_eog(x.get<int64_t>());
      }
    }
  }
  if (eog.empty()) {
    add_eog(id_of(names[1].second));
    add_eog(id_of(TokenName(config, "eot_token", std::string(gemma4::kTurnClose))));
    add_eog(id_of(TokenName(config, "str_token", std::string(gemma4::kToolResponseOpen))));
  }
  special["eog_ids"] = eog;
  const json add_bos = Get(config, "add_bos_token");
  special["add_bos"] = add_bos.is_boolean() && add_bos.get<bool>();
  info.special = std::move(special);

  if (config.is_object() && config.contains("chat_template")) {
    const json& ct = config["chat_template"];
    if (ct.is_string()) {
      info.chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const json& e : ct) {
        if (Str(e, "name") == "default" && e.contains("template") && e["template"].is_string()) {
          info.chat_template = e["template"].get<std::string>();
        }
      }
    }
  }
  return info;
}

Result<TokenizerInfo> LoadHfTokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path file = path, dir;
  if (fs::is_directory(file, ec)) {
    dir = file;
    file = dir / "tokenizer.json";
  } else {
    dir = file.parent_path();
  }
  if (!fs::exists(file, ec)) return NotFound(file.string() + ": no such file");
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(file.string()));
  auto optional = [&](const char* leaf) -> Result<std::string> {
    const fs::path p = dir / leaf;
    if (!fs::is_regular_file(p, ec)) return std::string();
    return ReadFileToString(p.string());
  };
  ASSIGN_OR_RETURN(std::string config, optional("tokenizer_config.json"));
  ASSIGN_OR_RETURN(std::string gen, optional("generation_config.json"));
  ASSIGN_OR_RETURN(std::string jinja, optional("chat_template.jinja"));
  ASSIGN_OR_RETURN(TokenizerInfo info, ParseHfTokenizer(text, config, gen, file.string()));
  if (!jinja.empty()) info.chat_template = std::move(jinja);
  return info;
}

}  // namespace gemlet
