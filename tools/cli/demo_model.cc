#include "tools/cli/demo_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "format/gemlet_file.h"
#include "tools/convert/convert.h"
#include "tools/convert/synth.h"

namespace gemlet::cli {

namespace fs = std::filesystem;

Result<std::string> CacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return std::string(xdg) + "/gemlet";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.cache/gemlet";
  return NotFound("neither XDG_CACHE_HOME nor HOME is set: set one to a writable folder for gemlet's cache");
}

Result<std::string> EnsureDemoModel() {
  ASSIGN_OR_RETURN(std::string dir, CacheDir());
  const std::string path = dir + "/demo-tiny.gemlet";
  if (fs::exists(path) && GemletFile::Open(path).ok()) return path;

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create the cache folder: " + ec.message());
  const std::string tag = std::to_string(::getpid());
  const std::string src = dir + "/demo-tiny.src." + tag;
  const std::string tmp = dir + "/demo-tiny.gemlet.tmp." + tag;
  struct Cleanup {
    std::string src, tmp;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(src, e);
      fs::remove(tmp, e);
    }
  } cleanup{src, tmp};

  convert::SynthOptions so;
  so.preset = "tiny";
  so.out_dir = src;
  so.seed = 0;
  auto synth = convert::Synthesize(so);
  if (!synth.ok()) return synth.status().WithContext("making the demo model in " + dir);
  convert::ConvertOptions co;
  co.src = src;
  co.out = tmp;
  co.progress = false;
  auto conv = convert::Convert(co);
  if (!conv.ok()) return conv.status().WithContext("making the demo model in " + dir);
  fs::rename(tmp, path, ec);
  if (ec) return IoError(path + ": cannot write the demo model: " + ec.message());
  return path;
}

void PrintDemoBanner(std::FILE* out, const std::string& path) {
  std::fprintf(out,
               "gemlet: no model given (-m): using the tiny demo model %s\n"
               "  Its weights are RANDOM: it writes meaningless text. It shows that gemlet works here.\n"
               "  For a real model, convert a Gemma 4 checkpoint and pass it with -m:\n"
               "    gemlet convert /path/to/gemma-4-E2B-it -o e2b.gemlet\n"
               "    gemlet chat -m e2b.gemlet\n",
               path.c_str());
  std::fflush(out);
}

}  // namespace gemlet::cli
