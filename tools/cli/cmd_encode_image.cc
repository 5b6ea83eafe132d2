// gemlet encode-image: the soft tokens of one image (the vision tower and embed_vision), as a
// NumPy file, for checking the tower against a reference.
#include <cstdio>
#include <string>

#include "base/clock.h"
#include "format/npy.h"
#include "model/gemma4_image.h"
#include "runtime/engine.h"
#include "tools/cli/command.h"
#include "tools/cli/image_input.h"

namespace gemlet::cli {
namespace cmd_encode_image {

constexpr char kUsage[] =
    R"(usage: gemlet encode-image -m MODEL.gemlet --image FILE -o SOFT.npy [--image-tokens N]
                           [--no-resize] [--exact] [--threads N]

Decodes the image (JPEG, PNG or WebP; EXIF orientation applied), resizes it as Hugging Face's
Gemma 4 processor does for the soft-token budget, runs the vision tower and embed_vision, and
writes the soft tokens as float32 [n_soft, hidden] to a NumPy .npy file.

flags:
  -m, --model FILE    a .gemlet model converted from a checkpoint with a vision tower
  --image FILE        the image
  -o, --out FILE      output .npy file
  --image-tokens N    soft-token budget: 70, 140, 280 (default), 560 or 1120
  --no-resize         take the image at its own size (both sides multiples of 48)
  --exact             f32 math over dequantized weights (the reference path)
  --threads N         worker threads (default: all cores)

examples:
  gemlet encode-image -m e2b.gemlet --image cat.jpg -o cat.npy
  gemlet encode-image -m tiny.gemlet --image resized.png --no-resize --exact -o soft.npy
)";

int Run(Flags& flags) {
  const std::string model = flags.Str({"-m", "--model"}, "");
  const std::string image = flags.Str({"--image"}, "");
  const std::string out = flags.Str({"-o", "--out"}, "");
  auto budget = flags.Int({"--image-tokens"}, 280);
  auto threads = flags.Int({"--threads"}, 0);
  const bool no_resize = flags.Bool({"--no-resize"});
  const bool exact = flags.Bool({"--exact"});
  if (!budget.ok()) return UsageError("encode-image", budget.status().message());
  if (!threads.ok()) return UsageError("encode-image", threads.status().message());
  if (Status st = flags.Finish(); !st.ok()) return UsageError("encode-image", st.message());
  if (!flags.Positional().empty())
    return UsageError("encode-image", "unexpected argument '" + flags.Positional()[0] + "'");
  if (model.empty()) return UsageError("encode-image", "-m MODEL is required");
  if (image.empty()) return UsageError("encode-image", "--image FILE is required");
  if (out.empty()) return UsageError("encode-image", "-o SOFT.npy is required");
  if (!model::IsSupportedImageTokenBudget(*budget))
    return UsageError("encode-image", "--image-tokens must be 70, 140, 280, 560 or 1120");
  if (*threads < 0 || *threads > 1024) return UsageError("encode-image", "--threads must be in [0, 1024]");

  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  auto engine = runtime::Engine::Open(model, eo);
  if (!engine.ok()) return ReportError("encode-image", engine.status());
  auto vision = model::Gemma4Vision::Bind((*engine)->file());
  if (!vision.ok()) return ReportError("encode-image", vision.status());
  const auto t0 = SteadyClock::now();
  auto enc = EncodeImageFile(**engine, **vision, image, ImageFlags{*budget, !no_resize});
  if (!enc.ok()) return ReportError("encode-image", enc.status());
  const double ms = MsSince(t0);
  const int64_t D = (*vision)->config().text_hidden_size;
  if (Status st = WriteNpyF32(out, enc->soft.data(), {enc->n_soft, D}); !st.ok()) return ReportError("encode-image", st);
  std::printf("wrote %s: float32 [%lld, %lld] from %lldx%lld pixels, %s, %d threads, %.1f ms\n", out.c_str(),
              static_cast<long long>(enc->n_soft), static_cast<long long>(D), static_cast<long long>(enc->width),
              static_cast<long long>(enc->height), ops::MatMulModeName((*engine)->mode()), (*engine)->threads(), ms);
  return kExitOk;
}

}  // namespace cmd_encode_image

GEMLET_COMMAND(encode_image, "encode-image", "write the soft tokens of an image (vision tower) to a .npy file",
               cmd_encode_image::kUsage, cmd_encode_image::Run);

}  // namespace gemlet::cli
