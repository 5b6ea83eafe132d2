// libFuzzer target: arbitrary bytes through the real Gemma 4 tokenizer and the chat-output
// parser. Checks: Encode never fails and gives ids inside the vocabulary; every encoding
// strategy (linear or heap BPE, with or without segment splitting) gives the same ids; Decode
// and streaming decode agree and give valid UTF-8; valid UTF-8 input round-trips exactly, with
// "▁" (U+2581) read back as a space by design.
//
// The tokenizer is loaded once from $GEMLET_TOKENIZER (a tokenizer.json, its folder, a GGUF or
// a .gemlet), else $GEMLET_SHARED_DIR/tokenizer/gemma4, else the build's GEMLET_SHARED_DIR (CMake)
// /tokenizer/gemma4.
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DGEMLET_FUZZ=ON -DGEMLET_TESTS=OFF \
//     -DGEMLET_BENCH=OFF && cmake --build build-fuzz --target tokenizer_fuzz
//   build-fuzz/fuzz/tokenizer_fuzz -max_total_time=60
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "format/gemlet_file.h"
#include "format/tokenizer_json.h"
#include "text/chat_parser.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace {

gemlet::Tokenizer* g_tok = nullptr;

std::string TokenizerPath() {
  if (const char* p = std::getenv("GEMLET_TOKENIZER")) return p;
  if (const char* p = std::getenv("GEMLET_SHARED_DIR")) return std::string(p) + "/tokenizer/gemma4";
#ifdef GEMLET_SHARED_DIR
  return std::string(GEMLET_SHARED_DIR) + "/tokenizer/gemma4";  // the build's (fuzz/CMakeLists.txt)
#endif
  std::string here = __FILE__;  // .../main/fuzz/tokenizer_fuzz.cc
  for (int i = 0; i < 2; ++i) here = here.substr(0, here.find_last_of('/'));
  return here + "/../shared/tokenizer/gemma4";
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tokenizer_fuzz: %s\n", what.c_str());
  std::abort();
}

std::string ReplaceMarks(const std::string& s) {  // "▁" -> " "
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string path = TokenizerPath();
  auto file = gemlet::GemletFile::Open(path);  // a .gemlet, else a Hugging Face tokenizer
  if (file.ok()) {
    auto t = gemlet::Tokenizer::FromGemlet(**file);
    if (!t.ok()) Die(t.status().ToString());
    g_tok = new gemlet::Tokenizer(std::move(t).value());
    return 0;
  }
  auto info = gemlet::LoadHfTokenizer(path);
  if (!info.ok()) Die(path + ": " + info.status().ToString());
  auto t = gemlet::Tokenizer::Create(info->vocab, info->special);
  if (!t.ok()) Die(t.status().ToString());
  g_tok = new gemlet::Tokenizer(std::move(t).value());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemlet::Tokenizer& tok = *g_tok;
  const std::string text(reinterpret_cast<const char*>(data), size);

  auto ids = tok.Encode(text);
  if (!ids.ok()) Die("Encode failed: " + ids.status().ToString());
  for (int32_t id : *ids) {
    if (id < 0 || id >= tok.size()) Die("id outside the vocabulary");
  }
  if (!text.empty() && ids->empty()) Die("non-empty text gave no ids");

  // Every strategy gives the same ids.
  for (const gemlet::Tokenizer::EncodeTuning t : {gemlet::Tokenizer::EncodeTuning{1, false},
                                                  gemlet::Tokenizer::EncodeTuning{1 << 30, true}}) {
    tok.SetEncodeTuning(t);
    auto other = tok.Encode(text);
    tok.SetEncodeTuning({});
    if (!other.ok() || *other != *ids) Die("encoding strategies disagree");
  }

  for (bool skip : {false, true}) {
    auto decoded = tok.Decode(*ids, skip);
    if (!decoded.ok()) Die("Decode failed: " + decoded.status().ToString());
    if (!gemlet::utf8::IsValid(*decoded)) Die("Decode gave invalid UTF-8");
    gemlet::StreamDecoder stream(tok, skip);
    std::string streamed;
    for (int32_t id : *ids) {
      std::string piece;
      if (!stream.Push(id, &piece).ok()) Die("StreamDecoder::Push failed");
      if (!gemlet::utf8::IsValid(piece)) Die("a streamed piece is not valid UTF-8");
      streamed += piece;
    }
    stream.Flush(&streamed);
    if (streamed != *decoded) Die("streaming decode differs from Decode");
    if (!skip && gemlet::utf8::IsValid(text) && *decoded != ReplaceMarks(text)) {
      Die("valid UTF-8 did not round-trip");
    }
  }

  // The chat-output parser takes any text.
  const gemlet::ParsedOutput parsed = gemlet::ParseChatOutput(text);
  (void)parsed;
  return 0;
}
