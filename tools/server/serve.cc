#include "tools/server/serve.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "runtime/engine.h"
#include "runtime/speculative_options.h"
#include "tools/server/model_backend.h"
#include "tools/server/model_router.h"
#include "tools/server/openai_format.h"

namespace gemlet::server {
namespace {

std::string DefaultAlias(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const std::string ext = ".gemlet";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    name.resize(name.size() - ext.size());
  }
  return name.empty() ? "gemlet" : name;
}

// A model loaded for serving (one entry of the ModelPool): the engine — with the MTP drafter
// made for it, if any (Engine::drafter(): the -m model's --drafter FILE, or the one embedded
// in its file) —, its chat model (drafting with `draft` for a request that decodes alone),
// scheduler and handlers. Evicting the entry frees its drafter with it.
class ServedModel : public LoadedModel {
 public:
  ApiHandlers& handlers() override { return *handlers_; }
  void Drain(std::chrono::milliseconds grace) override { scheduler_->Drain(grace); }
  ~ServedModel() override {
    if (scheduler_) scheduler_->Shutdown();
  }
  // Declared in construction order: destroyed in the reverse one.
  std::unique_ptr<runtime::Engine> engine_;
  std::unique_ptr<GemmaChatModel> model_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ApiHandlers> handlers_;
  runtime::DraftMode draft_ = runtime::DraftMode::kOff;
};

// The drafting of a loaded model (ServeOptions::draft): `primary` is the -m model, whose
// explicit --draft mtp without a drafter is an error; a stored model without one does not draft.
runtime::SpeculativeOptions DraftOptions(const runtime::Engine& engine, const std::string& path,
                                         const ServeOptions& options, bool primary) {
  runtime::SpeculativeOptions spec;
  const bool has_drafter = engine.drafter() != nullptr;
  spec.mode = options.draft.value_or(has_drafter ? runtime::DraftMode::kAuto : runtime::DraftMode::kOff);
  if (spec.mode == runtime::DraftMode::kMtp && !has_drafter && !primary) {
    std::fprintf(stderr, "gemlet serve: %s has no MTP drafter: it does not draft (--draft mtp)\n", path.c_str());
    spec.mode = runtime::DraftMode::kOff;
  }
  spec.draft_max = options.draft_max;
  spec.adaptive = !options.draft_fixed;
  return spec;  // checked by EnableDrafting (runtime::CheckSpeculative)
}

// `primary`: the -m model (options.model_path), the one options.drafter_path belongs to.
Result<std::shared_ptr<ServedModel>> LoadModel(const std::string& path, const std::string& alias, bool primary,
                                               const ServeOptions& options, Metrics& metrics, RequestLog& log,
                                               const std::vector<CatalogEntry>& catalog) {
  runtime::EngineOptions eo;
  eo.threads = options.threads;
  eo.mode = options.exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  eo.kv_type = options.kv_type;
  eo.kv_type_full = options.kv_type_full;
  eo.kv_type_sliding = options.kv_type_sliding;
  if (primary) eo.drafter_path = options.drafter_path;
  auto m = std::make_shared<ServedModel>();
  ASSIGN_OR_RETURN(m->engine_, runtime::Engine::Open(path, eo));
  const runtime::SpeculativeOptions spec = DraftOptions(*m->engine_, path, options, primary);
  const int64_t positions = m->engine_->config().max_position_embeddings;
  if (options.context > positions) {
    return InvalidArgument(path + ": --ctx " + std::to_string(options.context) + " exceeds the model's " +
                           std::to_string(positions) + " positions");
  }
  auto model = GemmaChatModel::Create(*m->engine_, alias, options.context, options.images);
  if (!model.ok()) return model.status().WithContext(path);
  m->model_ = std::move(*model);
  if (spec.mode != runtime::DraftMode::kOff) RETURN_IF_ERROR(m->model_->EnableDrafting(spec).WithContext(path));
  m->draft_ = spec.mode;
  SchedulerOptions sopt = options.scheduler;
  if (log.verbose()) sopt.on_step = [&log](const StepLogEntry& e) { log.Step(e); };
  m->scheduler_ = std::make_unique<Scheduler>(m->model_->backend(), metrics, sopt);
  HandlerOptions hopt = options.handlers;
  if (hopt.created == 0) hopt.created = UnixNow();
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(path, size_error);
  if (!size_error) hopt.model_bytes = static_cast<int64_t>(bytes);
  hopt.context = m->scheduler_->max_context();
  hopt.catalog = catalog;
  m->handlers_ = std::make_unique<ApiHandlers>(*m->model_, *m->scheduler_, metrics, hopt);
  return m;
}

}  // namespace

