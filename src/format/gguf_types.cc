#include "format/gguf_types.h"

namespace gemlet {

namespace {

struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
  int block_elems;
  int block_bytes;
};
// ggml.h type numbering and ggml.c type_traits block sizes.
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},
};

const GgmlTypeInfo* FindGgmlType(uint32_t id) {
  for (const auto& t : kGgmlTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

}  // namespace

namespace gguf_detail {

int ScalarSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    default:
      return 0;
  }
}

bool IsInteger(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64:
      return true;
    default:
      return false;
  }
}

IntValue DecodeInt(GgufValueType t, const uint8_t* p) {
  auto s = [](int64_t v) {
    return v < 0 ? IntValue{true, static_cast<uint64_t>(-(v + 1)) + 1}
                 : IntValue{false, static_cast<uint64_t>(v)};
  };
  switch (t) {
    case GgufValueType::kU8:
      return {false, Load<uint8_t>(p)};
    case GgufValueType::kI8:
      return s(Load<int8_t>(p));
    case GgufValueType::kU16:
      return {false, Load<uint16_t>(p)};
    case GgufValueType::kI16:
      return s(Load<int16_t>(p));
    case GgufValueType::kU32:
      return {false, Load<uint32_t>(p)};
    case GgufValueType::kI32:
      return s(Load<int32_t>(p));
    case GgufValueType::kU64:
      return {false, Load<uint64_t>(p)};
    case GgufValueType::kI64:
      return s(Load<int64_t>(p));
    default:
      return {false, 0};
  }
}

// Skips one value of type `t` (the type tag already read); false with `why` set if malformed.
bool SkipValue(Reader& r, GgufValueType t, int depth, std::string* why) {
  if (const int sz = ScalarSize(t)) {
    if (!r.Skip(sz)) return *why = "value runs past the end of the file", false;
    return true;
  }
  if (t == GgufValueType::kString) {
    std::string_view s;
    if (!r.String(&s)) return *why = "string runs past the end of the file", false;
    return true;
  }
  if (t != GgufValueType::kArray) {
    return *why = "unknown value type " + std::to_string(static_cast<uint32_t>(t)), false;
  }
  if (depth >= kMaxArrayDepth) return *why = "arrays nested too deeply", false;
  uint32_t et = 0;
  uint64_t count = 0;
  if (!r.Get(&et) || !r.Get(&count)) return *why = "array header runs past the end of the file", false;
  const auto elem = static_cast<GgufValueType>(et);
  if (const int sz = ScalarSize(elem)) {
    if (count > r.remaining() / sz)
      return *why = "array of " + std::to_string(count) + " elements runs past the end of the file", false;
    r.Skip(count * sz);
    return true;
  }
  if (elem != GgufValueType::kString && elem != GgufValueType::kArray) {
    return *why = "array of unknown value type " + std::to_string(et), false;
  }
  const uint64_t min_size = elem == GgufValueType::kString ? 8 : 12;
  if (count > r.remaining() / min_size) {
    return *why = "array of " + std::to_string(count) + " elements runs past the end of the file", false;
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (!SkipValue(r, elem, depth + 1, why)) return false;
  }
  return true;
}

}  // namespace gguf_detail

const char* GgufValueTypeName(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
      return "u8";
    case GgufValueType::kI8:
      return "i8";
    case GgufValueType::kU16:
      return "u16";
    case GgufValueType::kI16:
      return "i16";
    case GgufValueType::kU32:
      return "u32";
    case GgufValueType::kI32:
      return "i32";
    case GgufValueType::kF32:
      return "f32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kU64:
      return "u64";
    case GgufValueType::kI64:
      return "i64";
    case GgufValueType::kF64:
      return "f64";
  }
  return "?";
}

std::string GgmlTypeName(uint32_t id) {
  const GgmlTypeInfo* t = FindGgmlType(id);
  return t ? t->name : "type " + std::to_string(id);
}

bool GgmlTypeSize(uint32_t id, int* block_elems, int* block_bytes) {
  const GgmlTypeInfo* t = FindGgmlType(id);
  if (!t) return false;
  *block_elems = t->block_elems;
  *block_bytes = t->block_bytes;
  return true;
}

std::optional<TensorType> GgmlToTensorType(uint32_t id) {
  switch (static_cast<GgmlType>(id)) {
    case GgmlType::kF32:
      return TensorType::kF32;
    case GgmlType::kF16:
      return TensorType::kF16;
    case GgmlType::kBF16:
      return TensorType::kBF16;
    case GgmlType::kQ8_0:
      return TensorType::kQ8;
    case GgmlType::kQ4_0:
      return TensorType::kQ4;
    default:
      return std::nullopt;
  }
}

}  // namespace gemlet
