// gemlet: one binary, many subcommands (tools/cli/cmd_*.cc register themselves).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/cli/command.h"
#include "tools/hub/model_store.h"

namespace {

void PrintHelp() {
  auto& reg = gemlet::cli::CommandRegistry();
  std::sort(reg.begin(), reg.end(),
            [](const auto& a, const auto& b) { return std::strcmp(a.name, b.name) < 0; });
  std::printf(
      "gemlet %s — Gemma 4 E2B/E4B on edge CPUs\n\n"
      "usage: gemlet COMMAND [FLAGS]   (gemlet COMMAND --help for details)\n\ncommands:\n",
      GEMLET_VERSION);
  for (const auto& c : reg) std::printf("  %-12s %s\n", c.name, c.summary);
  std::printf(
      "\nexit codes: 0 success, 1 failure, 2 bad flags or arguments, 3 verification failed\n");
}

// `-m NAME` in every subcommand: a stored model's name (gemlet pull) becomes its file's path.
// A path that exists, and anything that is not a stored model's name, is left as it is.
std::vector<std::string> ResolveModelNames(std::vector<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if ((a == "-m" || a == "--model") && i + 1 < args.size()) {
      args[i + 1] = gemlet::hub::ResolveModelArg(args[i + 1]);
      ++i;
    } else if (a.rfind("--model=", 0) == 0) {
      a = "--model=" + gemlet::hub::ResolveModelArg(a.substr(8));
    } else if (a.rfind("-m=", 0) == 0) {
      a = "-m=" + gemlet::hub::ResolveModelArg(a.substr(3));
    }
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    PrintHelp();
    return argc < 2 ? gemlet::cli::kExitUsage : gemlet::cli::kExitOk;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    std::printf("gemlet %s\n", GEMLET_VERSION);
    return 0;
  }
  const std::string name = argv[1];
  for (const auto& c : gemlet::cli::CommandRegistry()) {
    if (name == c.name) {
      gemlet::cli::Flags flags(name, ResolveModelNames(std::vector<std::string>(argv + 2, argv + argc)));
      if (flags.help()) {
        std::printf("%s", c.usage);
        return gemlet::cli::kExitOk;
      }
      return c.run(flags);
    }
  }
  std::fprintf(stderr, "gemlet: unknown command '%s' (see gemlet help)\n", name.c_str());
  return gemlet::cli::kExitUsage;
}
