#include "format/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace gemlet {

using gguf_detail::DecodeInt;
using gguf_detail::IntValue;
using gguf_detail::IsInteger;
using gguf_detail::Load;
using gguf_detail::Reader;
using gguf_detail::ScalarSize;
using gguf_detail::SkipValue;

namespace {
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
}  // namespace

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t GgufTensorInfo::rows() const { return cols() == 0 ? 0 : numel() / cols(); }

Status GgufFile::Parse() {
  auto bad = [&](const std::string& what) { return Corrupt(name_ + ": not a valid GGUF file: " + what); };
  Reader r(data_, size_);
  uint32_t magic = 0;
  if (!r.Get(&magic) || std::memcmp(&magic, "GGUF", 4) != 0) return bad("bad magic (expected \"GGUF\")");
  if (!r.Get(&version_)) return bad("truncated header");
  if (version_ == 1) return Unsupported(name_ + ": GGUF version 1 is not supported (versions 2 and 3 are)");
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xffff) == 0) {
      return Unsupported(name_ + ": big-endian GGUF files are not supported");
    }
    return Unsupported(name_ + ": GGUF version " + std::to_string(version_) + " is not supported");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  if (!r.Get(&n_tensors) || !r.Get(&n_kv)) return bad("truncated header");
  // Each key/value needs at least 13 bytes and each tensor info at least 24.
  if (n_kv > r.remaining() / 13) return bad("header claims " + std::to_string(n_kv) + " metadata entries");
  if (n_tensors > r.remaining() / 24) return bad("header claims " + std::to_string(n_tensors) + " tensors");

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string_view key;
    if (!r.String(&key))
      return bad("metadata entry #" + std::to_string(i) + ": key runs past the end of the file");
    const std::string k(key);
    uint32_t type = 0;
    if (!r.Get(&type)) return bad("metadata '" + k + "': truncated");
    GgufValue v;
    v.type = static_cast<GgufValueType>(type);
    const uint64_t start = r.pos();
    std::string why;
    if (!SkipValue(r, v.type, 0, &why)) return bad("metadata '" + k + "': " + why);
    v.raw = data_ + start;
    v.raw_size = r.pos() - start;
    if (v.type == GgufValueType::kArray) {
      uint32_t et;
      std::memcpy(&et, v.raw, 4);
      std::memcpy(&v.count, v.raw + 4, 8);
      v.elem_type = static_cast<GgufValueType>(et);
    }
    if (!values_.emplace(k, v).second) return bad("duplicate metadata key '" + k + "'");
    keys_.push_back(k);
  }

  if (const GgufValue* a = Find("general.alignment")) {
    if (a->type != GgufValueType::kU32) return bad("general.alignment is not a u32");
    alignment_ = Load<uint32_t>(a->raw);
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > (1u << 20)) {
      return bad("general.alignment " + std::to_string(alignment_) + " is not a power of two up to 1 MiB");
    }
  }

  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    std::string_view name;
    if (!r.String(&name))
      return bad("tensor info #" + std::to_string(i) + ": name runs past the end of the file");
    GgufTensorInfo t;
    t.name = std::string(name);
    const std::string tw = "tensor '" + t.name + "'";
    if (t.name.empty()) return bad("tensor info #" + std::to_string(i) + " has an empty name");
    uint32_t n_dims = 0;
    if (!r.Get(&n_dims)) return bad(tw + ": truncated info");
    if (n_dims > kMaxDims) return bad(tw + " has " + std::to_string(n_dims) + " dimensions (at most 4)");
    uint64_t numel = 1;
    std::vector<int64_t> ne(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (!r.Get(&ne[d])) return bad(tw + ": truncated info");
      if (ne[d] < 0 || ne[d] > (int64_t{1} << 40)) return bad(tw + " has dimension " + std::to_string(ne[d]));
      if (ne[d] != 0 && numel > (uint64_t{1} << 48) / static_cast<uint64_t>(ne[d])) {
        return bad(tw + " has too many elements");
      }
      numel *= static_cast<uint64_t>(ne[d]);
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    uint64_t rel = 0;
    if (!r.Get(&t.ggml_type) || !r.Get(&rel)) return bad(tw + ": truncated info");
    if (rel % alignment_ != 0) {
      return bad(tw + ": offset " + std::to_string(rel) + " is not a multiple of the alignment " +
                 std::to_string(alignment_));
    }
    int be = 0, bb = 0;
    if (GgmlTypeSize(t.ggml_type, &be, &bb)) {
      const int64_t inner = n_dims ? ne[0] : 1;
      if (inner % be != 0) {
        return bad(tw + ": innermost dimension " + std::to_string(inner) + " is not a multiple of the " +
                   GgmlTypeName(t.ggml_type) + " block size " + std::to_string(be));
      }
      t.known_type = true;
      t.nbytes = numel / be * bb;
    }
    t.offset = rel;  // relative until the data offset is known
    if (by_name_.count(t.name)) return bad("duplicate " + tw);
    by_name_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  const uint64_t end_of_infos = r.pos();
  data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t data_size = data_offset_ <= size_ ? size_ - data_offset_ : 0;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  ranges.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    GgufTensorInfo& t = tensors_[i];
    const uint64_t rel = t.offset;
    if (data_offset_ > size_ || rel > data_size || t.nbytes > data_size - rel) {
      return bad("tensor '" + t.name + "' data [" + std::to_string(data_offset_ + rel) + ", " +
                 std::to_string(data_offset_ + rel + t.nbytes) + ") lies past the end of the " +
                 std::to_string(size_) + "-byte file (truncated?)");
    }
    t.offset = data_offset_ + rel;
    t.data = data_ + t.offset;
    if (t.known_type && t.nbytes > 0) ranges.push_back({rel, rel + t.nbytes, i});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      return bad("tensors '" + tensors_[ranges[i - 1].index].name + "' and '" +
                 tensors_[ranges[i].index].name + "' overlap");
    }
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = values_.find(std::string(key));
  return it == values_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Result<const GgufValue*> GgufFile::Require(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound(name_ + ": metadata key " + std::string(key) + " is missing");
  return v;
}

