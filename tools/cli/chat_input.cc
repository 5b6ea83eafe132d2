#include "tools/cli/chat_input.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>

#if defined(GEMLET_HAVE_LIBEDIT)
#include <histedit.h>
#endif

namespace gemlet::cli {

namespace {

std::atomic<bool> g_interrupted{false};
// Self-pipe: the SIGINT handler writes a byte so that a reader waiting in poll() wakes up
// whenever Ctrl+C comes, even between a check of the flag and the wait.
int g_wake[2] = {-1, -1};

void OnSigint(int) {
  g_interrupted.store(true);
  if (g_wake[1] >= 0) {
    const int saved = errno;
    const char c = 1;
    [[maybe_unused]] ssize_t n = write(g_wake[1], &c, 1);
    errno = saved;
  }
}

// Empties the wake pipe (the Ctrl+C it tells of was seen through the flag).
void DrainWake() {
  char buf[64];
  if (g_wake[0] >= 0) {
    while (read(g_wake[0], buf, sizeof(buf)) > 0) {
    }
  }
}

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
//
// The terminal between two reads: libedit puts it in its editing mode (no echo, not
// canonical) while a line is read and back to the terminal's cooked mode when el_gets
// returns. In cooked mode, keys typed while an answer streams are echoed by the kernel and
// echoed again by libedit at the next prompt, and a Ctrl+D among them is taken by the
// kernel's canonical processing (it becomes an end-of-line that libedit, in its raw mode,
// reads as a NUL), so Ctrl+D would not exit. So while the chat runs the terminal stays in a
// "hold" mode between reads: not canonical, no echo, signals on (Ctrl+C still stops an
// answer) without flushing the input. Keys typed meanwhile wait, unprocessed, for libedit to
// read and echo them after the next prompt, also when Ctrl+C stopped the answer. The terminal's own mode is restored at the end.
//
// Ctrl+C at the prompt: libedit retries a read interrupted by a signal, so it reads through
// our own function, which waits on stdin and on the self-pipe and ends the line when Ctrl+C
// came.
class EditReader : public LineReader {
 public:
  explicit EditReader(std::string history_path) : path_(std::move(history_path)) {
    // Characters are decoded and shown in the terminal's locale; a single-byte one (the "C"
    // locale of a bare environment) is replaced by C.UTF-8 so that UTF-8 input still works.
    if (std::setlocale(LC_CTYPE, "") == nullptr || MB_CUR_MAX == 1) std::setlocale(LC_CTYPE, "C.UTF-8");
    have_cooked_ = tcgetattr(STDIN_FILENO, &cooked_) == 0;
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
    el_set(el_, EL_GETCFN, &EditReader::GetChar);
    el_source(el_, nullptr);    // ~/.editrc, if the user has one
    Hold();
  }
  ~EditReader() override {
    el_end(el_);
    history_end(hist_);
    if (have_cooked_) tcsetattr(STDIN_FILENO, TCSADRAIN, &cooked_);
  }
  Result Read(const std::string& prompt, std::string* line) override {
    prompt_ = prompt;
    int count = 0;
    g_interrupted.store(false);
    DrainWake();
    const char* s = el_gets(el_, &count);
    Hold();  // el_gets left the terminal in cooked mode
    if (s == nullptr || count <= 0 || g_interrupted.load()) {
      std::fputs("\n", stdout);
      std::fflush(stdout);
      if (g_interrupted.exchange(false)) {
        el_reset(el_);
        return Result::kInterrupted;
      }
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

  // One character for libedit: 1 and *wc, 0 at the end of the input, -1 when Ctrl+C came
  // (or on a read error), which ends el_gets.
  static int GetChar(EditLine*, wchar_t* wc) {
    char bytes[MB_LEN_MAX];
    size_t n = 0;
    std::mbstate_t state{};
    for (;;) {
      if (g_interrupted.load()) return -1;
      struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_wake[0], POLLIN, 0}};
      if (poll(fds, g_wake[0] >= 0 ? 2 : 1, -1) < 0) {
        if (errno == EINTR) continue;
        return -1;
      }
      if (fds[1].revents & POLLIN) DrainWake();
      if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t r = read(STDIN_FILENO, bytes + n, 1);
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return -1;
      }
      if (r == 0) return 0;
      ++n;
      const size_t got = std::mbrtowc(wc, bytes, n, &state);
      if (got == static_cast<size_t>(-2) && n < sizeof(bytes)) {
        state = std::mbstate_t{};
        continue;  // an incomplete UTF-8 sequence: read on
      }
      if (got == static_cast<size_t>(-1) || got == static_cast<size_t>(-2)) {
        n = 0;  // an invalid sequence: dropped
        state = std::mbstate_t{};
        continue;
      }
      return 1;
    }
  }

  // Not canonical, no echo, signals on (see the class comment).
  void Hold() {
    if (!have_cooked_) return;
    struct termios t = cooked_;
    t.c_lflag &= ~(ICANON | ECHO | ECHONL | IEXTEN);
    // NOFLSH: the terminal would otherwise throw away the keys typed ahead when Ctrl+C
    // raises SIGINT in the middle of an answer.
    t.c_lflag |= ISIG | NOFLSH;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &t);
  }

  std::string path_, prompt_;
  EditLine* el_ = nullptr;
  History* hist_ = nullptr;
  struct termios cooked_;
  bool have_cooked_ = false;
};
#endif

}  // namespace

void InstallInterruptHandler() {
  if (g_wake[0] < 0 && pipe(g_wake) == 0) {
    for (int fd : g_wake) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
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
