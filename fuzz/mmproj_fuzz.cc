// libFuzzer target: llama.cpp's mmproj GGUF as `gemlet convert --mmproj` reads it
// (tools/convert/mmproj_import.h): the clip.* metadata, the tower configs and tensor tables,
// the patch embedding's permutation and per_dim_scale's inverse softplus, then every item's
// rows decoded. Nothing may crash or read outside the input.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/gguf.h"
#include "tools/convert/mmproj_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);
  auto f = gemlet::GgufFile::FromMemory(buf.data(), buf.size(), "fuzz.gguf");
  if (!f.ok()) return 0;
  // The text model of the seeds (tiny oracles: hidden size 64), with the image/audio pieces.
  gemlet::Vocab vocab;
  vocab.pieces = {"<pad>", "<|image>", "<|image|>", "<image|>", "<|audio>", "<|audio|>", "<audio|>"};
  auto towers = gemlet::convert::ReadMmproj(**f, 64, vocab);
  if (!towers.ok()) return 0;
  volatile float sink = 0;
  for (const auto* items : {&towers->vision_tensors, &towers->audio_tensors}) {
    for (const auto& item : *items) {
      const int64_t rows = item.src.rows(), cols = item.src.cols();
      if (rows <= 0 || cols <= 0 || cols > (1 << 20)) continue;
      std::vector<float> row(static_cast<size_t>(cols));
      gemlet::convert::DecodeRows(item.src, rows - 1, 1, row.data());  // the last row: the extent
      sink = sink + row[0];
    }
  }
  return 0;
}