namespace {
Status TypeError(const std::string& file, std::string_view key, const GgufValue& v, const char* wanted) {
  std::string got = GgufValueTypeName(v.type);
  if (v.type == GgufValueType::kArray) got += std::string(" of ") + GgufValueTypeName(v.elem_type);
  return InvalidArgument(file + ": metadata " + std::string(key) + " is " + got + ", expected " + wanted);
}
}  // namespace

Result<uint64_t> GgufFile::GetU64(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (!IsInteger(v->type)) return TypeError(name_, key, *v, "an unsigned integer");
  const IntValue iv = DecodeInt(v->type, v->raw);
  if (iv.negative) return TypeError(name_, key, *v, "a non-negative integer");
  return iv.magnitude;
}

Result<uint32_t> GgufFile::GetU32(std::string_view key) const {
  ASSIGN_OR_RETURN(uint64_t u, GetU64(key));
  if (u > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument(name_ + ": metadata " + std::string(key) + " = " + std::to_string(u) +
                           " does not fit in u32");
  }
  return static_cast<uint32_t>(u);
}

Result<int64_t> GgufFile::GetI64(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (!IsInteger(v->type)) return TypeError(name_, key, *v, "an integer");
  const IntValue iv = DecodeInt(v->type, v->raw);
  if (iv.magnitude > (iv.negative ? uint64_t{1} << 63 : uint64_t{INT64_MAX})) {
    return InvalidArgument(name_ + ": metadata " + std::string(key) + " does not fit in i64");
  }
  return iv.negative ? static_cast<int64_t>(0 - iv.magnitude) : static_cast<int64_t>(iv.magnitude);
}

Result<double> GgufFile::GetF64(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type == GgufValueType::kF32) return static_cast<double>(Load<float>(v->raw));
  if (v->type == GgufValueType::kF64) return Load<double>(v->raw);
  return TypeError(name_, key, *v, "a float");
}

Result<float> GgufFile::GetF32(std::string_view key) const {
  ASSIGN_OR_RETURN(double d, GetF64(key));
  return static_cast<float>(d);
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kBool) return TypeError(name_, key, *v, "a bool");
  return v->raw[0] != 0;
}

Result<std::string> GgufFile::GetString(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kString) return TypeError(name_, key, *v, "a string");
  return std::string(reinterpret_cast<const char*>(v->raw + 8), v->raw_size - 8);
}

Result<uint64_t> GgufFile::GetArrayLength(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kArray) return TypeError(name_, key, *v, "an array");
  return v->count;
}

Result<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kArray || v->elem_type != GgufValueType::kString) {
    return TypeError(name_, key, *v, "an array of string");
  }
  std::vector<std::string> out;
  out.reserve(v->count);
  Reader r(v->raw, v->raw_size, 12);
  for (uint64_t i = 0; i < v->count; ++i) {
    std::string_view s;
    r.String(&s);  // validated by Parse
    out.emplace_back(s);
  }
  return out;
}

