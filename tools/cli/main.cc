// gemlet: one binary, many subcommands.
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0)) {
    std::printf("gemlet %s\n", GEMLET_VERSION);
    return 0;
  }
  std::fprintf(stderr, "usage: gemlet COMMAND [ARGS]\n");
  return 2;
}
