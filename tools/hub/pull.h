// `gemlet pull`: a Hugging Face checkpoint by name into the model store. Lists the repository
// (HubClient), downloads its weights, config and tokenizer files into the store's .downloads
// folder (resumable *.part files), checks each LFS file's sha256 against the listing,
// converts the folder (tools/convert) into the store and deletes the download.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tools/hub/hub_client.h"
#include "tools/hub/model_store.h"

namespace gemlet::hub {

struct PullOptions {
  RepoRef ref;
  HubOptions hub;
  bool keep_source = false;  // keep the downloaded checkpoint (its folder is printed)
  bool progress = true;      // a bar with speed and ETA on a terminal, lines every 10% otherwise
  bool force = false;        // download and convert again even if the stored commit is the same
  // Passed to the converter (ConvertOptions).
  std::string plan = "default";
  std::vector<std::string> overrides;
  int threads = 0;
};

struct PullReport {
  StoredModel model;
  std::string commit;
  int64_t downloaded_bytes = 0;  // this run (resumed parts count only what was fetched)
  bool up_to_date = false;       // the stored model already came from this commit
  std::string source_dir;        // the kept checkpoint (keep_source), else empty
};

// The files of a listing that a conversion needs: the top-level *.safetensors, *.json and
// *.jinja files. An error if there are no safetensors weights.
Result<std::vector<HubFile>> SelectFiles(const RepoListing& listing, const std::string& repo);

Result<PullReport> Pull(const ModelStore& store, const PullOptions& options);

}  // namespace gemlet::hub
