// Input of `gemlet chat`: line editing with history (libedit, history file
// ~/.cache/gemlet/history) when stdin is a terminal, plain line reading otherwise (pipes, so
// chats can be scripted), and Ctrl+C: a SIGINT handler that sets a flag the generation loop
// polls between tokens, and that clears the line at the prompt.
#pragma once

#include <atomic>
#include <memory>
#include <string>

namespace gemlet::cli {

// Installs the SIGINT handler (no SA_RESTART, so a blocked read returns). Idempotent.
void InstallInterruptHandler();
// Set by Ctrl+C; the reader of the flag clears it.
std::atomic<bool>& InterruptFlag();

class LineReader {
 public:
  enum class Result { kLine, kInterrupted, kEof };

  // Line editing if stdin and stdout are terminals (and this build has libedit); the history
  // is loaded from and saved to `history_path` ("" = no history file).
  static std::unique_ptr<LineReader> Create(const std::string& history_path);
  virtual ~LineReader() = default;

  // Reads one line (without its newline). kInterrupted: Ctrl+C at the prompt (the line is
  // dropped); kEof: Ctrl+D on an empty line or the end of the input.
  virtual Result Read(const std::string& prompt, std::string* line) = 0;
  // Adds a line to the history (and the history file).
  virtual void Remember(const std::string& line) = 0;
  virtual bool interactive() const = 0;
};

}  // namespace gemlet::cli
