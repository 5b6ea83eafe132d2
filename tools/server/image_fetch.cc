#include "tools/server/image_fetch.h"

#if GEMLET_HAVE_CURL
#include <curl/curl.h>
#endif

namespace gemlet::server {

#if GEMLET_HAVE_CURL

namespace {

struct Body {
  std::vector<uint8_t> bytes;
  size_t max = 0;
  bool too_big = false;
};

size_t OnData(char* data, size_t size, size_t n, void* user) {
  auto* b = static_cast<Body*>(user);
  const size_t len = size * n;
  if (b->bytes.size() + len > b->max) {
    b->too_big = true;
    return 0;  // aborts the transfer
  }
  b->bytes.insert(b->bytes.end(), data, data + len);
  return len;
}

// curl_global_init once, before any thread uses libcurl.
bool CurlReady() {
  static const bool ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return ok;
}

}  // namespace

bool ImageFetchAvailable() { return true; }

Result<std::vector<uint8_t>> FetchImage(const std::string& url, const std::string& part,
                                        const ImageFetchOptions& options) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return InvalidArgument("'" + part + "': only http(s) image URLs are fetched");
  }
  if (!CurlReady()) return Internal("libcurl failed to initialize");
  CURL* c = curl_easy_init();
  if (!c) return Internal("libcurl failed to start a transfer");
  Body body;
  body.max = options.max_bytes;
  char err[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, options.timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, options.timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "gemlet");
  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  if (body.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
    return InvalidArgument("'" + part + "': the image at the URL is larger than " +
                           std::to_string(options.max_bytes) + " bytes");
  }
  if (rc != CURLE_OK) {
    return InvalidArgument("'" + part + "': cannot fetch the image URL: " +
                           (err[0] ? std::string(err) : std::string(curl_easy_strerror(rc))));
  }
  if (status < 200 || status >= 300) {
    return InvalidArgument("'" + part + "': fetching the image URL answered HTTP " + std::to_string(status));
  }
  if (body.bytes.empty()) return InvalidArgument("'" + part + "': the image URL gave no data");
  return std::move(body.bytes);
}

#else

bool ImageFetchAvailable() { return false; }

Result<std::vector<uint8_t>> FetchImage(const std::string&, const std::string& part, const ImageFetchOptions&) {
  return Unsupported("'" + part + "': this build has no libcurl, so image URLs cannot be fetched");
}

#endif

}  // namespace gemlet::server
