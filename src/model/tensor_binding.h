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
// Ok if the engine reads t's stored layout: row-major, or interleaved (q4x8 for a q4, q8x8 for
// a q8 tensor) when spec is a matrix (2-D), which the models read only through ops::MatMul,
// DequantizeWeightRow and GatherWeightRows (tables viewed with other row counts, like the
// vision position table, have other shapes). Part of FindChecked.
Status CheckLayout(const GemletFile& file, const TensorView& t, const TensorSpec& spec);
// A zero-copy view of a matrix.
ops::Weight ToWeight(const TensorView& t);
// The tensor's values as f32 (norm weights, scalars), whatever its layout.
std::vector<float> ToF32(const TensorView& t);

}  // namespace gemlet::model
