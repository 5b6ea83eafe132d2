// Subcommand registry and flag parsing shared by every `gemlet` subcommand, so flag names,
// --help and exit codes are consistent. Each subcommand lives in its own cmd_*.cc file and
// registers itself with GEMLET_COMMAND.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace gemlet::cli {

// Exit codes (README.md "Exit codes").
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // the command ran and failed (bad model file, I/O, ...)
constexpr int kExitUsage = 2;    // bad flags or arguments
constexpr int kExitVerifyFailed = 3;  // `run --verify` found a wrong kernel

// Flags are read lazily: each Str/Int/... call consumes the flag (and its value) it names;
// what is left afterwards is positional. Call Finish() last: it rejects unknown flags.
// Forms: `--name value`, `--name=value`, `-x value`. Names are given with their dashes.
class Flags {
 public:
  Flags(std::string command, std::vector<std::string> args);

  std::optional<std::string> Str(std::initializer_list<const char*> names);
  std::string Str(std::initializer_list<const char*> names, const std::string& def);
  // Every occurrence of a repeatable flag, in order (`--type a=q8 --type b=q4`).
  std::vector<std::string> StrAll(std::initializer_list<const char*> names);
  // Presence flag (`--json`). `--name=false` / `--name=0` read as false.
  bool Bool(std::initializer_list<const char*> names);
  Result<int64_t> Int(std::initializer_list<const char*> names, int64_t def);
  Result<double> Float(std::initializer_list<const char*> names, double def);
  // Repeated or comma-separated integers: `--tokens 2,105,9`.
  Result<std::vector<int64_t>> IntList(std::initializer_list<const char*> names);
  bool help() const { return help_; }

  // Positional arguments, in order (after every flag has been read).
  std::vector<std::string> Positional() const;
  // Error for any argument starting with '-' that no call consumed.
  Status Finish() const;
  const std::string& command() const { return command_; }

 private:
  // Index of the first unconsumed occurrence of any of `names`, or -1.
  int FindFlag(std::initializer_list<const char*> names, std::string* inline_value);

  std::string command_;
  std::vector<std::string> args_;
  std::vector<bool> used_;
  bool help_ = false;
};

struct Command {
  const char* name;
  const char* summary;  // one line for `gemlet help`
  const char* usage;    // full --help text, with examples
  int (*run)(Flags& flags);
};

std::vector<Command>& CommandRegistry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { CommandRegistry().push_back(c); }
};

// Prints "gemlet CMD: message" on one line to stderr and returns the exit code for `st`.
int ReportError(const std::string& command, const Status& st);
// For a model (or other input file) that cannot be opened or is not valid: prints as
// ReportError but always returns kExitFailure (README "Exit codes": a bad model file is 1,
// whatever status the reader chose, e.g. kInvalidArgument for a directory or a bad config).
int ReportModelError(const std::string& command, const Status& st);
// Prints "gemlet CMD: message (see gemlet CMD --help)" and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);

}  // namespace gemlet::cli

#define GEMLET_COMMAND(var, ...) \
  static ::gemlet::cli::CommandRegistrar var##_registrar(::gemlet::cli::Command{__VA_ARGS__})
