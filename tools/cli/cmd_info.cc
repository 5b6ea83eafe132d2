// gemlet info: what a .gemlet file holds (config, tokenizer, provenance, plan, tensors).
// Also lists the metadata and tensors of a GGUF file, to look at a source before converting.
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "format/gguf.h"
#include "model/gemma4_config.h"
#include "model/gemma4_drafter_config.h"
#include "model/gemma4_drafter_tensors.h"
#include "model/gemma4_tensors.h"
#include "tools/cli/command.h"
#include "tools/convert/progress.h"
#include "tools/hub/model_store.h"

namespace gemlet::cli {
namespace cmd_info {

constexpr char kUsage[] = R"(usage: gemlet info FILE [--json] [--tensors]

Describes a .gemlet model: the model config (and an MTP drafter's, with its LM head: sparse
centroids or dense), the tokenizer (pieces, merges, special ids), the
chat template size, the provenance (source, format, sha256, converter, date), the quantization
plan, totals per tensor class, and (with --tensors, or always with --json) every tensor's
name, shape, type and size. For a GGUF file, lists its metadata and tensors instead.
FILE may also be the name of a stored model (gemlet pull, gemlet list).

flags:
  --json        one JSON object on stdout (for scripts)
  --tensors     also print the table of every tensor (text output)

examples:
  gemlet info e2b.gemlet
  gemlet info e2b.gemlet --tensors
  gemlet info e2b.gemlet --json | jq .totals
  gemlet info model-q4_0.gguf
)";

std::string Shape(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string Dump(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

int InfoGguf(const std::string& path, bool json, bool list_tensors) {
  auto g = GgufFile::Open(path);
  if (!g.ok()) return ReportError("info", g.status());
  const GgufFile& f = **g;
  nlohmann::json meta = nlohmann::json::object();
  for (const std::string& k : f.keys()) meta[k] = f.ValueToJson(*f.Find(k), json ? UINT64_MAX : 8);
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"type", t.type_name()}, {"bytes", t.nbytes}});
  }
  if (json) {
    std::printf("%s\n", Dump({{"file", path},
                              {"format", "gguf"},
                              {"version", f.version()},
                              {"metadata", meta},
                              {"tensors", tensors}})
                            .c_str());
    return kExitOk;
  }
  std::printf("%s: GGUF v%u, %zu metadata keys, %zu tensors\n", path.c_str(), f.version(), f.keys().size(),
              f.tensors().size());
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    std::string v = Dump(it.value());
    if (v.size() > 160) v = v.substr(0, 157) + "...";
    std::printf("  %-48s %s\n", it.key().c_str(), v.c_str());
  }
  if (list_tensors) {
    for (const auto& t : f.tensors()) {
      std::printf("  %-40s %-22s %-6s %12llu\n", t.name.c_str(), Shape(t.shape).c_str(),
                  t.type_name().c_str(), static_cast<unsigned long long>(t.nbytes));
    }
  }
  return kExitOk;
}

