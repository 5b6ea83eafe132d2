// The local model store: converted models by name, in $GEMLET_MODELS (default
// $XDG_CACHE_HOME/gemlet/models, else ~/.cache/gemlet/models).
//   {store}/{owner}/{name}[@{revision}].gemlet   the model (`gemlet pull` writes it)
//   {store}/{owner}/{name}[@{revision}].json     where it came from (StoredModel below)
//   {store}/.downloads/...                        checkpoints being downloaded (*.part files)
// A model's name is its repository id, with "@revision" unless the revision is main:
// "google/gemma-4-E2B-it", "google/gemma-4-E2B-it@v1".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/hub/hub_client.h"

namespace gemlet::hub {

struct StoredModel {
  std::string name;      // "google/gemma-4-E2B-it"
  std::string path;      // the .gemlet file
  int64_t bytes = 0;     // its size
  std::string repo, revision, commit;  // from the sidecar JSON (empty if it is missing)
  std::string endpoint;  // the hub it came from
  int64_t pulled_at = 0; // Unix seconds
};

// The store's folder (not created here). An error if neither GEMLET_MODELS, XDG_CACHE_HOME
// nor HOME is set.
Result<std::string> StoreDir();

// The name a pull of `ref` stores its model under.
std::string ModelName(const RepoRef& ref);

class ModelStore {
 public:
  explicit ModelStore(std::string dir) : dir_(std::move(dir)) {}
  static Result<ModelStore> Open();  // at StoreDir()
  const std::string& dir() const { return dir_; }

  // Where the model `name` lives (whether or not it exists); an error for a malformed name.
  Result<std::string> PathOf(const std::string& name) const;
  std::string DownloadDir(const RepoRef& ref) const;
  // Every stored model, sorted by name.
  std::vector<StoredModel> List() const;
  // The stored model called `name`, or the only one whose name ends in "/name" (so
  // "gemma-4-E2B-it" finds "google/gemma-4-E2B-it" when no other owner has one).
  std::optional<StoredModel> Find(const std::string& name) const;
  // Writes the sidecar of a model just stored at PathOf(ModelName(ref)).
  Status WriteInfo(const RepoRef& ref, const std::string& commit, const std::string& endpoint) const;
  // Deletes the model and its sidecar (and its owner's folder once empty).
  Status Remove(const std::string& name) const;

 private:
  std::string dir_;
};

// What `-m X` means: X itself when it is an existing path or not a stored model's name, else
// that stored model's file.
std::string ResolveModelArg(const std::string& arg);

}  // namespace gemlet::hub
