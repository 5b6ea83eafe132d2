// libFuzzer target: the session-file loader of `gemlet chat` /load (runtime/session_file.h)
// on the tiny synthetic model. The input is the body of a file: the target writes the fixed
// header (magic, version, this model's fingerprint and source hash) before it and the FNV-1a
// checksum after it, so mutations reach the conversation JSON, the token list and the KV rows
// instead of stopping at the first check. Whatever the input, loading must not crash, read
// out of bounds or leak, and a session that loads must decode one more token.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/session.h"
#include "runtime/session_file.h"
#include "tools/convert/convert.h"
#include "tools/convert/synth.h"

namespace {

struct Fixture {
  std::unique_ptr<gemlet::runtime::Engine> engine;
  std::string header;
};

template <typename T>
void Put(std::string* s, T v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

Fixture* MakeFixture() {
  char tmpl[] = "/tmp/gemlet-session-fuzz-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  const std::string dir = tmpl;
  gemlet::convert::SynthOptions so;
  so.out_dir = dir + "/src";
  so.threads = 1;
  gemlet::convert::ConvertOptions co;
  co.src = so.out_dir;
  co.out = dir + "/tiny.gemlet";
  co.progress = false;
  co.threads = 1;
  if (!gemlet::convert::Synthesize(so).ok() || !gemlet::convert::Convert(co).ok()) std::abort();
  gemlet::runtime::EngineOptions eo;
  eo.threads = 1;
  auto engine = gemlet::runtime::Engine::Open(co.out, eo);
  if (!engine.ok()) std::abort();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // the engine keeps its mapping

  auto* f = new Fixture;
  f->engine = std::move(*engine);
  f->header = std::string("GEMLETSS", 8);
  Put<uint32_t>(&f->header, gemlet::runtime::kSessionFileVersion);
  Put<uint32_t>(&f->header, 0);
  Put<uint64_t>(&f->header, gemlet::runtime::ModelFingerprint(f->engine->file()));
  const auto& meta = f->engine->file().metadata();
  const std::string sha = meta.contains("provenance") ? meta["provenance"].value("source_sha256", "") : "";
  Put<uint32_t>(&f->header, static_cast<uint32_t>(sha.size()));
  f->header += sha;
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fx = MakeFixture();
  std::string file = fx->header;
  file.append(reinterpret_cast<const char*>(data), size);
  Put<uint64_t>(&file, gemlet::runtime::SessionFileChecksum(file.data(), file.size()));
  // A private copy, so ASan sees the exact extent of the image.
  std::vector<uint8_t> buf(file.begin(), file.end());
  gemlet::runtime::Session session(*fx->engine, gemlet::runtime::SessionOptions{64, 16});
  auto r = gemlet::runtime::LoadSessionBytes(buf.data(), buf.size(), "fuzz.session", &session);
  if (r.ok() && session.position() < session.context_limit()) {
    std::vector<float> logits;
    if (!session.Decode(0, &logits).ok()) std::abort();  // a loaded session is usable
  }
  return 0;
}
