#include "tools/hub/hub_client.h"

#if GEMLET_HAVE_CURL
#include <curl/curl.h>
#endif
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

namespace gemlet::hub {
namespace {

bool IdChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// One part of a repository id or a revision: [A-Za-z0-9._-]{1,96}, not "..", not starting with
// '.' or '-' (so it can name a file in the model store).
bool ValidPart(const std::string& s) {
  if (s.empty() || s.size() > 96 || s[0] == '.' || s[0] == '-') return false;
  if (s.find("..") != std::string::npos) return false;
  for (char c : s) {
    if (!IdChar(c)) return false;
  }
  return true;
}

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

#if GEMLET_HAVE_CURL
void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What one transfer wrote: the body goes to `file` while the status is 2xx, else (up to 4 KB)
// to `error_body`.
struct Transfer {
  CURL* curl = nullptr;
  std::FILE* file = nullptr;
  std::string* text = nullptr;  // a body kept in memory (the listing)
  std::string error_body;
  const ProgressFn* progress = nullptr;
  bool write_failed = false;
};

size_t OnData(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code >= 300) {
    if (t->error_body.size() < 4096) t->error_body.append(data, std::min<size_t>(bytes, 4096));
    return bytes;
  }
  if (t->text != nullptr) {
    if (t->text->size() + bytes > (64u << 20)) return 0;  // a listing is never this large
    t->text->append(data, bytes);
    return bytes;
  }
  if (std::fwrite(data, 1, bytes, t->file) != bytes) {
    t->write_failed = true;
    return 0;
  }
  if (t->progress != nullptr && *t->progress) (*t->progress)(bytes);
  return bytes;
}

// The message for an HTTP error status of `what`.
Status HttpError(long code, const std::string& what, const std::string& body, bool has_token) {
  std::string hint;
  if (code == 401) {
    hint = has_token ? ": the token (HF_TOKEN) was refused"
                     : ": the repository is gated or private; set HF_TOKEN to a token that has "
                       "access (https://huggingface.co/settings/tokens)";
  } else if (code == 403) {
    hint = ": access denied (for a gated repository, accept its terms on the hub with the "
           "account of HF_TOKEN)";
  } else if (code == 404) {
    hint = ": not found (check the repository, revision and file names)";
  }
  std::string detail;
  // The hub's errors are JSON {"error": "..."}; show that text when there is one.
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    detail = " (" + j["error"].get<std::string>().substr(0, 200) + ")";
  }
  Status st(code == 404 ? ErrorCode::kNotFound : ErrorCode::kIo,
            what + ": HTTP " + std::to_string(code) + hint + detail);
  return st;
}

bool Transient(CURLcode rc) {
  switch (rc) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

#endif  // GEMLET_HAVE_CURL

}  // namespace

std::string EscapeSegment(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (IdChar(static_cast<char>(c)) || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<RepoRef> ParseRepoRef(const std::string& text) {
  RepoRef ref;
  std::string repo = text;
  if (size_t at = text.find('@'); at != std::string::npos) {
    repo = text.substr(0, at);
    ref.revision = text.substr(at + 1);
    if (!ValidPart(ref.revision)) {
      return InvalidArgument("'" + text + "': the revision after '@' must be a branch, tag or commit of " +
                             "[A-Za-z0-9._-]");
    }
  }
  const size_t slash = repo.find('/');
  if (slash == std::string::npos || !ValidPart(repo.substr(0, slash)) || !ValidPart(repo.substr(slash + 1))) {
    return InvalidArgument("'" + text + "' is not a repository id: expected OWNER/NAME[@REVISION], " +
                           "e.g. google/gemma-4-E2B-it");
  }
  ref.repo = repo;
  return ref;
}

Result<RepoListing> ParseListing(const std::string& json, const std::string& where) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Corrupt(where + ": the listing is not a JSON object");
  RepoListing out;
  if (j.contains("sha") && j["sha"].is_string()) out.commit = j["sha"].get<std::string>();
  if (!j.contains("siblings") || !j["siblings"].is_array()) {
    return Corrupt(where + ": the listing has no \"siblings\" array");
  }
  for (const auto& s : j["siblings"]) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) {
      return Corrupt(where + ": a sibling without \"rfilename\"");
    }
    HubFile f;
    f.path = s["rfilename"].get<std::string>();
    if (s.contains("size") && s["size"].is_number_integer()) f.size = s["size"].get<int64_t>();
    if (s.contains("lfs") && s["lfs"].is_object()) {
      const auto& lfs = s["lfs"];
      if (lfs.contains("sha256") && lfs["sha256"].is_string()) f.sha256 = lfs["sha256"].get<std::string>();
      if (lfs.contains("size") && lfs["size"].is_number_integer()) f.size = lfs["size"].get<int64_t>();
      bool hex = f.sha256.size() == 64;
      for (char& c : f.sha256) {
        if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
        hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
      }
      if (!hex) return Corrupt(where + ": " + f.path + ": the LFS sha256 is not 64 hex digits");
    }
    if (f.size < -1) return Corrupt(where + ": " + f.path + ": negative size");
    out.files.push_back(std::move(f));
  }
  return out;
}

HubClient::HubClient(HubOptions options) : options_(std::move(options)) {
  if (options_.endpoint.empty()) options_.endpoint = Getenv("HF_ENDPOINT");
  if (options_.endpoint.empty()) options_.endpoint = "https://huggingface.co";
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
  if (options_.token.empty()) options_.token = Getenv("HF_TOKEN");
  if (options_.token.empty()) options_.token = Getenv("HUGGING_FACE_HUB_TOKEN");
#if GEMLET_HAVE_CURL
  GlobalInit();
#endif
}

