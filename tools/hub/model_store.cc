#include "tools/hub/model_store.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace gemlet::hub {

namespace fs = std::filesystem;

namespace {

constexpr char kExt[] = ".gemlet";

void ReadInfo(const std::string& json_path, StoredModel* m) {
  std::ifstream in(json_path);
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  auto str = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  m->repo = str("repo");
  m->revision = str("revision");
  m->commit = str("commit");
  m->endpoint = str("endpoint");
  if (j.contains("pulled_at") && j["pulled_at"].is_number_integer()) m->pulled_at = j["pulled_at"].get<int64_t>();
}

}  // namespace

Result<std::string> StoreDir() {
  const char* models = std::getenv("GEMLET_MODELS");
  if (models != nullptr && *models != '\0') return std::string(models);
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return std::string(xdg) + "/gemlet/models";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.cache/gemlet/models";
  return NotFound("none of GEMLET_MODELS, XDG_CACHE_HOME and HOME is set: set GEMLET_MODELS to a writable "
                  "folder for the model store");
}

std::string ModelName(const RepoRef& ref) {
  return ref.revision == "main" ? ref.repo : ref.repo + "@" + ref.revision;
}

Result<ModelStore> ModelStore::Open() {
  ASSIGN_OR_RETURN(std::string dir, StoreDir());
  return ModelStore(dir);
}

Result<std::string> ModelStore::PathOf(const std::string& name) const {
  ASSIGN_OR_RETURN(RepoRef ref, ParseRepoRef(name));
  return dir_ + "/" + ModelName(ref) + kExt;
}

std::string ModelStore::DownloadDir(const RepoRef& ref) const {
  return dir_ + "/.downloads/" + ModelName(ref);
}

std::vector<StoredModel> ModelStore::List() const {
  std::vector<StoredModel> out;
  std::error_code ec;
  for (fs::directory_iterator owners(dir_, ec), end; !ec && owners != end; owners.increment(ec)) {
    const std::string owner = owners->path().filename().string();
    if (owner.empty() || owner[0] == '.' || !owners->is_directory(ec)) continue;
    std::error_code ec2;
    for (fs::directory_iterator it(owners->path(), ec2); !ec2 && it != end; it.increment(ec2)) {
      const std::string file = it->path().filename().string();
      if (!file.ends_with(kExt) || !it->is_regular_file(ec2)) continue;
      StoredModel m;
      m.name = owner + "/" + file.substr(0, file.size() - (sizeof(kExt) - 1));
      if (!ParseRepoRef(m.name).ok()) continue;  // a temporary file, or not ours
      m.path = it->path().string();
      m.bytes = static_cast<int64_t>(it->file_size(ec2));
      ReadInfo(m.path.substr(0, m.path.size() - (sizeof(kExt) - 1)) + ".json", &m);
      out.push_back(std::move(m));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::optional<StoredModel> ModelStore::Find(const std::string& name) const {
  std::vector<StoredModel> all = List();
  for (const auto& m : all) {
    if (m.name == name) return m;
  }
  std::optional<StoredModel> only;
  for (const auto& m : all) {
    if (m.name.ends_with("/" + name)) {
      if (only) return std::nullopt;  // ambiguous: the full name is needed
      only = m;
    }
  }
  return only;
}

Status ModelStore::WriteInfo(const RepoRef& ref, const std::string& commit, const std::string& endpoint) const {
  const std::string path = dir_ + "/" + ModelName(ref) + ".json";
  nlohmann::json j = {{"repo", ref.repo},
                      {"revision", ref.revision},
                      {"commit", commit},
                      {"endpoint", endpoint},
                      {"pulled_at", std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count()}};
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) return IoError(path + ": cannot write");
  return Status::Ok();
}

Status ModelStore::Remove(const std::string& name) const {
  std::optional<StoredModel> m = Find(name);
  if (!m) {
    return NotFound("no stored model named '" + name + "' in " + dir_ + " (gemlet list shows them)");
  }
  std::error_code ec;
  fs::remove(m->path, ec);
  if (ec) return IoError(m->path + ": cannot delete: " + ec.message());
  fs::remove(m->path.substr(0, m->path.size() - (sizeof(kExt) - 1)) + ".json", ec);
  const fs::path owner = fs::path(m->path).parent_path();
  if (fs::is_empty(owner, ec)) fs::remove(owner, ec);
  return Status::Ok();
}

std::string ResolveModelArg(const std::string& arg) {
  std::error_code ec;
  if (arg.empty() || fs::exists(arg, ec)) return arg;
  auto store = ModelStore::Open();
  if (!store.ok()) return arg;
  std::optional<StoredModel> m = store->Find(arg);
  return m ? m->path : arg;
}

}  // namespace gemlet::hub
