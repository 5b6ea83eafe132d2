// Fetching an image part's http(s) URL (`gemlet serve --allow-image-urls`; off by default, so
// the server makes no requests to other hosts unless told to). libcurl, with limits: http and
// https only (redirects too, at most 3), a size cap checked while the body arrives, a total
// time limit, and a 2xx answer required. Errors are InvalidArgument naming the part.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace gemlet::server {

struct ImageFetchOptions {
  size_t max_bytes = 20u << 20;  // the image file's bytes
  long timeout_ms = 10000;       // the whole transfer
};

// True if this build has libcurl (Debian's libcurl4-openssl-dev, scripts/deps.sh).
bool ImageFetchAvailable();

Result<std::vector<uint8_t>> FetchImage(const std::string& url, const std::string& part,
                                        const ImageFetchOptions& options = {});

}  // namespace gemlet::server
