#include "tools/cli/image_input.h"

#include "format/image_decode.h"
#include "model/gemma4_image.h"

namespace gemlet::cli {

Result<EncodedImage> EncodeImageFile(const runtime::Engine& engine, const model::Gemma4Vision& vision,
                                     const std::string& path, const ImageFlags& flags) {
  ASSIGN_OR_RETURN(RgbImage img, DecodeImageFile(path));
  auto in = model::PreprocessImage(img, flags.tokens, flags.resize, vision.config());
  if (!in.ok()) return in.status().WithContext(path);
  EncodedImage out;
  out.height = in->grid_h * vision.config().patch_size;
  out.width = in->grid_w * vision.config().patch_size;
  RETURN_IF_ERROR(vision.Encode(*in, engine.mode(), engine.pool(), &out.soft).WithContext(path));
  out.n_soft = vision.n_soft(*in);
  return out;
}

}  // namespace gemlet::cli
