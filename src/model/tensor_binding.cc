#include "model/tensor_binding.h"

#include "kernels/ref/quant.h"

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
  if (t->layout != TensorLayout::kRowMajor &&
      !(t->layout == TensorLayout::kQ4x8 && t->type == TensorType::kQ4 && spec.shape.size() == 2)) {
    return Unsupported(file.path() + ": tensor '" + spec.name +
                       "' has a block layout this engine cannot read");
  }
  return t;
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
  const int64_t cols = t.cols();
  const uint64_t row_bytes = t.nbytes / static_cast<uint64_t>(t.rows());
  for (int64_t r = 0; r < t.rows(); ++r) {
    kernels::DequantizeRowRef(t.type, t.data + r * row_bytes, v.data() + r * cols, cols);
  }
  return v;
}

}  // namespace gemlet::model
