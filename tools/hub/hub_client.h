// A client of the Hugging Face Hub's HTTP API, over libcurl: a repository's file listing and
// resumable file downloads. It knows the hub's URL layout and nothing about models:
//   GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true   the listing (JSON: "sha",
//       "siblings": [{"rfilename", "size", "lfs": {"sha256", "size"}}]), as huggingface_hub's
//       model_info(files_metadata=True) asks for it
//   GET {endpoint}/{repo}/resolve/{revision}/{file}   a file (LFS files redirect to a CDN)
// The endpoint is HF_ENDPOINT (default https://huggingface.co), the token HF_TOKEN, as in
// huggingface_hub; the token goes as "Authorization: Bearer" to the endpoint's host only
// (libcurl drops it on a redirect to another host, the CDN, whose URL is signed).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace gemlet::hub {

// "org/name[@revision]" as the user writes it.
struct RepoRef {
  std::string repo;               // "google/gemma-4-E2B-it"
  std::string revision = "main";  // a branch, tag or commit
};
// Repository ids are "owner/name" of [A-Za-z0-9._-] (no "..", not starting with '.' or '-');
// a revision is the same characters (no '/': refs/pr/N is not supported).
Result<RepoRef> ParseRepoRef(const std::string& text);

struct HubFile {
  std::string path;     // "model.safetensors"
  int64_t size = -1;    // bytes; -1 if the listing does not say
  std::string sha256;   // lowercase hex for LFS files; empty for small (git) files
};

struct RepoListing {
  std::string commit;  // the revision's commit sha ("sha")
  std::vector<HubFile> files;
};
// Parses the listing's JSON; `where` names it in errors.
Result<RepoListing> ParseListing(const std::string& json, const std::string& where);

struct HubOptions {
  std::string endpoint;  // without a trailing '/'; empty: $HF_ENDPOINT, else https://huggingface.co
  std::string token;     // empty: $HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN, else none
  int retries = 3;       // further attempts after an interrupted transfer (each resumes)
  long connect_timeout_s = 30;
  long stall_timeout_s = 60;  // a transfer below 1 byte/s for this long is interrupted
};

// Bytes received so far for the file being downloaded (called from the transfer loop).
using ProgressFn = std::function<void(uint64_t delta_bytes)>;

class HubClient {
 public:
  explicit HubClient(HubOptions options);
  const std::string& endpoint() const { return options_.endpoint; }
  bool has_token() const { return !options_.token.empty(); }

  Result<RepoListing> List(const RepoRef& ref) const;
  // Downloads `file` into `part_path`, appending to what a previous attempt left there
  // (a Range request; a server that answers 200 instead of 206 restarts it from zero), and
  // retries interrupted transfers. Returns when the file is whole (`expected_size` bytes when
  // known); the caller checks its hash and renames it.
  Status Download(const RepoRef& ref, const HubFile& file, const std::string& part_path,
                  const ProgressFn& progress) const;

 private:
  std::string ResolveUrl(const RepoRef& ref, const std::string& file) const;
  HubOptions options_;
};

// "%2F"-style escaping of one URL path segment (RFC 3986 unreserved characters stay).
std::string EscapeSegment(const std::string& s);

}  // namespace gemlet::hub
