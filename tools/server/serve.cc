#include "tools/server/serve.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "runtime/engine.h"
#include "tools/server/model_backend.h"
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

  runtime::EngineOptions eo;
  eo.threads = options.threads;
  eo.mode = options.exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  eo.kv_type = options.kv_type;
  eo.kv_type_full = options.kv_type_full;
  eo.kv_type_sliding = options.kv_type_sliding;
  auto engine = runtime::Engine::Open(options.model_path, eo);
  if (!engine.ok()) return engine.status();
  const int64_t positions = (*engine)->config().max_position_embeddings;
  if (options.context > positions) {
    return InvalidArgument("--ctx " + std::to_string(options.context) + " exceeds the model's " +
                           std::to_string(positions) + " positions");
  }
  const std::string alias = options.alias.empty() ? DefaultAlias(options.model_path) : options.alias;
  auto model = GemmaChatModel::Create(**engine, alias, options.context, options.images);
  if (!model.ok()) return model.status().WithContext(options.model_path);

  Metrics metrics;
  RequestLog log(options.request_log ? stderr : nullptr, options.log_format, options.verbose);
  SchedulerOptions sopt = options.scheduler;
  if (log.verbose()) sopt.on_step = [&log](const StepLogEntry& e) { log.Step(e); };
  Scheduler scheduler((*model)->backend(), metrics, sopt);
  HandlerOptions hopt = options.handlers;
  if (hopt.created == 0) hopt.created = UnixNow();
  std::error_code size_error;
  const auto bytes = std::filesystem::file_size(options.model_path, size_error);
  if (!size_error) hopt.model_bytes = static_cast<int64_t>(bytes);
  hopt.context = scheduler.max_context();
  ApiHandlers handlers(**model, scheduler, metrics, hopt);
  HttpServer http(handlers, metrics, options.http, &log);
  RETURN_IF_ERROR(http.Bind());

  std::thread waiter([&] {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGUSR1) {  // Run() ended by itself
      scheduler.Shutdown();
      return;
    }
    std::fprintf(stderr, "gemlet serve: %s, shutting down (running requests get %g s)\n",
                 strsignal(sig), options.shutdown_grace_s);
    http.Stop();  // no new connections; Run() returns once the open ones have ended
    scheduler.Drain(std::chrono::milliseconds(static_cast<int64_t>(options.shutdown_grace_s * 1000)));
  });
  std::fprintf(stderr,
               "gemlet serve: %s on http://%s:%d  (%d slot%s, context %lld tokens, %d thread%s%s)\n",
               alias.c_str(), options.http.host.c_str(), http.port(), scheduler.options().slots,
               scheduler.options().slots == 1 ? "" : "s",
               static_cast<long long>(scheduler.max_context()), (*engine)->threads(),
               (*engine)->threads() == 1 ? "" : "s",
               options.http.api_key.empty() ? "" : ", API key required");
  Status st = http.Run();
  pthread_kill(waiter.native_handle(), SIGUSR1);  // no-op if a signal already ended it
  waiter.join();
  scheduler.Shutdown();
  return st;
}

}  // namespace gemlet::server
