#include "format/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace gemlet {

namespace {

struct DtypeSize {
  const char* name;
  int bytes;
};
// The dtypes of the safetensors specification with a whole number of bytes per element.
constexpr DtypeSize kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
    {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},
};

constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr uint64_t kMaxElements = uint64_t{1} << 48;

}  // namespace

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int SafetensorsDtypeBytes(std::string_view dtype) {
  for (const auto& d : kDtypes) {
    if (dtype == d.name) return d.bytes;
  }
  return 0;
}

const SafetensorsTensor* SafetensorsFile::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Result<TensorType> SafetensorsFile::FloatType(const SafetensorsTensor& t) const {
  if (t.dtype == "F32") return TensorType::kF32;
  if (t.dtype == "F16") return TensorType::kF16;
  if (t.dtype == "BF16") return TensorType::kBF16;
  return Unsupported(name_ + ": tensor '" + t.name + "' has dtype " + t.dtype +
                     ", but only F32, F16 and BF16 can be converted");
}

Status SafetensorsFile::Parse() {
  auto bad = [&](const std::string& what) {
    return Corrupt(name_ + ": not a valid safetensors file: " + what);
  };
  if (size_ < 8) {
    return bad("file is " + std::to_string(size_) + " bytes, shorter than the 8-byte header length");
  }
  uint64_t n = 0;
  std::memcpy(&n, data_, 8);
  if (n > kMaxHeaderBytes) return bad("header length " + std::to_string(n) + " is above 100 MiB");
  if (n > size_ - 8) {
    return bad("header length " + std::to_string(n) + " runs past the end of the " + std::to_string(size_) +
               "-byte file (truncated?)");
  }
  const char* hp = reinterpret_cast<const char*>(data_ + 8);
  nlohmann::json header = nlohmann::json::parse(hp, hp + n, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return bad("header is not a JSON object");

  const uint64_t data_start = 8 + n;
  const uint64_t data_size = size_ - data_start;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  tensors_.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) return bad("\"__metadata__\" is not an object");
      metadata_ = v;
      continue;
    }
    const std::string tw = "tensor '" + key + "'";
    if (!v.is_object()) return bad(tw + " is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) return bad(tw + " has no string \"dtype\"");
    if (sh == v.end() || !sh->is_array()) return bad(tw + " has no \"shape\" array");
    if (off == v.end() || !off->is_array() || off->size() != 2) {
      return bad(tw + " has no two-element \"data_offsets\"");
    }
    SafetensorsTensor t;
    t.name = key;
    t.dtype = dt->get<std::string>();
    t.element_bytes = SafetensorsDtypeBytes(t.dtype);
    if (sh->size() > 8) return bad(tw + " has " + std::to_string(sh->size()) + " dimensions");
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) return bad(tw + " has a shape entry that is not a non-negative integer");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(kMaxDim)) return bad(tw + " has dimension " + std::to_string(dim));
      if (dim != 0 && numel > kMaxElements / dim) return bad(tw + " has too many elements");
      numel *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    const auto& o0 = (*off)[0];
    const auto& o1 = (*off)[1];
    if (!o0.is_number_unsigned() || !o1.is_number_unsigned()) {
      return bad(tw + ": data_offsets are not non-negative integers");
    }
    const uint64_t b = o0.get<uint64_t>(), e = o1.get<uint64_t>();
    if (b > e)
      return bad(tw + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] are reversed");
    if (e > data_size) {
      return bad(tw + ": data_offsets end " + std::to_string(e) + " lies past the " +
                 std::to_string(data_size) + "-byte data area (truncated?)");
    }
    if (t.element_bytes > 0 && e - b != numel * static_cast<uint64_t>(t.element_bytes)) {
      return bad(tw + ": data_offsets span " + std::to_string(e - b) + " bytes but " + t.dtype + " × " +
                 std::to_string(numel) + " elements need " +
                 std::to_string(numel * static_cast<uint64_t>(t.element_bytes)));
    }
    t.offset = data_start + b;
    t.nbytes = e - b;
    t.data = data_ + t.offset;
    ranges.push_back({b, e, tensors_.size()});
    by_name_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      return bad("tensors '" + tensors_[ranges[i - 1].index].name + "' and '" +
                 tensors_[ranges[i].index].name + "' overlap");
    }
  }
  // Keep the tensors in file order (the JSON object is sorted by name).
  std::vector<SafetensorsTensor> ordered;
  ordered.reserve(tensors_.size());
  for (const Range& r : ranges) ordered.push_back(std::move(tensors_[r.index]));
  tensors_ = std::move(ordered);
  by_name_.clear();
  for (size_t i = 0; i < tensors_.size(); ++i) by_name_.emplace(tensors_[i].name, i);
  return Status::Ok();
}

// ---- folder ----

const SafetensorsFolder::Entry* SafetensorsFolder::Find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

Status SafetensorsFolder::AddFile(std::unique_ptr<SafetensorsFile> f) {
  for (const auto& t : f->tensors()) {
    auto it = by_name_.find(t.name);
    if (it != by_name_.end()) {
      return Corrupt("tensor '" + t.name + "' is in both " + entries_[it->second].file->path() + " and " +
                     f->path());
    }
    by_name_.emplace(t.name, entries_.size());
    entries_.push_back({f.get(), &t});
  }
  files_.push_back(std::move(f));
  return Status::Ok();
}

Result<std::unique_ptr<SafetensorsFolder>> SafetensorsFolder::Open(const std::string& folder) {
  namespace fs = std::filesystem;
  std::unique_ptr<SafetensorsFolder> out(new SafetensorsFolder());
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return NotFound(folder + ": not a folder");
  const fs::path dir(folder);
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(index.string()));
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return Corrupt(index.string() + ": not a JSON object with a \"weight_map\" object");
    }
    // Shards in order of first mention; each must exist and hold exactly what the map says.
    std::vector<std::string> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) {
        return Corrupt(index.string() + ": weight_map entry '" + it.key() + "' is not a file name");
      }
      const std::string shard = it.value().get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
        return Corrupt(index.string() + ": weight_map names an invalid shard '" + shard + "'");
      }
      if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.push_back(shard);
    }
    std::sort(shards.begin(), shards.end());
    for (const std::string& s : shards) {
      const fs::path p = dir / s;
      if (!fs::exists(p, ec)) {
        return NotFound(index.string() + ": shard " + s + " named in weight_map does not exist");
      }
      ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(p.string()));
      RETURN_IF_ERROR(out->AddFile(std::move(f)));
    }
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      const Entry* e = out->Find(it.key());
      const std::string shard = it.value().get<std::string>();
      if (!e || fs::path(e->file->path()).filename().string() != shard) {
        return Corrupt(index.string() + ": weight_map puts tensor '" + it.key() + "' in " + shard +
                       ", which does not hold it");
      }
    }
    return out;
  }
  const fs::path single = dir / "model.safetensors";
  std::vector<std::string> files;
  if (fs::exists(single, ec)) {
    files.push_back(single.string());
  } else {
    for (const auto& de : fs::directory_iterator(dir, ec)) {
      if (de.path().extension() == ".safetensors") files.push_back(de.path().string());
    }
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) return NotFound(folder + ": no model.safetensors or *.safetensors files");
  for (const std::string& p : files) {
    ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(p));
    RETURN_IF_ERROR(out->AddFile(std::move(f)));
  }
  return out;
}

}  // namespace gemlet
