// gemlet tokenize / gemlet detokenize: the model's tokenizer from the command line, and the
// Gemma 4 chat format rendered for a chat case.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "format/gguf.h"
#include "format/gguf_vocab.h"
#include "format/tokenizer_json.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"
#include "tools/cli/chat_options.h"
#include "tools/cli/command.h"

namespace gemlet::cli {
namespace cmd_tokenize {

constexpr char kTokenizeUsage[] =
    R"(usage: gemlet tokenize [-m MODEL.gemlet | --tokenizer PATH] [--json | --ids] (TEXT | -f FILE)
       gemlet tokenize [-m MODEL.gemlet | --tokenizer PATH] --chat CASE.json

Prints the token ids of TEXT, one "ID<TAB>PIECE" line per token (control characters in the
piece are escaped; "▁" is a space). Special tokens written in the text (<bos>, <|turn>, ...)
are matched; no <bos> is added. Bytes that are not UTF-8 become <0xNN> byte tokens. Put
-- before a TEXT that starts with "-".

With --chat, CASE.json holds {"messages": [...], "options": {"add_generation_prompt": bool,
"enable_thinking": bool, "tools": [...]}} (the chat cases of shared/tokenizer/vectors.json);
the Gemma 4 chat template renders it and {"prompt": TEXT, "ids": [...]} is printed.

flags:
  -m, --model FILE      a .gemlet model: its stored vocabulary (neither -m nor --tokenizer:
                        the tiny demo model, made once in ~/.cache/gemlet, as run and chat do)
  --tokenizer PATH      a tokenizer.json (or a folder holding one), a GGUF file, or a .gemlet
  -f, --file FILE       tokenize the file's bytes, all of them (NULs, control characters and
                        trailing newlines included)
  --json                print {"ids": [...], "pieces": [...]}
  --ids                 print only the ids, comma-separated (what detokenize reads)
  --chat CASE.json      render a chat case and tokenize the prompt

examples:
  gemlet tokenize -m e2b.gemlet "Hello, world!"
  gemlet tokenize --tokenizer ../shared/tokenizer/gemma4 --ids -f prompt.txt
  gemlet tokenize --tokenizer model-q4_0.gguf --json "<|turn>user"
  gemlet tokenize -m e2b.gemlet --chat case.json
)";

constexpr char kDetokenizeUsage[] =
    R"(usage: gemlet detokenize [-m MODEL.gemlet | --tokenizer PATH] [--skip-special] [--json] IDS...

Prints the text of the token ids exactly (no newline is added): "▁" becomes a space, runs of
<0xNN> byte tokens become their UTF-8 text (U+FFFD per byte if a run is not valid UTF-8), and
special tokens print as written (<turn|>) unless --skip-special. IDS are comma- or
space-separated, in one or more arguments.

flags:
  -m, --model FILE      a .gemlet model: its stored vocabulary (neither -m nor --tokenizer:
                        the tiny demo model, made once in ~/.cache/gemlet, as run and chat do)
  --tokenizer PATH      a tokenizer.json (or a folder holding one), a GGUF file, or a .gemlet
  --skip-special        leave out special tokens (<bos>, <turn|>, <|channel>, ...)
  --json                print {"text": ...}

