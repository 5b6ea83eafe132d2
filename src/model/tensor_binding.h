// Binding the tensors of a .gemlet file to a model's weights (Gemma4Model, Gemma4Drafter):
// one tensor looked up and checked against its spec, viewed as an ops::Weight or converted
// to f32.
#pragma once

#include <vector>

#include "base/status.h"
#include "format/gemlet_file.h"
#include "model/gemma4_tensors.h"
#include "ops/weight.h"

namespace gemlet::model {

// Looks up `spec` in the file and checks its shape and layout (errors name the file, the
// tensor and the shapes).
Result<const TensorView*> FindChecked(const GemletFile& file, const TensorSpec& spec);
// A zero-copy view of a matrix.
ops::Weight ToWeight(const TensorView& t);
// The tensor's values as f32 (norm weights, scalars).
std::vector<float> ToF32(const TensorView& t);

}  // namespace gemlet::model