int Run(Flags& flags) {
  const bool json = flags.Bool({"--json"});
  const bool list_tensors = flags.Bool({"--tensors"});
  if (Status st = flags.Finish(); !st.ok()) return UsageError("info", st.message());
  const auto pos = flags.Positional();
  if (pos.empty()) return UsageError("info", "FILE is required");
  if (pos.size() > 1) return UsageError("info", "unexpected argument '" + pos[1] + "'");
  const std::string path = hub::ResolveModelArg(pos[0]);  // a stored model's name works too
  {
    auto m = MappedFile::Open(path);
    if (!m.ok()) return ReportError("info", m.status());
    if ((*m)->size() >= 4 && std::memcmp((*m)->data(), "GGUF", 4) == 0)
      return InfoGguf(path, json, list_tensors);
  }
  auto file = GemletFile::Open(path);
  if (!file.ok()) return ReportError("info", file.status());
  const GemletFile& g = **file;
  const nlohmann::json& meta = g.metadata();

  // Tensor classes from the model's tensor table (if the config is a valid Gemma 4 config).
  std::map<std::string, std::string> class_of;
  const bool drafter_only = meta.value("kind", "") == "gemma4-drafter";
  auto cfg = model::Gemma4Config::FromJson(meta["config"]);
  if (cfg.ok()) {
    for (const auto& spec : model::ExpectedTensors(*cfg))
      class_of[spec.name] = model::TensorClassName(spec.cls);
  }
  // An MTP drafter: a file of its own, or a second section of the target's file.
  std::optional<Result<model::Gemma4DrafterConfig>> drafter;
  if (meta.contains(model::kDrafterMetadataKey)) {
    drafter = model::Gemma4DrafterConfig::FromJson(meta[model::kDrafterMetadataKey]);
    if (drafter->ok()) {
      for (const auto& spec : model::DrafterTensors(**drafter))
        class_of[spec.name] = model::TensorClassName(spec.cls);
    }
  }
  struct Total {
    int tensors = 0;
    uint64_t bytes = 0;
    int64_t params = 0;
    std::set<std::string> types;
  };
  std::map<std::string, Total> totals;
  nlohmann::json tensors = nlohmann::json::array();
  uint64_t tensor_bytes = 0;
  int64_t params = 0;
  for (const TensorView& t : g.tensors()) {
    auto it = class_of.find(t.name);
    const std::string cls = it == class_of.end() ? "other" : it->second;
    Total& tot = totals[cls];
    tot.tensors++;
    tot.bytes += t.nbytes;
    tot.params += t.numel();
    tot.types.insert(TensorTypeName(t.type));
    tensor_bytes += t.nbytes;
    params += t.numel();
    tensors.push_back({{"name", t.name},
                       {"shape", t.shape},
                       {"type", TensorTypeName(t.type)},
                       {"layout", TensorLayoutName(t.layout)},
                       {"bytes", t.nbytes},
                       {"offset", t.offset},
                       {"class", cls}});
  }
  nlohmann::json totals_json = nlohmann::json::object();
  for (const auto& [cls, tot] : totals) {
    totals_json[cls] = {{"tensors", tot.tensors},
                        {"bytes", tot.bytes},
                        {"params", tot.params},
                        {"types", std::vector<std::string>(tot.types.begin(), tot.types.end())}};
  }
  const Vocab v = g.ReadVocab();
  if (json) {
    nlohmann::json m = meta;
    nlohmann::json out = {{"file", path},
                          {"format", "gemlet"},
                          {"version", g.version()},
                          {"bytes", g.size()},
                          {"params", params},
                          {"metadata", m},
                          {"vocab", {{"tokens", v.size()}, {"merges", v.merges.size()}}},
                          {"totals", totals_json},
                          {"tensors", tensors}};
    std::printf("%s\n", Dump(out).c_str());
    return kExitOk;
  }

  using convert::Progress;
  char count[32];
  if (params >= 1000000000) {
    std::snprintf(count, sizeof(count), "%.2f B", params / 1e9);
  } else if (params >= 1000000) {
    std::snprintf(count, sizeof(count), "%.1f M", params / 1e6);
  } else {
    std::snprintf(count, sizeof(count), "%lld", static_cast<long long>(params));
  }
  std::printf("%s: .gemlet v%u, %s, %zu tensors, %s parameters\n", path.c_str(), g.version(),
              Progress::FormatBytes(g.size()).c_str(), g.tensors().size(), count);
  if (cfg.ok()) {
    const auto& c = *cfg;
    int full = 0;
    for (int64_t l = 0; l < c.num_layers; ++l) full += c.is_full(l);
    std::printf(
        "model:  Gemma 4 text, %lld layers (%d full, %lld sliding, window %lld), D %lld, heads %lld/%lld,\n"
        "        head dims %lld/%lld, FFN %lld%s, PLE %lld, vocab %lld, KV-shared layers %lld\n",
        static_cast<long long>(c.num_layers), full, static_cast<long long>(c.num_layers - full),
        static_cast<long long>(c.sliding_window), static_cast<long long>(c.hidden_size),
        static_cast<long long>(c.num_heads), static_cast<long long>(c.num_kv_heads),
        static_cast<long long>(c.head_dim), static_cast<long long>(c.global_head_dim),
        static_cast<long long>(c.intermediate_size), c.use_double_wide_mlp ? " (x2 on shared layers)" : "",
        static_cast<long long>(c.hidden_size_per_layer_input), static_cast<long long>(c.vocab_size),
        static_cast<long long>(c.num_kv_shared_layers));
  } else if (!drafter_only) {
    std::printf("model:  config does not parse as Gemma 4: %s\n", cfg.status().message().c_str());
  }
  if (drafter && drafter->ok()) {
    const auto& d = **drafter;
    const std::string head =
        d.use_ordered_embeddings
            ? "sparse (" + std::to_string(d.num_centroids) + " centroids, top " + std::to_string(d.centroid_top_k) +
                  ": " + std::to_string(d.candidates()) + " candidates)"
            : "dense (no centroids: y · E^T over the whole vocabulary)";
    std::printf(
        "drafter: Gemma 4 MTP, %lld layers, D %lld, heads %lld/%lld, head dims %lld/%lld, FFN %lld, target hidden "
        "%lld,\n         vocab %lld, LM head %s\n",
        static_cast<long long>(d.num_layers), static_cast<long long>(d.hidden_size),
        static_cast<long long>(d.num_heads), static_cast<long long>(d.num_kv_heads),
        static_cast<long long>(d.head_dim), static_cast<long long>(d.global_head_dim),
        static_cast<long long>(d.intermediate_size), static_cast<long long>(d.backbone_hidden_size),
        static_cast<long long>(d.vocab_size), head.c_str());
  } else if (drafter) {
    std::printf("drafter: config does not parse: %s\n", drafter->status().message().c_str());
  }
  std::printf("tokenizer: %zu pieces, %zu merges, special %s\n", v.size(), v.merges.size(),
              Dump(meta.value("tokenizer", nlohmann::json::object())).c_str());
  const auto ct = meta.find("chat_template");
  std::printf("chat template: %s\n", ct != meta.end() && ct->is_string() && !ct->get<std::string>().empty()
                                         ? (std::to_string(ct->get<std::string>().size()) + " bytes").c_str()
                                         : "none");
  if (auto p = meta.find("provenance"); p != meta.end() && p->is_object()) {
    std::printf("provenance:\n");
    for (auto it = p->begin(); it != p->end(); ++it) {
      std::printf("  %-14s %s\n", it.key().c_str(),
                  it->is_string() ? it->get<std::string>().c_str() : Dump(*it).c_str());
    }
  }
  if (auto q = meta.find("quant_plan"); q != meta.end()) std::printf("quant plan: %s\n", Dump(*q).c_str());
  std::printf("tensor classes:\n");
  for (const auto& [cls, tot] : totals) {
    std::string types;
    for (const auto& t : tot.types) types += (types.empty() ? "" : "+") + t;
    std::printf("  %-15s %4d tensors  %12lld params  %-9s %10s  %5.1f%%\n", cls.c_str(), tot.tensors,
                static_cast<long long>(tot.params), types.c_str(), Progress::FormatBytes(tot.bytes).c_str(),
                tensor_bytes ? 100.0 * tot.bytes / tensor_bytes : 0.0);
  }
  if (list_tensors) {
    std::printf("tensors:\n");
    for (const TensorView& t : g.tensors()) {
      std::printf("  %-34s %-16s %-5s %-9s %12llu\n", t.name.c_str(), Shape(t.shape).c_str(),
                  TensorTypeName(t.type), TensorLayoutName(t.layout), static_cast<unsigned long long>(t.nbytes));
    }
  }
  return kExitOk;
}

}  // namespace cmd_info

GEMLET_COMMAND(info, "info", "describe a .gemlet model (config, tokenizer, provenance, tensors)", cmd_info::kUsage,
               cmd_info::Run);

}  // namespace gemlet::cli
