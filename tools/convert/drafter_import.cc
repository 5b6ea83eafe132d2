#include "tools/convert/drafter_import.h"

#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "base/mapped_file.h"
#include "tools/convert/tensor_stream.h"

namespace gemlet::convert {

namespace fs = std::filesystem;

bool IsHfDrafterFolder(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return false;
  auto text = ReadFileToString((fs::path(folder) / "config.json").string());
  if (!text.ok()) return false;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("model_type", "") == "gemma4_assistant";
}

Result<DrafterCheckpoint> LoadHfDrafter(const std::string& folder) {
  DrafterCheckpoint ck;
  ck.source = folder;
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
      const int64_t V = ck.config.vocab_size;
      std::vector<bool> seen(V, false);
      ck.token_ordering.resize(t.numel());
      for (int64_t i = 0; i < t.numel(); ++i) {
        int64_t id;
        std::memcpy(&id, t.data + i * 8, 8);  // little-endian, as safetensors stores it
        if (id < 0 || id >= V || seen[id]) {
          return Corrupt(e->file->path() + ": tensor " + spec.hf_name + " is not a permutation of [0, " +
                         std::to_string(V) + ") (entry " + std::to_string(i) + " is " + std::to_string(id) + ")");
        }
        seen[id] = true;
        ck.token_ordering[i] = id;
      }
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
