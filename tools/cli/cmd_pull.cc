// gemlet pull / list / rm: models by name in the local model store (tools/hub).
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "tools/cli/command.h"
#include "tools/convert/progress.h"
#include "tools/hub/model_store.h"
#include "tools/hub/pull.h"

namespace gemlet::cli {
namespace cmd_pull {

constexpr char kPullUsage[] = R"(usage: gemlet pull OWNER/NAME[@REVISION] [--keep-source] [flags]

Downloads a Hugging Face checkpoint (safetensors, config, tokenizer) and converts it into the
local model store, where every subcommand finds it by name: gemlet chat -m OWNER/NAME.
The download resumes where an interrupted one stopped (*.part files), each LFS file's sha256
is checked against the hub's listing (a mismatch deletes the file and stores nothing), and
the checkpoint is deleted once converted. Pulling a model that is already stored from the
same commit does nothing.

flags:
  --keep-source        keep the downloaded checkpoint (in the store's .downloads folder)
  --force              download and convert again even if the stored commit is the same
  --plan P             quantization plan for the conversion (default, keep, q8, q4; see
                       gemlet convert --help), --type CLASS=TYPE overrides
  --retries N          further attempts after an interrupted transfer, each resuming
                       (default 3; 0 = fail at once, keeping the partial file)
  --threads N          conversion threads (default: all cores)
  -q, --quiet          no progress (a bar with speed and ETA on a terminal, lines otherwise)
  --json               print the stored model as JSON

environment:
  HF_TOKEN             a Hugging Face token, for gated or private repositories (sent as
                       "Authorization: Bearer" to the hub only, not to its CDN)
  HF_ENDPOINT          the hub (default https://huggingface.co), e.g. a mirror
  GEMLET_MODELS        the model store (default ~/.cache/gemlet/models)

examples:
  gemlet pull google/gemma-4-E2B-it
  HF_TOKEN=hf_... gemlet pull google/gemma-4-E4B-it@main --plan q8
  gemlet chat -m google/gemma-4-E2B-it
)";

constexpr char kListUsage[] = R"(usage: gemlet list [--json]

Lists the models in the local model store ($GEMLET_MODELS, default ~/.cache/gemlet/models):
name, size, the commit it was pulled from, and when.

examples:
  gemlet list
  gemlet list --json
)";

constexpr char kRmUsage[] = R"(usage: gemlet rm NAME...

Deletes stored models (gemlet list shows their names).

examples:
  gemlet rm google/gemma-4-E2B-it
)";

nlohmann::json ModelJson(const hub::StoredModel& m) {
  return {{"name", m.name},       {"path", m.path},       {"bytes", m.bytes},
          {"repo", m.repo},       {"revision", m.revision}, {"commit", m.commit},
          {"endpoint", m.endpoint}, {"pulled_at", m.pulled_at}};
}

int Pull(Flags& flags) {
  hub::PullOptions o;
  o.keep_source = flags.Bool({"--keep-source"});
  o.force = flags.Bool({"--force"});
  o.plan = flags.Str({"--plan"}, "default");
  o.overrides = flags.StrAll({"--type"});
  auto retries = flags.Int({"--retries"}, 3);
  auto threads = flags.Int({"--threads"}, 0);
  const bool quiet = flags.Bool({"-q", "--quiet"});
  const bool json = flags.Bool({"--json"});
  for (const Status& st : {retries.status(), threads.status()}) {
    if (!st.ok()) return UsageError("pull", st.message());
  }
  if (Status st = flags.Finish(); !st.ok()) return UsageError("pull", st.message());
  const auto pos = flags.Positional();
  if (pos.size() != 1) return UsageError("pull", "give one repository: gemlet pull OWNER/NAME[@REVISION]");
  if (*retries < 0 || *retries > 100) return UsageError("pull", "--retries must be in [0, 100]");
  if (*threads < 0 || *threads > 1024) return UsageError("pull", "--threads must be in [0, 1024]");
  auto ref = hub::ParseRepoRef(pos[0]);
  if (!ref.ok()) return UsageError("pull", ref.status().message());
  o.ref = *ref;
  o.hub.retries = static_cast<int>(*retries);
  o.threads = static_cast<int>(*threads);
  o.progress = !quiet;
  auto store = hub::ModelStore::Open();
  if (!store.ok()) return ReportError("pull", store.status());
  auto report = hub::Pull(*store, o);
  if (!report.ok()) {
    std::fprintf(stderr, "gemlet pull: %s\n", report.status().message().c_str());
    return kExitFailure;
  }
  if (json) {
    nlohmann::json j = ModelJson(report->model);
    j["up_to_date"] = report->up_to_date;
    j["downloaded_bytes"] = report->downloaded_bytes;
    if (!report->source_dir.empty()) j["source_dir"] = report->source_dir;
    std::printf("%s\n", j.dump().c_str());
  } else if (!quiet) {
    std::fprintf(stderr, "gemlet pull: %s %s (%s): %s\n", report->model.name.c_str(),
                 report->up_to_date ? "is up to date" : "stored",
                 convert::Progress::FormatBytes(static_cast<uint64_t>(report->model.bytes)).c_str(),
                 report->model.path.c_str());
    if (!report->source_dir.empty()) {
      std::fprintf(stderr, "gemlet pull: the checkpoint is kept in %s\n", report->source_dir.c_str());
    }
    std::fprintf(stderr, "  run it: gemlet chat -m %s\n", report->model.name.c_str());
  }
  return kExitOk;
}

int List(Flags& flags) {
  const bool json = flags.Bool({"--json"});
  if (Status st = flags.Finish(); !st.ok()) return UsageError("list", st.message());
  if (!flags.Positional().empty()) return UsageError("list", "unexpected argument '" + flags.Positional()[0] + "'");
  auto store = hub::ModelStore::Open();
  if (!store.ok()) return ReportError("list", store.status());
  const auto models = store->List();
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& m : models) j.push_back(ModelJson(m));
    std::printf("%s\n", j.dump().c_str());
    return kExitOk;
  }
  if (models.empty()) {
    std::printf("no models in %s (gemlet pull OWNER/NAME adds one)\n", store->dir().c_str());
    return kExitOk;
  }
  std::printf("%-44s %10s  %-12s  %s\n", "NAME", "SIZE", "COMMIT", "PULLED");
  for (const auto& m : models) {
    char when[32] = "?";
    if (m.pulled_at > 0) {
      const std::time_t t = static_cast<std::time_t>(m.pulled_at);
      std::tm tm;
      gmtime_r(&t, &tm);
      std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
    }
    std::printf("%-44s %10s  %-12s  %s\n", m.name.c_str(),
                convert::Progress::FormatBytes(static_cast<uint64_t>(m.bytes)).c_str(),
                m.commit.empty() ? "?" : m.commit.substr(0, 12).c_str(), when);
  }
  return kExitOk;
}

int Rm(Flags& flags) {
  if (Status st = flags.Finish(); !st.ok()) return UsageError("rm", st.message());
  const auto names = flags.Positional();
  if (names.empty()) return UsageError("rm", "give the name of a stored model (gemlet list)");
  auto store = hub::ModelStore::Open();
  if (!store.ok()) return ReportError("rm", store.status());
  int rc = kExitOk;
  for (const auto& n : names) {
    if (Status st = store->Remove(n); !st.ok()) {
      std::fprintf(stderr, "gemlet rm: %s\n", st.message().c_str());
      rc = kExitFailure;
    } else {
      std::fprintf(stderr, "gemlet rm: deleted %s\n", n.c_str());
    }
  }
  return rc;
}

}  // namespace cmd_pull

GEMLET_COMMAND(pull, "pull", "download a Hugging Face checkpoint by name and convert it into the model store",
               cmd_pull::kPullUsage, cmd_pull::Pull);
GEMLET_COMMAND(list, "list", "list the models in the model store", cmd_pull::kListUsage, cmd_pull::List);
GEMLET_COMMAND(rm, "rm", "delete models from the model store", cmd_pull::kRmUsage, cmd_pull::Rm);

}  // namespace gemlet::cli
