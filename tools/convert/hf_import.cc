#include "tools/convert/hf_import.h"

#include <filesystem>
#include <unordered_set>

#include "format/tokenizer_json.h"
#include "model/gemma4_audio_tensors.h"
#include "model/gemma4_vision_tensors.h"

namespace gemlet::convert {

namespace fs = std::filesystem;

Result<nlohmann::json> HfTextConfig(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + ": not a JSON object");
  if (auto mt = j.find("model_type"); mt != j.end() && mt->is_string()) {
    const std::string t = mt->get<std::string>();
    if (t != "gemma4" && t != "gemma4_text") {
      return Unsupported(where + ": model_type '" + t + "' is not gemma4");
    }
  }
  if (auto tc = j.find("text_config"); tc != j.end()) {
    if (!tc->is_object()) return InvalidArgument(where + ": \"text_config\" is not an object");
    return *tc;
  }
  return j;
}

Result<Checkpoint> LoadHfCheckpoint(const std::string& folder) {
  Checkpoint ck;
  ck.source = folder;
  ck.format = "safetensors";
  const fs::path dir(folder);
  const std::string config_path = (dir / "config.json").string();
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(config_path));
  ck.full_config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (ck.full_config.is_discarded()) return Corrupt(config_path + ": not valid JSON");
  ASSIGN_OR_RETURN(nlohmann::json text_config, HfTextConfig(ck.full_config, config_path));
  auto cfg = model::Gemma4Config::FromJson(text_config);
  if (!cfg.ok()) return cfg.status().WithContext(config_path);
  ck.config = *cfg;

  ASSIGN_OR_RETURN(ck.safetensors, SafetensorsFolder::Open(folder));
  for (const auto& f : ck.safetensors->files()) ck.files.push_back(f->path());

  std::unordered_set<std::string> expected;
  for (const model::TensorSpec& spec : model::ExpectedTensors(ck.config)) {
    expected.insert(spec.hf_name);
    const SafetensorsFolder::Entry* e = ck.safetensors->Find(spec.hf_name);
    if (!e) {
      return NotFound(folder + ": tensor " + spec.hf_name + " is missing from the checkpoint");
    }
    if (e->tensor->shape != spec.shape) {
      return Corrupt(e->file->path() + ": tensor " + spec.hf_name + " has shape " +
                     ShapeString(e->tensor->shape) + " but the config needs " + ShapeString(spec.shape));
    }
    ASSIGN_OR_RETURN(SourceTensor src, FromSafetensors(*e->file, *e->tensor));
    ck.tensors.push_back({spec, std::move(src)});
  }
  if (model::HasVisionConfig(ck.full_config)) {
    auto vcfg = model::Gemma4VisionConfig::FromHfConfig(ck.full_config);
    if (!vcfg.ok()) return vcfg.status().WithContext(config_path);
    ck.vision = vcfg->ToJson();
    for (const model::TensorSpec& spec : model::ExpectedVisionTensors(*vcfg)) {
      const SafetensorsFolder::Entry* e = ck.safetensors->Find(spec.hf_name);
      // A clip bound the checkpoint lacks stays unbounded, as HF's ±inf buffer defaults do.
      if (!e && spec.cls == model::TensorClass::kScalar) continue;
      if (!e) return NotFound(folder + ": vision tensor " + spec.hf_name + " is missing from the checkpoint");
      // Clip bounds are 0-d in HF; stored as [1].
      const bool scalar_ok = spec.shape == std::vector<int64_t>{1} && e->tensor->shape.empty();
      if (e->tensor->shape != spec.shape && !scalar_ok) {
        return Corrupt(e->file->path() + ": vision tensor " + spec.hf_name + " has shape " +
                       ShapeString(e->tensor->shape) + " but the vision config needs " + ShapeString(spec.shape));
      }
      ASSIGN_OR_RETURN(SourceTensor src, FromSafetensors(*e->file, *e->tensor));
      ck.vision_tensors.push_back({spec, std::move(src)});
    }
  }
  if (model::HasAudioConfig(ck.full_config)) {
    auto acfg = model::Gemma4AudioConfig::FromHfConfig(ck.full_config);
    if (!acfg.ok()) return acfg.status().WithContext(config_path);
    std::string missing;  // the first tensor that keeps the tower from being whole
    std::vector<Checkpoint::Item> items;
    for (const model::TensorSpec& spec : model::ExpectedAudioTensors(*acfg)) {
      const SafetensorsFolder::Entry* e = ck.safetensors->Find(spec.hf_name);
      if (!e && spec.cls == model::TensorClass::kScalar) continue;  // unbounded, as HF's ±inf defaults
      if (!e) {
        missing = spec.hf_name + " is missing";
        break;
      }
      const bool scalar_ok = spec.shape == std::vector<int64_t>{1} && e->tensor->shape.empty();
      if (e->tensor->shape != spec.shape && !scalar_ok) {
        missing = spec.hf_name + " has shape " + ShapeString(e->tensor->shape) + ", the audio config needs " +
                  ShapeString(spec.shape);
        break;
      }
      ASSIGN_OR_RETURN(SourceTensor src, FromSafetensors(*e->file, *e->tensor));
      items.push_back({spec, std::move(src)});
    }
    if (missing.empty()) {
      ck.audio = acfg->ToJson();
      ck.audio_tensors = std::move(items);
    } else {
      ck.audio_note = "the audio tower is not converted: " + missing;
    }
  }
  const std::string text_prefix = model::kHfTextPrefix;
  for (const auto& e : ck.safetensors->entries()) {
    const std::string& name = e.tensor->name;
    if (expected.count(name)) continue;
    if (!model::IsSkippedHfTensor(ck.config, name)) {
      return Corrupt(e.file->path() + ": unexpected text tensor " + name + " " +
                     ShapeString(e.tensor->shape) + " (not part of a Gemma 4 text model with this config)");
    }
    if (name.compare(0, text_prefix.size(), text_prefix) != 0 && name != "lm_head.weight") {
      ck.multimodal.push_back(e);
    }
  }

  ASSIGN_OR_RETURN(ck.tokenizer, LoadHfTokenizer(folder));
  if (ck.tokenizer.vocab.size() > static_cast<size_t>(ck.config.vocab_size)) {
    return InvalidArgument(folder + ": the tokenizer has " + std::to_string(ck.tokenizer.vocab.size()) +
                           " pieces but the model's vocab_size is " + std::to_string(ck.config.vocab_size));
  }
  return ck;
}

}  // namespace gemlet::convert
