#include "tools/convert/drafter_import.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "base/mapped_file.h"
#include "tools/convert/gguf_import.h"
#include "tools/convert/tensor_stream.h"

namespace gemlet::convert {

namespace fs = std::filesystem;

namespace {

enum class IdType { kI64, kI32, kF32 };

// `n` token ids (little-endian) that must be a permutation of [0, V); `what` names the tensor.
Result<std::vector<int64_t>> TokenOrdering(const uint8_t* data, IdType type, int64_t n, int64_t V,
                                           const std::string& what) {
  std::vector<int64_t> ids(n);
  std::vector<bool> seen(V, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = -1;
    if (type == IdType::kI64) {
      std::memcpy(&id, data + i * 8, 8);
    } else if (type == IdType::kI32) {
      int32_t v;
      std::memcpy(&v, data + i * 4, 4);
      id = v;
    } else {
      float f;
      std::memcpy(&f, data + i * 4, 4);
      if (f >= 0 && f < static_cast<float>(V) && f == std::floor(f)) id = static_cast<int64_t>(f);
    }
    if (id < 0 || id >= V || seen[id]) {
      return Corrupt(what + " is not a permutation of [0, " + std::to_string(V) + ") (entry " + std::to_string(i) +
                     " is " + std::to_string(id) + ")");
    }
    seen[id] = true;
    ids[i] = id;
  }
  return ids;
}

}  // namespace

bool IsHfDrafterFolder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return false;
  auto text = ReadFileToString((fs::path(folder) / "config.json").string());
  if (!text.ok()) return false;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("model_type", "") == "gemma4_assistant";
}

bool IsGgufDrafterFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  auto g = GgufFile::Open(path);
  if (!g.ok()) return false;
  auto arch = (*g)->GetString("general.architecture");
  return arch.ok() && *arch == "gemma4-assistant";
}

bool IsDrafterSource(const std::string& path) { return IsHfDrafterFolder(path) || IsGgufDrafterFile(path); }

Result<DrafterCheckpoint> LoadDrafter(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? LoadHfDrafter(path) : LoadGgufDrafter(path);
}