Result<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kArray || !IsInteger(v->elem_type)) {
    return TypeError(name_, key, *v, "an array of integers");
  }
  const int sz = ScalarSize(v->elem_type);
  std::vector<int64_t> out(v->count);
  for (uint64_t i = 0; i < v->count; ++i) {
    const IntValue iv = DecodeInt(v->elem_type, v->raw + 12 + i * sz);
    if (!iv.negative && iv.magnitude > uint64_t{INT64_MAX}) {
      return InvalidArgument(name_ + ": metadata " + std::string(key) + "[" + std::to_string(i) +
                             "] does not fit in i64");
    }
    out[i] = iv.negative ? static_cast<int64_t>(0 - iv.magnitude) : static_cast<int64_t>(iv.magnitude);
  }
  return out;
}

Result<std::vector<float>> GgufFile::GetF32Array(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kArray ||
      (v->elem_type != GgufValueType::kF32 && v->elem_type != GgufValueType::kF64)) {
    return TypeError(name_, key, *v, "an array of f32");
  }
  std::vector<float> out(v->count);
  for (uint64_t i = 0; i < v->count; ++i) {
    out[i] = v->elem_type == GgufValueType::kF32 ? Load<float>(v->raw + 12 + i * 4)
                                                 : static_cast<float>(Load<double>(v->raw + 12 + i * 8));
  }
  return out;
}

Result<std::vector<bool>> GgufFile::GetBoolArray(std::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* v, Require(key));
  if (v->type != GgufValueType::kArray || v->elem_type != GgufValueType::kBool) {
    return TypeError(name_, key, *v, "an array of bool");
  }
  std::vector<bool> out(v->count);
  for (uint64_t i = 0; i < v->count; ++i) out[i] = v->raw[12 + i] != 0;
  return out;
}

Result<std::vector<GgufValue>> GgufFile::ArrayElements(const GgufValue& v) const {
  if (v.type != GgufValueType::kArray) return InvalidArgument(name_ + ": value is not an array");
  std::vector<GgufValue> out;
  out.reserve(v.count);
  Reader r(v.raw, v.raw_size, 12);
  for (uint64_t i = 0; i < v.count; ++i) {
    GgufValue e;
    e.type = v.elem_type;
    const uint64_t start = r.pos();
    std::string why;
    if (!SkipValue(r, e.type, 1, &why)) return Corrupt(name_ + ": " + why);
    e.raw = v.raw + start;
    e.raw_size = r.pos() - start;
    if (e.type == GgufValueType::kArray) {
      uint32_t et;
      std::memcpy(&et, e.raw, 4);
      std::memcpy(&e.count, e.raw + 4, 8);
      e.elem_type = static_cast<GgufValueType>(et);
    }
    out.push_back(e);
  }
  return out;
}

nlohmann::json GgufFile::ValueToJson(const GgufValue& v, uint64_t max_array) const {
  auto int_json = [](GgufValueType t, const uint8_t* p) -> nlohmann::json {
    const IntValue iv = DecodeInt(t, p);
    if (!iv.negative) return iv.magnitude;
    if (iv.magnitude <= (uint64_t{1} << 63)) return static_cast<int64_t>(0 - iv.magnitude);
    return nullptr;
  };
  switch (v.type) {
    case GgufValueType::kF32: {
      const float f = Load<float>(v.raw);
      return std::isfinite(f) ? nlohmann::json(f) : nlohmann::json(std::to_string(f));
    }
    case GgufValueType::kF64: {
      const double d = Load<double>(v.raw);
      return std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(std::to_string(d));
    }
    case GgufValueType::kBool:
      return v.raw[0] != 0;
    case GgufValueType::kString:
      return std::string(reinterpret_cast<const char*>(v.raw + 8), v.raw_size - 8);
    case GgufValueType::kArray: {
      nlohmann::json a = nlohmann::json::array();
      auto elems = ArrayElements(v);
      if (!elems.ok()) return nullptr;
      for (uint64_t i = 0; i < elems->size(); ++i) {
        if (i >= max_array) {
          a.push_back("... " + std::to_string(elems->size() - i) + " more");
          break;
        }
        a.push_back(ValueToJson((*elems)[i], max_array));
      }
      return a;
    }
    default:
      if (IsInteger(v.type)) return int_json(v.type, v.raw);
      return nullptr;
  }
}

}  // namespace gemlet