Status Serve(const ServeOptions& options) {
  // Signals go to one waiting thread only; writes to closed sockets must not kill us.
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  Metrics metrics;
  RequestLog log(options.request_log ? stderr : nullptr, options.log_format, options.verbose);
  // The catalog: the -m model first, then the stored ones (its own file not twice).
  std::vector<CatalogEntry> catalog;
  std::string alias;
  if (!options.model_path.empty()) {
    alias = options.alias.empty() ? DefaultAlias(options.model_path) : options.alias;
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(options.model_path, ec);
    catalog.push_back(CatalogEntry{alias, options.model_path, ec ? 0 : static_cast<int64_t>(bytes), UnixNow()});
  }
  for (const CatalogEntry& e : options.stored) {
    std::error_code ec;
    if (!options.model_path.empty() && std::filesystem::equivalent(e.path, options.model_path, ec)) continue;
    if (!catalog.empty() && e.id == catalog[0].id) continue;
    catalog.push_back(e);
  }
  if (catalog.empty()) return InvalidArgument("no model to serve");
  if (!options.drafter_path.empty() && options.model_path.empty()) {
    return InvalidArgument("--drafter " + options.drafter_path +
                           ": a drafter belongs to the model it was made for; give that model with -m");
  }
  const bool several = catalog.size() > 1;
  std::shared_ptr<ServedModel> pinned;
  if (!options.model_path.empty() || !several) {
    ASSIGN_OR_RETURN(pinned, LoadModel(catalog[0].path, catalog[0].id, !options.model_path.empty(), options, metrics, log,
                                       several ? catalog : std::vector<CatalogEntry>{}));
  }
  ModelPool pool(catalog, pinned, options.max_models, [&](const CatalogEntry& e) -> Result<std::shared_ptr<LoadedModel>> {
    ASSIGN_OR_RETURN(auto m, LoadModel(e.path, e.id, /*primary=*/false, options, metrics, log, catalog));
    std::fprintf(stderr, "gemlet serve: loaded %s (%s)\n", e.id.c_str(), e.path.c_str());
    return std::shared_ptr<LoadedModel>(std::move(m));
  });
  SingleModelRouter single(pinned);
  ModelRouter& router = several ? static_cast<ModelRouter&>(pool) : static_cast<ModelRouter&>(single);
  // The first model answers /health from the start (without -m: the catalog's first, loaded
  // now so that a broken file fails the start).
  auto first = router.Acquire("");
  if (!first.ok()) return IoError(first.error().message);
  const auto* first_model = static_cast<const ServedModel*>(first->get());
  const std::string first_id = first_model->model_->id();
  const int threads = first_model->engine_->threads();
  const int slots = first_model->scheduler_->options().slots;
  const long long context = static_cast<long long>(first_model->scheduler_->max_context());
  const runtime::DraftMode first_draft = first_model->draft_;
  first->reset();
  HttpServer http(router, metrics, options.http, &log);
  RETURN_IF_ERROR(http.Bind());

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGUSR1) return;  // Run() ended by itself
    std::fprintf(stderr, "gemlet serve: %s, shutting down (running requests get %g s)\n",
                 strsignal(sig), options.shutdown_grace_s);
    http.Stop();  // no new connections; Run() returns once the open ones have ended
    router.Drain(std::chrono::milliseconds(static_cast<int64_t>(options.shutdown_grace_s * 1000)));
  });
  std::fprintf(stderr,
               "gemlet serve: %s%s on http://%s:%d  (%d slot%s, context %lld tokens, %d thread%s%s%s)\n",
               first_id.c_str(),
               several ? (" and " + std::to_string(catalog.size() - 1) + " more model" +
                          (catalog.size() == 2 ? "" : "s")).c_str()
                       : "",
               options.http.host.c_str(), http.port(), slots, slots == 1 ? "" : "s", context, threads,
               threads == 1 ? "" : "s",
               options.http.api_key.empty() ? "" : ", API key required",
               first_draft == runtime::DraftMode::kOff
                   ? ""
                   : (std::string(", draft ") + runtime::DraftModeName(first_draft) + " when one request decodes alone")
                         .c_str());
  Status st = http.Run();
  pthread_kill(waiter.native_handle(), SIGUSR1);  // no-op if a signal already ended it
  waiter.join();
  return st;
}

}  // namespace gemlet::server
