// Which loaded model serves a request, when `gemlet serve` offers several (the models of the
// store, `gemlet pull`): the one its "model" field names, loaded on first use and kept in an
// LRU of at most `max_resident` models (one by default: one resident at a time). A model
// given with -m is pinned (always loaded, and the one that requests naming no known model
// get); without it, such requests get the most recently used model, and a request naming
// an unknown model gets a 404.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "tools/server/api_error.h"
#include "tools/server/api_handlers.h"

namespace gemlet::server {

// A model loaded for serving: its handlers (and whatever they run on, owned by the subclass).
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual ApiHandlers& handlers() = 0;
  // Graceful shutdown of its scheduler (Scheduler::Drain).
  virtual void Drain(std::chrono::milliseconds grace) = 0;
};

class ModelRouter {
 public:
  virtual ~ModelRouter() = default;
  // The model for a request naming `name` ("" = none; Ollama's "name:latest" names "name"),
  // loaded if need be. The returned pointer keeps it loaded until it is released (a stream
  // holds it to its end), even if the LRU lets it go meanwhile.
  virtual ApiOr<std::shared_ptr<LoadedModel>> Acquire(const std::string& name) = 0;
  virtual void Drain(std::chrono::milliseconds grace) = 0;
  // Whether a request's "model" field matters (the HTTP layer reads it only then).
  virtual bool routes_by_name() const { return false; }
};

// One model, always loaded (tests, and `serve` when the catalog has one entry).
class SingleModelRouter : public ModelRouter {
 public:
  explicit SingleModelRouter(std::shared_ptr<LoadedModel> model) : model_(std::move(model)) {}
  ApiOr<std::shared_ptr<LoadedModel>> Acquire(const std::string&) override { return model_; }
  void Drain(std::chrono::milliseconds grace) override { model_->Drain(grace); }

 private:
  std::shared_ptr<LoadedModel> model_;
};

class ModelPool : public ModelRouter {
 public:
  using Loader = std::function<Result<std::shared_ptr<LoadedModel>>(const CatalogEntry& entry)>;
  // `catalog`: every model a request may name. `pinned` (may be null): the -m model, which
  // is catalog[0]. `max_resident` >= 1 counts the models besides the pinned one.
  ModelPool(std::vector<CatalogEntry> catalog, std::shared_ptr<LoadedModel> pinned, size_t max_resident,
            Loader loader);
  ApiOr<std::shared_ptr<LoadedModel>> Acquire(const std::string& name) override;
  void Drain(std::chrono::milliseconds grace) override;
  bool routes_by_name() const override { return true; }
  // The ids of the loaded models besides the pinned one, most recently used first.
  std::vector<std::string> Resident() const;
  int64_t loads() const;

 private:
  const CatalogEntry* Find(const std::string& name) const;

  const std::vector<CatalogEntry> catalog_;
  const std::shared_ptr<LoadedModel> pinned_;
  const size_t max_resident_;
  const Loader loader_;
  mutable std::mutex mu_;  // held while loading: one load at a time
  std::list<std::pair<std::string, std::shared_ptr<LoadedModel>>> lru_;  // most recent first
  int64_t loads_ = 0;
  bool draining_ = false;
};

}  // namespace gemlet::server
