#include "tools/hub/pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "tools/convert/convert.h"
#include "tools/convert/progress.h"
#include "tools/convert/sha256.h"

namespace gemlet::hub {

namespace fs = std::filesystem;

namespace {

// An exclusive lock on `path` for one pull of a repository at a time.
class FileLock {
 public:
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Acquire(const std::string& path, const std::string& what) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return IoError(path + ": cannot create the lock file");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) return Unsupported("another gemlet pull of " + what + " is running");
    return Status::Ok();
  }

 private:
  int fd_ = -1;
};

}  // namespace

Result<std::vector<HubFile>> SelectFiles(const RepoListing& listing, const std::string& repo) {
  std::vector<HubFile> out;
  bool weights = false;
  for (const HubFile& f : listing.files) {
    if (f.path.find('/') != std::string::npos || f.path.empty() || f.path[0] == '.') continue;
    const bool st = f.path.ends_with(".safetensors");
    if (st || f.path.ends_with(".json") || f.path.ends_with(".jinja")) out.push_back(f);
    weights = weights || st;
  }
  if (!weights) {
    return Unsupported(repo + " has no *.safetensors weights at its top level (for a GGUF file, download it " +
                       "and run gemlet convert FILE.gguf -o OUT.gemlet)");
  }
  return out;
}

Result<PullReport> Pull(const ModelStore& store, const PullOptions& options) {
  const RepoRef& ref = options.ref;
  const std::string name = ModelName(ref);
  HubClient hub(options.hub);
  ASSIGN_OR_RETURN(RepoListing listing, hub.List(ref));
  ASSIGN_OR_RETURN(std::vector<HubFile> files, SelectFiles(listing, ref.repo));
  ASSIGN_OR_RETURN(std::string model_path, store.PathOf(name));

  PullReport report;
  report.commit = listing.commit;
  if (!options.force && !listing.commit.empty()) {
    if (auto have = store.Find(name); have && have->name == name && have->commit == listing.commit) {
      report.model = *have;
      report.up_to_date = true;
      return report;
    }
  }

  const std::string src = store.DownloadDir(ref);
  std::error_code ec;
  fs::create_directories(src, ec);
  if (ec) return IoError(src + ": cannot create the download folder: " + ec.message());
  FileLock lock;
  RETURN_IF_ERROR(lock.Acquire(src + "/.lock", name));
  // A download left by an earlier run of another commit is stale: its parts cannot resume.
  const std::string commit_file = src + "/.commit";
  {
    std::string old;
    if (std::FILE* f = std::fopen(commit_file.c_str(), "rb")) {
      char buf[128];
      old.assign(buf, std::fread(buf, 1, sizeof(buf), f));
      std::fclose(f);
    }
    if (!old.empty() && old != listing.commit) {
      for (const auto& e : fs::directory_iterator(src, ec)) {
        if (e.path().filename() != ".lock") fs::remove_all(e.path(), ec);
      }
    }
    if (std::FILE* f = std::fopen(commit_file.c_str(), "wb")) {
      std::fwrite(listing.commit.data(), 1, listing.commit.size(), f);
      std::fclose(f);
    }
  }

  uint64_t total = 0;
  for (const HubFile& f : files) total += f.size > 0 ? static_cast<uint64_t>(f.size) : 0;
  convert::Progress progress(total, options.progress, nullptr, -1, "pull");
  if (options.progress) {
    std::fprintf(stderr, "gemlet pull: %s (commit %s): %zu files, %s from %s\n", name.c_str(),
                 listing.commit.empty() ? "?" : listing.commit.substr(0, 12).c_str(), files.size(),
                 convert::Progress::FormatBytes(total).c_str(), hub.endpoint().c_str());
  }
  for (const HubFile& f : files) {
    const std::string final_path = src + "/" + f.path;
    const std::string part = final_path + ".part";
    if (fs::exists(final_path, ec)) {  // verified by an earlier run
      progress.Skip(f.size > 0 ? static_cast<uint64_t>(f.size) : 0, f.path);
      continue;
    }
    std::error_code size_ec;
    const auto before = fs::exists(part, size_ec) ? fs::file_size(part, size_ec) : 0;
    if (before > 0) progress.Skip(before, f.path);  // not in this run's speed
    RETURN_IF_ERROR(hub.Download(ref, f, part, [&](uint64_t n) {
      report.downloaded_bytes += static_cast<int64_t>(n);
      progress.Add(n, f.path);
    }));
    if (!f.sha256.empty()) {
      ASSIGN_OR_RETURN(std::string got, convert::Sha256File(part));
      if (got != f.sha256) {
        fs::remove(part, ec);
        return Corrupt(f.path + ": sha256 mismatch: the hub lists " + f.sha256 + ", the download has " + got +
                       "; the corrupt download was deleted, nothing was stored (run the pull again)");
      }
    }
    fs::rename(part, final_path, ec);
    if (ec) return IoError(final_path + ": cannot rename the download: " + ec.message());
  }
  progress.Finish();

  fs::create_directories(fs::path(model_path).parent_path(), ec);
  const std::string tmp = model_path + ".tmp." + std::to_string(::getpid());
  convert::ConvertOptions co;
  co.src = src;
  co.out = tmp;
  co.plan = options.plan;
  co.overrides = options.overrides;
  co.threads = options.threads;
  co.progress = options.progress;
  auto conv = convert::Convert(co);
  if (!conv.ok()) {
    fs::remove(tmp, ec);
    return conv.status().WithContext("converting " + name + " (downloaded into " + src + ")");
  }
  fs::rename(tmp, model_path, ec);
  if (ec) return IoError(model_path + ": cannot store the model: " + ec.message());
  RETURN_IF_ERROR(store.WriteInfo(ref, listing.commit, hub.endpoint()));
  if (options.keep_source) {
    fs::remove(commit_file, ec);
    fs::remove(src + "/.lock", ec);
    report.source_dir = src;
  } else {
    fs::remove_all(src, ec);
    fs::remove(fs::path(src).parent_path(), ec);  // the owner's folder, once empty
  }
  auto stored = store.Find(name);
  if (!stored) return Internal(model_path + ": the stored model cannot be listed");
  report.model = *stored;
  return report;
}

}  // namespace gemlet::hub