Result<DrafterCheckpoint> LoadHfDrafter(const std::string& folder) {
  DrafterCheckpoint ck;
  ck.source = folder;
  ck.format = "safetensors";
  const std::string config_path = (fs::path(folder) / "config.json").string();
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(config_path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Corrupt(config_path + ": not valid JSON");
  auto cfg = model::Gemma4DrafterConfig::FromJson(j);
  if (!cfg.ok()) return cfg.status().WithContext(config_path);
  ck.config = *cfg;
  ASSIGN_OR_RETURN(ck.safetensors, SafetensorsFolder::Open(folder));
  for (const auto& f : ck.safetensors->files()) ck.files.push_back(f->path());

  std::unordered_set<std::string> expected;
  for (const model::TensorSpec& spec : model::DrafterTensors(ck.config)) {
    expected.insert(spec.hf_name);
    const SafetensorsFolder::Entry* e = ck.safetensors->Find(spec.hf_name);
    if (!e) return NotFound(folder + ": drafter tensor " + spec.hf_name + " is missing from the checkpoint");
    if (e->tensor->shape != spec.shape) {
      return Corrupt(e->file->path() + ": tensor " + spec.hf_name + " has shape " + ShapeString(e->tensor->shape) +
                     " but the config needs " + ShapeString(spec.shape));
    }
    if (spec.cls == model::TensorClass::kTokenOrder) {
      const SafetensorsTensor& t = *e->tensor;
      if (t.dtype != "I64" || t.nbytes != static_cast<uint64_t>(t.numel()) * 8) {
        return Corrupt(e->file->path() + ": tensor " + spec.hf_name + " is " + t.dtype + ", expected I64 token ids");
      }
      ASSIGN_OR_RETURN(ck.token_ordering, TokenOrdering(t.data, IdType::kI64, t.numel(), ck.config.vocab_size,
                                                        e->file->path() + ": tensor " + spec.hf_name));
      continue;
    }
    ASSIGN_OR_RETURN(SourceTensor src, FromSafetensors(*e->file, *e->tensor));
    ck.tensors.push_back({spec, std::move(src)});
  }
  for (const auto& e : ck.safetensors->entries()) {
    if (expected.count(e.tensor->name) || e.tensor->name == "lm_head.weight") continue;  // (tied)
    return Corrupt(e.file->path() + ": unexpected tensor " + e.tensor->name + " " + ShapeString(e.tensor->shape) +
                   " (not part of a Gemma 4 drafter with this config)");
  }
  return ck;
}

Result<DrafterCheckpoint> LoadGgufDrafter(const std::string& path) {
  DrafterCheckpoint ck;
  ck.source = path;
  ck.format = "gguf";
  ck.files = {path};
  ASSIGN_OR_RETURN(ck.gguf, GgufFile::Open(path));
  const GgufFile& g = *ck.gguf;
  ASSIGN_OR_RETURN(nlohmann::json j, GgufDrafterConfig(g));
  auto cfg = model::Gemma4DrafterConfig::FromJson(j);
  if (!cfg.ok()) return cfg.status().WithContext(path);
  ck.config = *cfg;
  std::unordered_set<std::string> expected = {"rope_freqs.weight"};  // (read into the config)
  for (const model::TensorSpec& spec : model::DrafterTensors(ck.config)) {
    expected.insert(spec.gguf_name);
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, FindGgufTensor(g, spec, "drafter tensor"));
    if (spec.cls == model::TensorClass::kTokenOrder) {
      const auto type = static_cast<GgmlType>(t->ggml_type);
      if (type != GgmlType::kF32 && type != GgmlType::kI32 && type != GgmlType::kI64) {
        return Corrupt(path + ": tensor " + spec.gguf_name + " is " + t->type_name() +
                       ", expected token ids (F32, I32 or I64)");
      }
      const IdType ids = type == GgmlType::kF32 ? IdType::kF32 : type == GgmlType::kI32 ? IdType::kI32 : IdType::kI64;
      ASSIGN_OR_RETURN(ck.token_ordering,
                       TokenOrdering(t->data, ids, t->numel(), ck.config.vocab_size,
                                     path + ": tensor " + spec.gguf_name));
      continue;
    }
    ASSIGN_OR_RETURN(SourceTensor src, FromGguf(g, *t));
    ck.tensors.push_back({spec, std::move(src)});
  }
  RETURN_IF_ERROR(CheckNoOtherGgufTensors(
      g, [&](const std::string& name) { return expected.count(name) > 0; }, "a Gemma 4 drafter"));
  if (!ck.config.use_ordered_embeddings) {
    ck.note = path + " has no sparse head (no " + model::kDrafterGgufCentroids + " / " +
              model::kDrafterGgufTokenOrdering +
              ": llama.cpp's converter leaves them out); the drafter uses the dense head, the whole " +
              std::to_string(ck.config.vocab_size) + "-token vocabulary per draft step";
  }
  return ck;
}

Status WriteDrafterTensors(GemletWriter& w, const DrafterCheckpoint& ck, const QuantPlan& plan, ThreadPool& pool,
                           ConvertReport* report) {
  for (const auto& item : ck.tensors) {
    const TensorType type = PlanType(plan, item.spec.cls, LosslessType(item.src.type));
    if (!StoredBytes(type, item.spec.shape).ok()) {
      return InvalidArgument(ck.source + ": drafter tensor " + item.spec.name + " " + ShapeString(item.spec.shape) +
                             " cannot be stored as " + TensorTypeName(type) + "; choose another --type for class " +
                             model::TensorClassName(item.spec.cls));
    }
    RETURN_IF_ERROR(StreamTensor(w, item.spec.name, item.spec.shape, item.src, type, pool, nullptr));
    report->tensors.push_back({item.spec.name, SourceTypeName(item.src.type), TensorTypeName(type),
                               StoredBytes(type, item.spec.shape).value(), false});
  }
  if (!ck.token_ordering.empty()) {
    std::vector<float> ids(ck.token_ordering.begin(), ck.token_ordering.end());  // exact: V < 2^24
    const std::string name = std::string(model::kDrafterPrefix) + "token_ordering";
    RETURN_IF_ERROR(w.AddTensor(name, TensorType::kF32, {static_cast<int64_t>(ids.size())}, ids.data(),
                                ids.size() * sizeof(float)));
    report->tensors.push_back({name, "I64", "f32", ids.size() * sizeof(float), false});
  }
  return Status::Ok();
}

}  // namespace gemlet::convert
