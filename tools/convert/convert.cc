// The conversion driver: open the checkpoint (hf_import / gguf_import), choose each tensor's
// type (quant_plan), stream the tensors into the .gemlet writer (tensor_stream), then write the
// metadata: config, tokenizer, chat template, provenance and the plan.
#include "tools/convert/convert.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <set>

#include "base/clock.h"
#include "base/thread_pool.h"
#include "format/gemlet_writer.h"
#include "tools/convert/drafter_import.h"
#include "tools/convert/gguf_import.h"
#include "tools/convert/hf_import.h"
#include "tools/convert/mmproj_import.h"
#include "tools/convert/progress.h"
#include "tools/convert/quant_plan.h"
#include "tools/convert/sha256.h"
#include "tools/convert/tensor_stream.h"

namespace gemlet::convert {

namespace fs = std::filesystem;

namespace {

Result<Checkpoint> OpenCheckpoint(const std::string& src) {
  std::error_code ec;
  if (fs::is_directory(src, ec)) return LoadHfCheckpoint(src);
  if (!fs::exists(src, ec)) return NotFound(src + ": no such file or folder");
  ASSIGN_OR_RETURN(auto map, MappedFile::Open(src));
  if (map->size() >= 4 && std::memcmp(map->data(), "GGUF", 4) == 0) return LoadGgufCheckpoint(src);
  if (fs::path(src).extension() == ".safetensors") {
    return InvalidArgument(
        src + ": give the checkpoint folder (with config.json and the tokenizer), not the .safetensors file");
  }
  return InvalidArgument(src + ": neither a GGUF file nor a Hugging Face checkpoint folder");
}

std::string IsoTimeNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// sha256 of each weight file: one hex string, or {file name: hex} for several shards.
Result<nlohmann::json> HashFiles(const std::vector<std::string>& files, const std::atomic<bool>* cancel) {
  if (files.size() == 1) {
    ASSIGN_OR_RETURN(std::string h, Sha256File(files[0], cancel));
    return nlohmann::json(h);
  }
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& f : files) {
    ASSIGN_OR_RETURN(std::string h, Sha256File(f, cancel));
    out[fs::path(f).filename().string()] = h;
  }
  return out;
}

std::string Absolute(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

// The multimodal tensors of an HF checkpoint, at their source types (0-d tensors as [1]).
Status WriteMultimodal(const Checkpoint& ck, const std::string& out, const nlohmann::json& provenance,
                       ThreadPool& pool, ConvertReport* report) {
  ASSIGN_OR_RETURN(auto w, GemletWriter::Create(out));
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& e : ck.multimodal) {
    ASSIGN_OR_RETURN(SourceTensor src, FromSafetensors(*e.file, *e.tensor));
    std::vector<int64_t> shape = src.shape;
    if (shape.empty()) shape = {1};
    if (src.rows() * src.cols() == 0) {
      return Unsupported(e.file->path() + ": multimodal tensor " + src.source_name + " " +
                         ShapeString(src.shape) + " is empty; .gemlet cannot hold it");
    }
    shapes[src.source_name] = src.shape;
    const TensorType type = *LosslessType(src.type);
    RETURN_IF_ERROR(
        StreamTensor(*w, src.source_name, shape, src, type, pool, nullptr, /*interleave=*/false).WithContext(out));
    report->multimodal.push_back(
        {src.source_name, SourceTypeName(src.type), TensorTypeName(type), src.nbytes, false});
  }
  w->SetMetadata({{"config", ck.full_config.is_object() ? ck.full_config : nlohmann::json::object()},
                  {"kind", "gemma4-multimodal"},
                  {"source_shapes", shapes},
                  {"provenance", provenance}});
  return w->Finish();
}

nlohmann::json PlanJson(const QuantPlan& plan, const std::map<std::string, std::set<std::string>>& class_types) {
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& [cls, types] : class_types) {
    std::string s;
    for (const std::string& t : types) s += (s.empty() ? "" : "+") + t;
    classes[cls] = s;
  }
  nlohmann::json overrides = nlohmann::json::object();
  for (const auto& [cls, type] : plan.overrides) overrides[model::TensorClassName(cls)] = TensorTypeName(type);
  return {{"name", plan.name}, {"classes", classes}, {"overrides", overrides}};
}

