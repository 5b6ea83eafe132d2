#include "tools/cli/chat_input.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#if defined(GEMLET_HAVE_LIBEDIT)
#include <histedit.h>
#endif

namespace gemlet::cli {

namespace {

std::atomic<bool> g_interrupted{false};

void OnSigint(int) { g_interrupted.store(true); }

// Plain lines from stdin (pipes, files, and terminals when libedit is missing).
class PlainReader : public LineReader {
 public:
  explicit PlainReader(bool tty) : tty_(tty) {}
  Result Read(const std::string& prompt, std::string* line) override {
    if (tty_) {
      std::fputs(prompt.c_str(), stdout);
      std::fflush(stdout);
    }
    line->clear();
    for (;;) {
      const int c = std::getc(stdin);
      if (c == EOF) {
        if (std::ferror(stdin) && errno == EINTR && g_interrupted.exchange(false)) {
          std::clearerr(stdin);
          if (tty_) std::fputs("\n", stdout);
          return Result::kInterrupted;
        }
        return line->empty() ? Result::kEof : Result::kLine;
      }
      if (c == '\n') break;
      line->push_back(static_cast<char>(c));
    }
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return Result::kLine;
  }
  void Remember(const std::string&) override {}
  bool interactive() const override { return tty_; }

 private:
  bool tty_;
};

#if defined(GEMLET_HAVE_LIBEDIT)
// libedit with its own history; emacs key bindings.
class EditReader : public LineReader {
 public:
  explicit EditReader(std::string history_path) : path_(std::move(history_path)) {
    el_ = el_init("gemlet", stdin, stdout, stderr);
    hist_ = history_init();
    HistEvent ev;
    history(hist_, &ev, H_SETSIZE, 1000);
    history(hist_, &ev, H_SETUNIQUE, 1);
    if (!path_.empty()) history(hist_, &ev, H_LOAD, path_.c_str());
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_HIST, history, hist_);
    el_set(el_, EL_CLIENTDATA, this);
    el_set(el_, EL_PROMPT, &EditReader::Prompt);
    el_set(el_, EL_SIGNAL, 0);  // our SIGINT handler interrupts the read
    el_source(el_, nullptr);    // ~/.editrc, if the user has one
  }
  ~EditReader() override {
    el_end(el_);
    history_end(hist_);
  }
  Result Read(const std::string& prompt, std::string* line) override {
    prompt_ = prompt;
    int count = 0;
    g_interrupted.store(false);
    const char* s = el_gets(el_, &count);
    if (s == nullptr || count <= 0) {
      if (g_interrupted.exchange(false)) {
        el_reset(el_);
        std::fputs("\n", stdout);
        std::fflush(stdout);
        return Result::kInterrupted;
      }
      std::fputs("\n", stdout);
      return Result::kEof;
    }
    line->assign(s, count);
    while (!line->empty() && (line->back() == '\n' || line->back() == '\r')) line->pop_back();
    return Result::kLine;
  }
  void Remember(const std::string& line) override {
    if (line.empty()) return;
    HistEvent ev;
    history(hist_, &ev, H_ENTER, line.c_str());
    if (!path_.empty()) history(hist_, &ev, H_SAVE, path_.c_str());
  }
  bool interactive() const override { return true; }

 private:
  static char* Prompt(EditLine* el) {
    void* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    return const_cast<char*>(static_cast<EditReader*>(self)->prompt_.c_str());
  }
  std::string path_, prompt_;
  EditLine* el_ = nullptr;
  History* hist_ = nullptr;
};
#endif

}  // namespace

void InstallInterruptHandler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read blocked at the prompt returns EINTR
  sigaction(SIGINT, &sa, nullptr);
}

std::atomic<bool>& InterruptFlag() { return g_interrupted; }

std::unique_ptr<LineReader> LineReader::Create(const std::string& history_path) {
  const bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
#if defined(GEMLET_HAVE_LIBEDIT)
  if (tty) return std::make_unique<EditReader>(history_path);
#endif
  return std::make_unique<PlainReader>(tty);
}

}  // namespace gemlet::cli