std::string HubClient::ResolveUrl(const RepoRef& ref, const std::string& file) const {
  std::string path;
  size_t start = 0;
  while (start <= file.size()) {  // each segment escaped, the '/' kept
    size_t end = file.find('/', start);
    if (end == std::string::npos) end = file.size();
    if (!path.empty() || start > 0) path += '/';
    path += EscapeSegment(file.substr(start, end - start));
    start = end + 1;
  }
  return options_.endpoint + "/" + ref.repo + "/resolve/" + EscapeSegment(ref.revision) + "/" + path;
}

#if GEMLET_HAVE_CURL
namespace {

// One GET. `resume_from` > 0 asks for the bytes from there on.
CURLcode Get(const std::string& url, const std::string& token, const HubOptions& o, Transfer* t,
             int64_t resume_from, long* code, std::string* curl_error) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return CURLE_FAILED_INIT;
  t->curl = curl;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + token).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "gemlet");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, o.connect_timeout_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, o.stall_timeout_s);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, t);
  if (resume_from > 0) curl_easy_setopt(curl, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(resume_from));
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, code);
  *curl_error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  t->curl = nullptr;
  return rc;
}

}  // namespace

Result<RepoListing> HubClient::List(const RepoRef& ref) const {
  const std::string url = options_.endpoint + "/api/models/" + ref.repo + "/revision/" +
                          EscapeSegment(ref.revision) + "?blobs=true";
  std::string body, curl_error;
  for (int attempt = 0;; ++attempt) {
    Transfer t;
    body.clear();
    t.text = &body;
    long code = 0;
    const CURLcode rc = Get(url, options_.token, options_, &t, 0, &code, &curl_error);
    if (rc == CURLE_OK && code >= 200 && code < 300) break;
    const bool retry = (rc != CURLE_OK && Transient(rc)) || (rc == CURLE_OK && code >= 500);
    if (retry && attempt < options_.retries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500 * (attempt + 1)));
      continue;
    }
    if (rc != CURLE_OK) return IoError(url + ": " + curl_error);
    return HttpError(code, ref.repo + "@" + ref.revision + " (" + url + ")", t.error_body, has_token());
  }
  return ParseListing(body, url);
}

Status HubClient::Download(const RepoRef& ref, const HubFile& file, const std::string& part_path,
                           const ProgressFn& progress) const {
  const std::string url = ResolveUrl(ref, file.path);
  for (int attempt = 0;; ++attempt) {
    int64_t have = FileSize(part_path);
    if (have < 0) have = 0;
    if (file.size >= 0 && have > file.size) {  // not a prefix of this file: start again
      if (std::FILE* f = std::fopen(part_path.c_str(), "wb")) std::fclose(f);
      have = 0;
    }
    if (file.size >= 0 && have == file.size) return Status::Ok();
    std::FILE* out = std::fopen(part_path.c_str(), "ab");
    if (out == nullptr) return IoError(part_path + ": cannot open for writing");
    Transfer t;
    t.file = out;
    t.progress = &progress;
    long code = 0;
    std::string curl_error;
    const CURLcode rc = Get(url, options_.token, options_, &t, have, &code, &curl_error);
    const bool closed = std::fclose(out) == 0;
    if (t.write_failed || !closed) return IoError(part_path + ": write failed (disk full?)");
    if (rc == CURLE_RANGE_ERROR) {  // the server ignored the Range: start from zero
      if (std::FILE* f = std::fopen(part_path.c_str(), "wb")) std::fclose(f);
      if (attempt < options_.retries) continue;
    }
    if (rc == CURLE_OK && code >= 200 && code < 300) {
      const int64_t got = FileSize(part_path);
      if (file.size >= 0 && got != file.size) {
        if (got < file.size && attempt < options_.retries) continue;  // cut short: resume
        return Corrupt(file.path + ": received " + std::to_string(got) + " bytes, the hub's listing says " +
                       std::to_string(file.size));
      }
      return Status::Ok();
    }
    const bool retry = (rc != CURLE_OK && Transient(rc)) || (rc == CURLE_OK && code >= 500);
    if (retry && attempt < options_.retries) {
      std::fprintf(stderr, "gemlet pull: %s: %s; resuming at byte %lld\n", file.path.c_str(),
                   rc != CURLE_OK ? curl_error.c_str() : ("HTTP " + std::to_string(code)).c_str(),
                   static_cast<long long>(std::max<int64_t>(FileSize(part_path), 0)));
      std::this_thread::sleep_for(std::chrono::milliseconds(500 * (attempt + 1)));
      continue;
    }
    if (rc != CURLE_OK) {
      return IoError(file.path + ": " + curl_error + " (the partial download " + part_path +
                     " is kept: run the same pull again to resume)");
    }
    return HttpError(code, file.path + " (" + url + ")", t.error_body, has_token());
  }
}

#else   // !GEMLET_HAVE_CURL

namespace {
Status NoCurl() { return Unsupported("this gemlet was built without libcurl (libcurl4-openssl-dev): it cannot download"); }
}  // namespace

Result<RepoListing> HubClient::List(const RepoRef&) const { return NoCurl(); }

Status HubClient::Download(const RepoRef&, const HubFile&, const std::string&, const ProgressFn&) const {
  return NoCurl();
}

#endif  // GEMLET_HAVE_CURL

}  // namespace gemlet::hub