void AddClassTypes(const ConvertReport& report, size_t from, std::map<std::string, std::set<std::string>>* out,
                   const std::vector<model::TensorSpec>& specs) {
  for (size_t i = from; i < report.tensors.size(); ++i) {
    for (const auto& spec : specs) {
      if (spec.name == report.tensors[i].name) (*out)[model::TensorClassName(spec.cls)].insert(report.tensors[i].stored_type);
    }
  }
}

// A drafter folder on its own: the drafter's tensors and config, no target.
Result<ConvertReport> ConvertDrafterOnly(const ConvertOptions& o, const QuantPlan& plan,
                                         std::chrono::steady_clock::time_point t0) {
  ASSIGN_OR_RETURN(DrafterCheckpoint ck, LoadDrafter(o.src));
  std::error_code ec;
  for (const std::string& f : ck.files) {
    if (fs::equivalent(f, o.out, ec)) return InvalidArgument(o.out + ": the output would overwrite the source");
  }
  ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::HardwareThreads());
  ASSIGN_OR_RETURN(auto writer, GemletWriter::Create(o.out));
  ConvertReport report;
  if (!ck.note.empty()) report.notes.push_back(ck.note);
  RETURN_IF_ERROR(WriteDrafterTensors(*writer, ck, plan, pool, &report).WithContext(o.out));
  ASSIGN_OR_RETURN(nlohmann::json sha, HashFiles(ck.files, nullptr));
  std::map<std::string, std::set<std::string>> class_types;
  AddClassTypes(report, 0, &class_types, model::DrafterTensors(ck.config));
  nlohmann::json meta = nlohmann::json::object();
  meta["config"] = ck.config.ToJson();  // (the format's required key; the binder reads "drafter")
  meta[model::kDrafterMetadataKey] = ck.config.ToJson();
  meta["kind"] = "gemma4-drafter";
  meta["provenance"] = {{"source", Absolute(ck.source)},
                        {"source_format", ck.format},
                        {"source_sha256", sha},
                        {"converter", std::string("gemlet ") + GEMLET_VERSION},
                        {"created", IsoTimeNow()}};
  meta["quant_plan"] = PlanJson(plan, class_types);
  writer->SetMetadata(std::move(meta));
  RETURN_IF_ERROR(writer->Finish());
  report.file_bytes = fs::file_size(o.out, ec);
  report.seconds = SecondsSince(t0);
  return report;
}

}  // namespace

