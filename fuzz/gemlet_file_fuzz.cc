// libFuzzer target: the .gemlet reader (GemletFile::FromMemory) on arbitrary bytes. Whatever
// the input, parsing must not crash or read out of bounds, and everything it accepts must be
// usable: every tensor's bytes, the vocabulary and the metadata.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "format/gemlet_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A private copy, so ASan sees the exact extent of the image.
  std::vector<uint8_t> buf(data, data + size);
  auto f = gemlet::GemletFile::FromMemory(buf.data(), buf.size(), "fuzz.gemlet");
  if (!f.ok()) return 0;
  const gemlet::GemletFile& g = **f;
  volatile uint8_t sink = 0;
  for (const auto& t : g.tensors()) {
    if (t.nbytes > 0) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];
    (void)t.rows();
    (void)g.Find(t.name);
  }
  const gemlet::Vocab v = g.ReadVocab();
  for (size_t i = 0; i < v.size(); ++i) sink = sink ^ static_cast<uint8_t>(v.pieces[i].size());
  for (const auto& m : v.merges)
    sink = sink ^ static_cast<uint8_t>(v.pieces.at(m.first).size() + v.pieces.at(m.second).size());
  (void)g.metadata().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
