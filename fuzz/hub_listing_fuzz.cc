// The hub's repository listing (tools/hub/hub_client.h ParseListing) and the repository ids
// `gemlet pull` takes (ParseRepoRef): outside input from the network and the command line.
// Every input must give a listing or an error, never a crash; a listing's files then go
// through SelectFiles, and an accepted id's store name must stay inside the store.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/hub/hub_client.h"
#include "tools/hub/model_store.h"
#include "tools/hub/pull.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto listing = gemlet::hub::ParseListing(text, "fuzz");
  if (listing.ok()) {
    for (const auto& f : listing->files) {
      if (!f.sha256.empty() && f.sha256.size() != 64) __builtin_trap();
    }
    (void)gemlet::hub::SelectFiles(*listing, "o/n");
  }
  auto ref = gemlet::hub::ParseRepoRef(text.substr(0, 256));
  if (ref.ok()) {
    const std::string name = gemlet::hub::ModelName(*ref);
    if (name.find("..") != std::string::npos || name[0] == '/' || name[0] == '.') __builtin_trap();
  }
  return 0;
}