Result<ConvertReport> Convert(const ConvertOptions& o) {
  const auto t0 = SteadyClock::now();
  if (o.src.empty()) return InvalidArgument("no source given");
  if (o.out.empty()) return InvalidArgument("no output file given (-o OUT.gemlet)");
  ASSIGN_OR_RETURN(QuantPlan plan, MakeQuantPlan(o.plan, o.overrides));
  if (IsDrafterSource(o.src)) {
    if (!o.assistant.empty()) {
      return InvalidArgument(o.src + " is a drafter (gemma4_assistant) checkpoint; --assistant goes with a target");
    }
    if (!o.multimodal_out.empty()) return InvalidArgument("--multimodal: " + o.src + " is a drafter checkpoint");
    if (!o.mmproj.empty()) return InvalidArgument("--mmproj: " + o.src + " is a drafter checkpoint");
    return ConvertDrafterOnly(o, plan, t0);
  }
  ASSIGN_OR_RETURN(Checkpoint ck, OpenCheckpoint(o.src));
  if (!o.mmproj.empty()) {
    if (ck.format != "gguf") {
      return InvalidArgument("--mmproj: " + o.src +
                             " is a Hugging Face checkpoint, which carries its own vision/audio towers; "
                             "--mmproj goes with a GGUF text model");
    }
    RETURN_IF_ERROR(AddMmproj(o.mmproj, &ck).WithContext("--mmproj"));
  }
  std::optional<DrafterCheckpoint> drafter;
  if (!o.assistant.empty()) {
    std::error_code ec;
    if (fs::is_directory(o.assistant, ec) && !IsHfDrafterFolder(o.assistant)) {
      return InvalidArgument("--assistant " + o.assistant +
                             ": not a Hugging Face drafter folder (config.json with model_type gemma4_assistant)");
    }
    auto d = LoadDrafter(o.assistant);  // a GGUF: its architecture is checked there
    if (!d.ok()) return d.status().WithContext("--assistant");
    RETURN_IF_ERROR(d->config.CheckFits(ck.config).WithContext("--assistant " + o.assistant));
    drafter = std::move(*d);
  }
  std::error_code ec;
  for (const std::string& f : ck.files) {
    if (fs::equivalent(f, o.out, ec))
      return InvalidArgument(o.out + ": the output would overwrite the source");
  }

  // The metadata is JSON, which must be valid UTF-8; source strings (a GGUF chat template, a
  // path) might not be. Check before spending minutes on the tensors.
  try {
    (void)nlohmann::json({ck.tokenizer.special, ck.tokenizer.chat_template, Absolute(ck.source)}).dump();
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(ck.source + ": the tokenizer, chat template or path is not valid UTF-8 (" + e.what() +
                   ")");
  }
  if (!o.multimodal_out.empty() && ck.format != "safetensors") {
    return InvalidArgument(
        "--multimodal: " + ck.source +
        " is a GGUF text model; llama.cpp keeps vision/audio weights in a separate mmproj file");
  }

  // Hash the sources while converting (a second reader of the same files). An early return
  // cancels it, so an error does not wait for a 10 GB hash.
  std::atomic<bool> cancel_hash{false};
  auto hashes = std::async(std::launch::async,
                           [files = ck.files, &cancel_hash] { return HashFiles(files, &cancel_hash); });
  struct CancelOnExit {
    std::atomic<bool>* flag;
    ~CancelOnExit() { flag->store(true); }
  } cancel_on_exit{&cancel_hash};

  // Every tensor's type, checked before anything is written.
  struct Job {
    const Checkpoint::Item* item;
    TensorType type;
  };
  std::vector<Job> jobs;
  uint64_t total = 0;
  std::vector<const Checkpoint::Item*> items;
  for (const auto& item : ck.tensors) items.push_back(&item);
  for (const auto& item : ck.vision_tensors) items.push_back(&item);
  for (const auto& item : ck.audio_tensors) items.push_back(&item);
  for (const Checkpoint::Item* item_ptr : items) {
    const auto& item = *item_ptr;
    TensorType type = PlanType(plan, item.spec.cls, LosslessType(item.src.type));
    const bool vision = item_ptr >= ck.vision_tensors.data() && item_ptr < ck.vision_tensors.data() + ck.vision_tensors.size();
    const bool audio = item_ptr >= ck.audio_tensors.data() && item_ptr < ck.audio_tensors.data() + ck.audio_tensors.size();
    if ((vision || audio) && !StoredBytes(type, item.spec.shape).ok()) {
      type = TensorType::kF16;  // a tower matrix whose rows do not fill blocks (tiny stubs): f16
    }
    if (!StoredBytes(type, item.spec.shape).ok()) {
      return InvalidArgument(ck.source + ": tensor " + item.spec.name + " " + ShapeString(item.spec.shape) +
                             " cannot be stored as " + TensorTypeName(type) + " (rows of " +
                             std::to_string(item.spec.shape.back()) +
                             " values are not a multiple of 32); choose another --type for class " +
                             model::TensorClassName(item.spec.cls));
    }
    jobs.push_back({&item, type});
    total += item.src.nbytes;
  }

  ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::HardwareThreads());
  ASSIGN_OR_RETURN(auto writer, GemletWriter::Create(o.out));
  Progress progress(total, o.progress);
  ConvertReport report;
  std::map<std::string, std::set<std::string>> class_types;
  for (const Job& job : jobs) {
    const auto& item = *job.item;
    RETURN_IF_ERROR(
        StreamTensor(
            *writer, item.spec.name, item.spec.shape, item.src, job.type, pool,
            [&](uint64_t b) { progress.Add(b, item.spec.name); },
            /*interleave=*/item.spec.cls != model::TensorClass::kPleTable &&  // gathered only
                item.spec.cls != model::TensorClass::kVisionPosTable)
            .WithContext(o.out));
    const auto lossless = LosslessType(item.src.type);
    ConvertedTensor ct;
    ct.name = item.spec.name;
    ct.source_type = SourceTypeName(item.src.type);
    ct.stored_type = TensorTypeName(job.type);
    ct.bytes = StoredBytes(job.type, item.spec.shape).value();
    ct.requantized = SourceBlockElems(item.src.type) > 1 && lossless != job.type;
    report.tensors.push_back(ct);
    class_types[model::TensorClassName(item.spec.cls)].insert(ct.stored_type);
  }
  progress.Finish();
  if (drafter) {
    const size_t from = report.tensors.size();
    RETURN_IF_ERROR(WriteDrafterTensors(*writer, *drafter, plan, pool, &report).WithContext(o.out));
    AddClassTypes(report, from, &class_types, model::DrafterTensors(drafter->config));
  }

  auto sha = hashes.get();
  if (!sha.ok()) return sha.status();
  nlohmann::json provenance = {{"source", Absolute(ck.source)},
                               {"source_format", ck.format},
                               {"source_sha256", *sha},
                               {"converter", std::string("gemlet ") + GEMLET_VERSION},
                               {"created", IsoTimeNow()}};
  nlohmann::json meta = {
      {"config", ck.config.ToJson()},
      {"tokenizer", ck.tokenizer.special},
      {"chat_template", ck.tokenizer.chat_template},
      {"provenance", provenance},
      {"quant_plan", PlanJson(plan, class_types)},
  };
  if (!o.mmproj.empty()) meta["provenance"]["mmproj"] = Absolute(o.mmproj);
  if (drafter) {
    ASSIGN_OR_RETURN(nlohmann::json dsha, HashFiles(drafter->files, nullptr));
    meta[model::kDrafterMetadataKey] = drafter->config.ToJson();
    meta["provenance"]["drafter_source"] = Absolute(drafter->source);
    meta["provenance"]["drafter_sha256"] = dsha;
  }
  if (ck.vision.is_object()) meta["vision"] = ck.vision;
  if (ck.audio.is_object()) meta["audio"] = ck.audio;
  if (!ck.audio_note.empty()) report.notes.push_back(ck.audio_note);
  if (drafter && !drafter->note.empty()) report.notes.push_back(drafter->note);
  try {  // checked above; a safety net, since an exception must not escape
    (void)meta.dump();
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(ck.source + ": the tokenizer or chat template holds text that is not valid UTF-8 (" +
                   std::string(e.what()) + ")");
  }
  writer->SetMetadata(std::move(meta));
  writer->SetVocab(ck.tokenizer.vocab);
  RETURN_IF_ERROR(writer->Finish());
  report.file_bytes = fs::file_size(o.out, ec);

  if (!o.multimodal_out.empty()) {
    RETURN_IF_ERROR(WriteMultimodal(ck, o.multimodal_out, provenance, pool, &report));
  }
  report.seconds = SecondsSince(t0);
  return report;
}

}  // namespace gemlet::convert
