#include "model/tensor_binding.h"

namespace gemlet::model {

namespace {
std::string ShapeString(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

// Looks up `spec` in the file and checks its shape and layout.
Result<const TensorView*> FindChecked(const GemletFile& file, const TensorSpec& spec) {
  const TensorView* t = file.Find(spec.name);
  if (!t) return NotFound(file.path() + ": tensor '" + spec.name + "' is missing");
  if (t->shape != spec.shape) {
    return InvalidArgument(file.path() + ": tensor '" + spec.name + "' has shape " + ShapeString(t->shape) +
                           ", the config needs " + ShapeString(spec.shape));
  }
  RETURN_IF_ERROR(CheckLayout(file, *t, spec));
  return t;
}

Status CheckLayout(const GemletFile& file, const TensorView& t, const TensorSpec& spec) {
  const bool interleaved_matrix =
      spec.shape.size() == 2 && ((t.layout == TensorLayout::kQ4x8 && t.type == TensorType::kQ4) ||
                                 (t.layout == TensorLayout::kQ8x8 && t.type == TensorType::kQ8));
  if (t.layout != TensorLayout::kRowMajor && !interleaved_matrix) {
    return Unsupported(file.path() + ": tensor '" + spec.name + "' has a block layout (" + TensorLayoutName(t.layout) +
                       ") this engine cannot read");
  }
  return Status::Ok();
}

ops::Weight ToWeight(const TensorView& t) {
  ops::Weight w;
  w.type = t.type;
  w.layout = t.layout;
  w.cols = t.cols();
  w.rows = t.rows();
  w.row_bytes = t.nbytes / static_cast<uint64_t>(w.rows);
  w.data = t.data;
  return w;
}

std::vector<float> ToF32(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  const ops::Weight w = ToWeight(t);
  for (int64_t r = 0; r < w.rows; ++r) ops::DequantizeWeightRow(w, r, v.data() + r * w.cols);
  return v;
}

}  // namespace gemlet::model
