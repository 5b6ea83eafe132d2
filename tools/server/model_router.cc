#include "tools/server/model_router.h"

#include <algorithm>

namespace gemlet::server {

namespace {
ApiError Unavailable(std::string message) { return ApiError{503, std::move(message), "server_error", "", ""}; }
}  // namespace

ModelPool::ModelPool(std::vector<CatalogEntry> catalog, std::shared_ptr<LoadedModel> pinned, size_t max_resident,
                     Loader loader)
    : catalog_(std::move(catalog)),
      pinned_(std::move(pinned)),
      max_resident_(std::max<size_t>(1, max_resident)),
      loader_(std::move(loader)) {}

const CatalogEntry* ModelPool::Find(const std::string& name) const {
  for (const CatalogEntry& e : catalog_) {
    if (NamesModel(name, e.id)) return &e;
  }
  return nullptr;
}

ApiOr<std::shared_ptr<LoadedModel>> ModelPool::Acquire(const std::string& name) {
  const CatalogEntry* entry = name.empty() ? nullptr : Find(name);
  if (pinned_ && (entry == nullptr || entry->id == catalog_[0].id)) return pinned_;
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return Unavailable("the server is shutting down");
  if (entry == nullptr) {
    if (!name.empty()) {
      return NotFound("The model '" + name + "' does not exist (GET /v1/models lists the models)",
                      "model_not_found");
    }
    if (!lru_.empty()) return lru_.front().second;
    if (catalog_.empty()) return Unavailable("no model to serve");
    entry = &catalog_[0];
  }
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if (it->first == entry->id) {
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.front().second;
    }
  }
  // Let the least recently used go first, so that at most max_resident_ stay loaded (one
  // still streaming is freed when its last request ends).
  while (lru_.size() >= max_resident_) lru_.pop_back();
  auto loaded = loader_(*entry);
  if (!loaded.ok()) {
    return ApiError{503, "cannot load the model '" + entry->id + "': " + loaded.status().message(), "server_error",
                    "", "model_not_loaded"};
  }
  ++loads_;
  lru_.emplace_front(entry->id, *loaded);
  return lru_.front().second;
}

void ModelPool::Drain(std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<LoadedModel>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
    for (auto& [id, m] : lru_) all.push_back(m);
  }
  if (pinned_) all.push_back(pinned_);
  // Each gets the grace period at once: drain them side by side.
  std::vector<std::thread> threads;
  for (auto& m : all) threads.emplace_back([m, grace] { m->Drain(grace); });
  for (auto& t : threads) t.join();
}

std::vector<std::string> ModelPool::Resident() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, m] : lru_) out.push_back(id);
  return out;
}

int64_t ModelPool::loads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loads_;
}

}  // namespace gemlet::server