examples:
  gemlet detokenize -m e2b.gemlet 818,5279,529,7001,563,5213,50429,84750
  gemlet detokenize --tokenizer ../shared/tokenizer/gemma4 --skip-special 2 105 2364 107
  gemlet tokenize -m e2b.gemlet --ids "Hi" | xargs gemlet detokenize -m e2b.gemlet
)";

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The tokenizer of -m FILE or --tokenizer PATH (format found from the file's first bytes).
Result<Tokenizer> LoadTokenizer(const std::string& model, const std::string& path) {
  if (!model.empty()) {
    ASSIGN_OR_RETURN(auto file, GemletFile::Open(model));
    return Tokenizer::FromGemlet(*file);
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    char magic[8] = {};
    std::ifstream in(path, std::ios::binary);
    if (!in) return NotFound(path + ": cannot open for reading");
    in.read(magic, sizeof(magic));
    if (in.gcount() >= 4 && std::memcmp(magic, "GGUF", 4) == 0) {
      ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
      ASSIGN_OR_RETURN(TokenizerInfo info, TokenizerFromGguf(*gguf));
      auto t = Tokenizer::Create(info.vocab, info.special);
      if (!t.ok()) return t.status().WithContext(path);
      return t;
    }
    if (in.gcount() == 8 && std::memcmp(magic, kGemletMagic, 8) == 0) {
      ASSIGN_OR_RETURN(auto file, GemletFile::Open(path));
      return Tokenizer::FromGemlet(*file);
    }
  }
  ASSIGN_OR_RETURN(TokenizerInfo info, LoadHfTokenizer(path));
  auto t = Tokenizer::Create(info.vocab, info.special);
  if (!t.ok()) return t.status().WithContext(path);
  return t;
}

// Reads -m / --tokenizer; at most one may be given (neither: the demo model, see
// ResolveSource).
bool SourceFlags(Flags& flags, std::string* model, std::string* path, std::string* error) {
  *model = flags.Str({"-m", "--model"}, "");
  *path = flags.Str({"--tokenizer"}, "");
  if (!model->empty() && !path->empty()) {
    *error = "give the tokenizer with one of -m MODEL.gemlet or --tokenizer PATH, not both";
    return false;
  }
  return true;
}

// Without -m and --tokenizer: the tiny demo model's vocabulary, as run, chat and serve use it.
Status ResolveSource(std::string* model, const std::string& path) {
  if (!model->empty() || !path.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(*model, ResolveModel("", /*allow_demo=*/true));
  return Status::Ok();
}

// A piece on one line: control characters and backslashes escaped.
std::string Printable(std::string_view piece) {
  std::string out;
  for (char c : piece) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

int RunChatCase(const Tokenizer& tok, const std::string& case_path) {
  auto text = ReadFileToString(case_path);
  if (!text.ok()) return ReportError("tokenize", text.status());
  const nlohmann::json c = nlohmann::json::parse(*text, nullptr, false);
  if (c.is_discarded() || !c.is_object() || !c.contains("messages")) {
    return ReportError("tokenize",
                       InvalidArgument(case_path + ": not a JSON object with \"messages\""));
  }
  auto options = ChatOptionsFromJson(c.contains("options") ? c["options"] : nlohmann::json());
  if (!options.ok()) return ReportError("tokenize", options.status().WithContext(case_path));
  auto prompt = RenderChat(c["messages"], *options);
  if (!prompt.ok()) return ReportError("tokenize", prompt.status().WithContext(case_path));
  auto ids = tok.Encode(*prompt);
  if (!ids.ok()) return ReportError("tokenize", ids.status());
  std::printf("%s\n", Dump({{"prompt", *prompt}, {"ids", *ids}}).c_str());
  return kExitOk;
}

int RunTokenize(Flags& flags) {
  std::string model, path, error;
  const bool have_source = SourceFlags(flags, &model, &path, &error);
  const bool json = flags.Bool({"--json"});
  const bool ids_only = flags.Bool({"--ids"});
  const auto file = flags.Str({"-f", "--file"});
  const auto chat = flags.Str({"--chat"});
  if (Status st = flags.Finish(); !st.ok()) return UsageError("tokenize", st.message());
  if (!have_source) return UsageError("tokenize", error);
  const std::vector<std::string> pos = flags.Positional();
  const int inputs = (file ? 1 : 0) + (chat ? 1 : 0) + (pos.empty() ? 0 : 1);
  if (inputs != 1)
    return UsageError("tokenize", "give exactly one of TEXT, -f FILE or --chat CASE.json");
  if (pos.size() > 1) return UsageError("tokenize", "give TEXT as one argument (quote it)");
  if (json && ids_only) return UsageError("tokenize", "--json and --ids exclude each other");
  if ((file && file->empty()) || (chat && chat->empty())) {
    return UsageError("tokenize", "-f and --chat need a file name");
  }

  if (Status st = ResolveSource(&model, path); !st.ok()) return ReportError("tokenize", st);
  auto tok = LoadTokenizer(model, path);
  if (!tok.ok()) return ReportError("tokenize", tok.status());
  if (chat) return RunChatCase(*tok, *chat);

  std::string text;
  if (file) {
    auto r = ReadFileToString(*file);
    if (!r.ok()) return ReportError("tokenize", r.status());
    text = std::move(*r);
  } else {
    text = pos[0];
  }
  auto ids = tok->Encode(text);
  if (!ids.ok()) return ReportError("tokenize", ids.status());
  if (json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : *ids) pieces.push_back(std::string(tok->Piece(id)));
    std::printf("%s\n", Dump({{"ids", *ids}, {"pieces", pieces}}).c_str());
  } else if (ids_only) {
    std::string line;
    for (size_t i = 0; i < ids->size(); ++i) {
      if (i) line += ',';
      line += std::to_string((*ids)[i]);
    }
    std::printf("%s\n", line.c_str());
  } else {
    for (int32_t id : *ids) std::printf("%d\t%s\n", id, Printable(tok->Piece(id)).c_str());
  }
  return kExitOk;
}

// "1,2 3" -> {1, 2, 3}.
Result<std::vector<int32_t>> ParseIds(const std::vector<std::string>& args) {
  std::vector<int32_t> ids;
  for (const std::string& a : args) {
    size_t i = 0;
    while (i < a.size()) {
      while (i < a.size() && (a[i] == ',' || a[i] == ' ' || a[i] == '\t' || a[i] == '\n')) ++i;
      if (i >= a.size()) break;
      size_t j = i;
      if (a[j] == '-') ++j;
      while (j < a.size() && a[j] >= '0' && a[j] <= '9') ++j;
      const std::string item = a.substr(i, j - i);
      const bool bad_end =
          j < a.size() && a[j] != ',' && a[j] != ' ' && a[j] != '\t' && a[j] != '\n';
      if (item.empty() || item == "-" || bad_end || item.size() > 11) {
        size_t k = j;
        while (k < a.size() && a[k] != ',' && a[k] != ' ') ++k;
        return InvalidArgument("'" + a.substr(i, k - i) + "' is not a token id");
      }
      const long long v = std::stoll(item);
      if (v < INT32_MIN || v > INT32_MAX)
        return InvalidArgument("'" + item + "' is not a token id");
      ids.push_back(static_cast<int32_t>(v));
      i = j;
    }
  }
  return ids;
}

int RunDetokenize(Flags& flags) {
  std::string model, path, error;
  const bool have_source = SourceFlags(flags, &model, &path, &error);
  const bool skip = flags.Bool({"--skip-special"});
  const bool json = flags.Bool({"--json"});
  if (Status st = flags.Finish(); !st.ok()) return UsageError("detokenize", st.message());
  if (!have_source) return UsageError("detokenize", error);
  auto ids = ParseIds(flags.Positional());
  if (!ids.ok()) return UsageError("detokenize", ids.status().message());
  if (flags.Positional().empty()) return UsageError("detokenize", "give the token ids to decode");

  if (Status st = ResolveSource(&model, path); !st.ok()) return ReportError("detokenize", st);
  auto tok = LoadTokenizer(model, path);
  if (!tok.ok()) return ReportError("detokenize", tok.status());
  auto text = tok->Decode(*ids, skip);
  if (!text.ok()) return ReportError("detokenize", text.status());
  if (json) {
    std::printf("%s\n", Dump({{"text", *text}}).c_str());
  } else {
    std::fwrite(text->data(), 1, text->size(), stdout);
  }
  return kExitOk;
}

}  // namespace cmd_tokenize

GEMLET_COMMAND(tokenize, "tokenize", "print the token ids of a text, a file or a chat case",
               cmd_tokenize::kTokenizeUsage, cmd_tokenize::RunTokenize);
GEMLET_COMMAND(detokenize, "detokenize", "print the text of token ids", cmd_tokenize::kDetokenizeUsage,
               cmd_tokenize::RunDetokenize);

}  // namespace gemlet::cli
