// `gemlet chat` driven through a pseudo-terminal (forkpty), as a user at a terminal would:
// a three-turn conversation whose later turns prefill only their own tokens (read from
// /stats and checked against the tokenizer), /reset, /save then /load giving the identical
// greedy continuation, Ctrl+C in the middle of an answer and at the prompt, Ctrl+D, the demo
// model when no -m is given, and scripted (piped) input.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/mapped_file.h"
#include "format/gemlet_file.h"
#include "text/tokenizer.h"

namespace gemlet::cli {
namespace chat_pty_test {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string& TestDir() {
  static const std::string d = [] {
    const std::string p = ::testing::TempDir() + "/chat_pty." + std::to_string(::getpid());
    fs::create_directories(p);
    return p;
  }();
  return d;
}

// Runs `gemlet ARGS` to completion with output to a file; returns the exit code.
int RunGemlet(const std::string& args, std::string* output = nullptr, const std::string& env = "") {
  const std::string out = TestDir() + "/run.out";
  const std::string cmd = env + " " + GEMLET_BINARY + " " + args + " >" + out + " 2>&1 </dev/null";
  const int rc = std::system(cmd.c_str());
  if (output) {
    auto text = ReadFileToString(out);
    *output = text.ok() ? *text : "";
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The tiny model, synthesized and converted once through the CLI.
const std::string& TinyModel() {
  static const std::string path = [] {
    const std::string src = TestDir() + "/tiny-src", out = TestDir() + "/tiny.gemlet";
    std::string log;
    EXPECT_EQ(RunGemlet("synth --preset tiny -o " + src + " -q", &log), 0) << log;
    EXPECT_EQ(RunGemlet("convert " + src + " -o " + out + " --quiet", &log), 0) << log;
    return out;
  }();
  return path;
}

const Tokenizer& TinyTokenizer() {
  static const Tokenizer* tok = [] {
    auto file = GemletFile::Open(TinyModel());
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    auto t = Tokenizer::FromGemlet(**file);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return new Tokenizer(std::move(*t));
  }();
  return *tok;
}

int64_t TokenCount(const std::string& text) {
  auto ids = TinyTokenizer().Encode(text);
  EXPECT_TRUE(ids.ok());
  return ids.ok() ? static_cast<int64_t>(ids->size()) : -1;
}

// Every wait on the child is bounded (a hang fails the test instead of blocking it), and
// generous: CI runs these under ASan+UBSan on a loaded 2-core machine, where the slowest
// step (making the demo model) takes many seconds.
constexpr double kWaitSeconds = 180;

Clock::time_point Deadline(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// A child process on a pseudo-terminal; every wait is bounded.
class Pty {
 public:
  Pty(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    struct winsize ws = {40, 200, 0, 0};
    pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(GEMLET_BINARY));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(GEMLET_BINARY, argv.data());
      _exit(127);
    }
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
  }
  ~Pty() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  bool started() const { return pid_ > 0; }

  void Send(const std::string& bytes) { ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), ssize_t(bytes.size())); }
  // Types a line and presses Enter.
  void Line(const std::string& line) { Send(line + "\r"); }

  // Waits until `needle` appears at or after `*from`; moves *from past it. False on timeout.
  bool WaitFor(const std::string& needle, size_t* from, double seconds = kWaitSeconds) {
    const auto end = Deadline(seconds);
    for (;;) {
      const size_t at = out_.find(needle, *from);
      if (at != std::string::npos) {
        *from = at + needle.size();
        return true;
      }
      if (Clock::now() > end || !Pump(end)) return false;
    }
  }
  // Waits for the prompt after `*from` (the answer or command output comes before it).
  std::string UntilPrompt(size_t* from, double seconds = kWaitSeconds) {
    const size_t start = *from;
    EXPECT_TRUE(WaitFor(">>> ", from, seconds)) << "no prompt; output so far:\n" << out_.substr(start);
    return out_.substr(start, *from - start);
  }
  // Waits for the exit; the exit code, or -1 on timeout.
  int Exit(double seconds = kWaitSeconds) {
    const auto end = Deadline(seconds);
    while (Clock::now() < end) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      Pump(Clock::now() + std::chrono::milliseconds(50));
    }
    return -1;
  }
  // Waits until the output is at least `n` bytes long.
  bool WaitForBytes(size_t n, double seconds = kWaitSeconds) {
    const auto end = Deadline(seconds);
    while (out_.size() < n) {
      if (Clock::now() > end || !Pump(end)) return false;
    }
    return true;
  }
  const std::string& output() const { return out_; }

 private:
  // Reads what is available until `end`; false once the terminal is closed.
  bool Pump(Clock::time_point end) {
    const int ms = std::max<int>(1, std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    struct pollfd p = {fd_, POLLIN, 0};
    if (poll(&p, 1, std::min(ms, 100)) <= 0) return true;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n > 0) {
      out_.append(buf, n);
      return true;
    }
    return n < 0 && errno == EAGAIN;
  }
  int fd_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string out_;
};

struct Stats {
  int64_t prefilled = -1, reused = -1, generated = -1, position = -1;
  bool whole = false;
  std::string ended;
};

Stats ParseStats(const std::string& text) {
  Stats s;
  std::smatch m;
  static const std::regex turn(
      R"(prefilled (\d+) tokens \((the whole conversation|this turn only); (\d+) reused from the cache\), generated (\d+) tokens, ended: ([a-z ()-]+))");
  static const std::regex ctx(R"(context: (\d+) of (\d+) tokens)");
  if (std::regex_search(text, m, turn)) {
    s.prefilled = std::stoll(m[1]);
    s.whole = m[2] == "the whole conversation";
    s.reused = std::stoll(m[3]);
    s.generated = std::stoll(m[4]);
    s.ended = m[5];
  }
  if (std::regex_search(text, m, ctx)) s.position = std::stoll(m[1]);
  return s;
}

std::vector<std::string> Env() { return {"XDG_CACHE_HOME=" + TestDir() + "/cache", "HOME=" + TestDir()}; }

// gemlet chat on the tiny model, greedy, answers of exactly n tokens (--ignore-eos).
std::unique_ptr<Pty> StartChat(int n, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"chat", "-m", TinyModel(), "--temp", "0", "-n", std::to_string(n),
                                   "--ignore-eos", "--no-history", "--threads", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<Pty>(args, Env());
}

// Tokens a later turn prefills: the previous answer's last token, then the rest of its turn
// and this user turn (the answer ended at the token limit, so the turn is closed for it).
int64_t OwnTokens(const std::string& text) {
  return 1 + TokenCount("<turn|>\n<|turn>user\n" + text + "<turn|>\n<|turn>model\n");
}

TEST(ChatPty, ThreeTurnsThenResetLaterTurnsPrefillOnlyTheirOwnTokens) {
  auto pty = StartChat(8);
  ASSERT_TRUE(pty->started());
  size_t at = 0;
  pty->UntilPrompt(&at);
  const std::vector<std::string> turns = {"Hello there", "What is a tiny model?", "Thanks, bye"};
  int64_t position = 0;
  for (size_t i = 0; i < turns.size(); ++i) {
    pty->Line(turns[i]);
    pty->UntilPrompt(&at);
    pty->Line("/stats");
    const Stats s = ParseStats(pty->UntilPrompt(&at));
    ASSERT_GE(s.prefilled, 0) << pty->output();
    EXPECT_EQ(s.generated, 8);
    EXPECT_EQ(s.ended, "token limit (-n)");
    if (i == 0) {
      EXPECT_TRUE(s.whole);
      EXPECT_EQ(s.prefilled, TokenCount("<bos><|turn>user\nHello there<turn|>\n<|turn>model\n"));
    } else {
      EXPECT_FALSE(s.whole) << "turn " << i + 1 << " prefilled the whole conversation again";
      EXPECT_EQ(s.reused, position);
      EXPECT_EQ(s.prefilled, OwnTokens(turns[i])) << "turn " << i + 1;
    }
    // The context grows by what was prefilled and generated (the last token waits for the next turn).
    EXPECT_EQ(s.position, position + s.prefilled + s.generated - 1);
    position = s.position;
  }
  pty->Line("/reset");
  EXPECT_TRUE(pty->WaitFor("[new conversation]", &at));
  pty->UntilPrompt(&at);
  pty->Line("/stats");
  std::string out = pty->UntilPrompt(&at);
  EXPECT_NE(out.find("no turn yet"), std::string::npos) << out;
  EXPECT_EQ(ParseStats(out).position, 0) << out;
  pty->Line("Hello there");
  pty->UntilPrompt(&at);
  pty->Line("/stats");
  const Stats s = ParseStats(pty->UntilPrompt(&at));
  EXPECT_TRUE(s.whole);
  EXPECT_EQ(s.prefilled, TokenCount("<bos><|turn>user\nHello there<turn|>\n<|turn>model\n"));
  pty->Send("\x04");  // Ctrl+D
  EXPECT_EQ(pty->Exit(), 0);
}

// The answer to `message` as the user reads it: the output after the echoed input line up to
// the next prompt, without terminal control (carriage returns, escape sequences) and the
// surrounding line breaks. The echo itself is libedit's and is not part of the answer.
std::string Answer(Pty& pty, const std::string& message, size_t* at) {
  pty.Line(message);
  EXPECT_TRUE(pty.WaitFor(message, at)) << pty.output();
  EXPECT_TRUE(pty.WaitFor("\n", at)) << pty.output();
  const std::string out = pty.UntilPrompt(at);
  std::string text = std::regex_replace(out.substr(0, out.size() - 4), std::regex("\x1b\\[[0-9;?]*[A-Za-z]"), "");
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  // The echo ends the input line; what follows is the answer alone.
  EXPECT_EQ(text.find(message), std::string::npos) << "the input line was echoed again: " << text;
  return text;
}

TEST(ChatPty, SaveThenLoadGivesTheIdenticalGreedyContinuation) {
  const std::string file = TestDir() + "/saved.session";
  auto pty = StartChat(12);
  size_t at = 0;
  pty->UntilPrompt(&at);
  Answer(*pty, "First message", &at);
  pty->Line("/save " + file);
  EXPECT_TRUE(pty->WaitFor("[saved " + file, &at)) << pty->output();
  pty->UntilPrompt(&at);
  const std::string first = Answer(*pty, "Second message", &at);
  EXPECT_GT(first.size(), 2u);
  Answer(*pty, "Third message", &at);  // wanders off; /load must bring it back
  pty->Line("/load " + file);
  EXPECT_TRUE(pty->WaitFor("KV cache restored: no prefill needed", &at)) << pty->output();
  pty->UntilPrompt(&at);
  const std::string again = Answer(*pty, "Second message", &at);
  EXPECT_EQ(again, first);
  pty->Line("/stats");
  const Stats s = ParseStats(pty->UntilPrompt(&at));
  EXPECT_FALSE(s.whole);
  EXPECT_EQ(s.prefilled, OwnTokens("Second message"));
  pty->Send("\x04");
  EXPECT_EQ(pty->Exit(), 0);

  // A fresh process resumes from the file the same way.
  auto fresh = StartChat(12);
  at = 0;
  fresh->UntilPrompt(&at);
  fresh->Line("/load " + file);
  EXPECT_TRUE(fresh->WaitFor("no prefill needed", &at));
  fresh->UntilPrompt(&at);
  EXPECT_EQ(Answer(*fresh, "Second message", &at), first);
  fresh->Line("/load " + TestDir() + "/no-such-file");
  EXPECT_TRUE(fresh->WaitFor("error: ", &at));
  fresh->UntilPrompt(&at);
  fresh->Send("\x04");
  EXPECT_EQ(fresh->Exit(), 0);
}

// Whether `text` (terminal output) holds control characters other than line breaks and tabs.
// The chat's own styling (thinking is shown dim: ESC [ 2 m … ESC [ 0 m) is not model text;
// any other control character is.
bool HasControlCharacters(const std::string& text) {
  const std::string plain = std::regex_replace(text, std::regex("\x1b\\[[0-9;]*m"), "");
  return std::any_of(plain.begin(), plain.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f;
  });
}

// `text` with bytes below 0x20 (but \n) and 0x7f written as \xNN, for failure messages.
std::string Escaped(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n') || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

// The answers are sampled (seeded), not greedy: a greedy answer of the random tiny model can
// settle into a loop of special tokens, which are not shown, and so never visibly stream.
TEST(ChatPty, CtrlCStopsTheAnswerAndClearsThePromptCtrlDExits) {
  auto pty = StartChat(100000, {"--ctx", "110000", "--temp", "1", "--top-k", "0", "--top-p", "1", "--seed", "7"});
  size_t at = 0;
  pty->UntilPrompt(&at);
  pty->Line("Tell me a very long story");
  ASSERT_TRUE(pty->WaitFor("Tell me a very long story", &at));
  ASSERT_TRUE(pty->WaitForBytes(at + 200)) << "the answer did not stream: " << pty->output().substr(at);
  pty->Send("\x03");  // Ctrl+C
  ASSERT_TRUE(pty->WaitFor("[interrupted]", &at)) << "Ctrl+C did not stop the answer";
  pty->UntilPrompt(&at);
  pty->Line("/stats");
  Stats s = ParseStats(pty->UntilPrompt(&at));
  EXPECT_EQ(s.ended, "interrupted");
  EXPECT_GT(s.generated, 10);
  EXPECT_LT(s.generated, 100000);

  // At the prompt Ctrl+C drops the typed line. (Typed once the prompt has settled: in one CI
  // run, keys sent within microseconds of the prompt's appearance, while libedit was still
  // switching the terminal into its editing mode, were neither echoed nor signalled; a person
  // cannot type that fast, and type-ahead during an answer has its own test below.)
  // Under ASan with other tests beside it, even 200 ms was once not enough (no prompt for 180 s:
  // the keys were lost): its echo is awaited before Ctrl+C, and Ctrl+C is pressed again
  // until the prompt comes back (a second Ctrl+C at the prompt clears an empty line).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  pty->Send("half a line");
  size_t echo = at;
  (void)pty->WaitFor("half a line", &echo, 30);
  bool prompt = false;
  for (int tries = 0; tries < 3 && !prompt; ++tries) {
    pty->Send("\x03");
    size_t p = at;
    prompt = pty->WaitFor(">>> ", &p, 20);
  }
  pty->UntilPrompt(&at);
  pty->Line("/stats");
  std::string out = pty->UntilPrompt(&at);
  EXPECT_EQ(out.find("unknown command"), std::string::npos) << out;
  EXPECT_EQ(ParseStats(out).position, s.position) << "the dropped line was sent: " << out;

  // The conversation goes on after the interruption, continuing the cache: the interrupted
  // answer is closed with <turn|> (no pending token).
  pty->Line("Shorter please");
  ASSERT_TRUE(pty->WaitFor("Shorter please", &at));
  ASSERT_TRUE(pty->WaitForBytes(at + 100)) << "the answer did not stream: " << pty->output().substr(at);
  const size_t answer_at = at;
  pty->Send("\x03");
  ASSERT_TRUE(pty->WaitFor("[interrupted]", &at));
  // The model's byte tokens produce any byte; none reaches the terminal as a control character.
  const std::string answer = pty->output().substr(answer_at, at - answer_at);
  EXPECT_FALSE(HasControlCharacters(answer)) << Escaped(answer);
  pty->UntilPrompt(&at);
  pty->Line("/stats");
  const Stats s2 = ParseStats(pty->UntilPrompt(&at));
  EXPECT_FALSE(s2.whole);
  EXPECT_EQ(s2.reused, s.position);
  EXPECT_EQ(s2.prefilled, TokenCount("<turn|>\n<|turn>user\nShorter please<turn|>\n<|turn>model\n"));
  pty->Send("\x04");
  EXPECT_EQ(pty->Exit(), 0);
}

// Keys typed while an answer streams (type-ahead) are neither echoed into the answer nor lost:
// they wait for the next prompt, where libedit reads and echoes them once. A Ctrl+D typed
// then still exits (in the terminal's cooked mode the kernel would echo the keys and swallow
// the Ctrl+D as an end-of-line; the chat holds the terminal in non-canonical mode between reads).
TEST(ChatPty, KeysTypedWhileAnAnswerStreamsWaitForThePromptAndCtrlDStillExits) {
  // Sampled, not greedy: the random tiny model's greedy answer to this prompt can settle on a
  // byte token that a terminal never shows (control characters are dropped), and the test
  // needs visible text streaming while it types.
  auto pty = StartChat(1000, {"--ctx", "4096", "--temp", "1", "--seed", "1"});
  size_t at = 0;
  pty->UntilPrompt(&at);
  pty->Line("Tell me a very long story");
  ASSERT_TRUE(pty->WaitFor("Tell me a very long story", &at));
  ASSERT_TRUE(pty->WaitForBytes(at + 100)) << "the answer did not stream: " << pty->output().substr(at);
  pty->Line("/stats");  // typed during the answer
  pty->Send("\x04");    // Ctrl+D, also during the answer
  const std::string answer = pty->UntilPrompt(&at);
  EXPECT_EQ(answer.find("/stats"), std::string::npos) << "the typed line was echoed into the answer";
  const std::string stats = pty->UntilPrompt(&at);
  const Stats st = ParseStats(stats);
  EXPECT_EQ(st.generated, 1000) << stats;  // the whole answer came before the typed command ran
  EXPECT_EQ(stats.find("/stats"), stats.rfind("/stats")) << "echoed more than once: " << stats;
  EXPECT_EQ(pty->Exit(), 0) << "Ctrl+D typed during the answer did not exit: " << pty->output().substr(at);
}

TEST(ChatPty, WithoutAModelItMakesTheDemoModelOnceAndSaysItIsRandom) {
  const std::string cache = TestDir() + "/demo-cache";
  fs::remove_all(cache);
  std::vector<std::string> env = {"XDG_CACHE_HOME=" + cache, "HOME=" + TestDir()};
  auto pty = std::make_unique<Pty>(std::vector<std::string>{"chat", "--temp", "0", "-n", "4", "--no-history"}, env);
  size_t at = 0;
  ASSERT_TRUE(pty->WaitFor("RANDOM", &at)) << pty->output();
  EXPECT_NE(pty->output().find("gemlet convert /path/to/gemma-4-E2B-it -o e2b.gemlet"), std::string::npos);
  pty->UntilPrompt(&at);
  pty->Line("Hi");
  pty->UntilPrompt(&at);
  pty->Send("\x04");
  EXPECT_EQ(pty->Exit(), 0);
  const std::string model = cache + "/gemlet/demo-tiny.gemlet";
  ASSERT_TRUE(fs::exists(model));
  const auto made = fs::last_write_time(model);
  std::string out;
  EXPECT_EQ(RunGemlet("run -p Hi -n 3 --temp 0", &out, "XDG_CACHE_HOME=" + cache), 0) << out;
  EXPECT_NE(out.find("RANDOM"), std::string::npos) << out;
  EXPECT_EQ(fs::last_write_time(model), made) << "the cached demo model was made again";
}

// Keys typed while an answer streams survive a Ctrl+C that stops it (the terminal flushed
// its input queue on SIGINT): they appear at the next prompt and Enter runs them.
TEST(ChatPty, KeysTypedBeforeCtrlCAreKeptForThePrompt) {
  auto pty = StartChat(100000, {"--ctx", "110000", "--temp", "1", "--top-k", "0", "--top-p", "1", "--seed", "7"});
  size_t at = 0;
  pty->UntilPrompt(&at);
  pty->Line("Tell me a very long story");
  ASSERT_TRUE(pty->WaitFor("Tell me a very long story", &at));
  ASSERT_TRUE(pty->WaitForBytes(at + 200)) << "the answer did not stream: " << pty->output().substr(at);
  pty->Send("/stats");  // typed during the answer, no Enter yet
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pty->Send("\x03");  // Ctrl+C
  ASSERT_TRUE(pty->WaitFor("[interrupted]", &at)) << "Ctrl+C did not stop the answer";
  pty->UntilPrompt(&at);
  ASSERT_TRUE(pty->WaitFor("/stats", &at)) << "the typed keys were lost: " << pty->output().substr(at);
  pty->Line("");
  const Stats s = ParseStats(pty->UntilPrompt(&at));
  EXPECT_EQ(s.ended, "interrupted");
  pty->Send("\x04");
  EXPECT_EQ(pty->Exit(), 0);
}

// A notice at the end of an answer stands on its own line; /think with a wrong word says so.
TEST(ChatPipe, ContextFullNoticeOnItsOwnLineAndThinkArgumentChecked) {
  const std::string script = TestDir() + "/notice.txt", log = TestDir() + "/notice.out";
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    std::fputs("/think maybe\n/think\nTell me a story\n", f);
    std::fclose(f);
  }
  const std::string cmd = std::string(GEMLET_BINARY) + " chat -m " + TinyModel() +
                          " --temp 1 --seed 3 --ignore-eos --ctx 48 --no-history <" + script + " >" + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto text = ReadFileToString(log);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("error: /think takes on or off, not 'maybe'"), std::string::npos) << *text;
  EXPECT_NE(text->find("thinking is off (/think on|off)"), std::string::npos) << *text;
  const size_t notice = text->find("[context full: ");
  ASSERT_NE(notice, std::string::npos) << *text;
  ASSERT_GT(notice, 0u);
  EXPECT_EQ((*text)[notice - 1], '\n') << "the notice is glued to the answer: " << *text;
  EXPECT_EQ(text->find("\n\n", notice), std::string::npos) << "an empty line after the notice: " << *text;
}

TEST(ChatPipe, ScriptedInputWorksWithoutATerminal) {
  const std::string script = TestDir() + "/script.txt";
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    std::fputs("Hello\n/stats\nAgain\n/stats\n/think on\n/bogus\n", f);
    std::fclose(f);
  }
  const std::string log = TestDir() + "/pipe.out";
  const std::string cmd = std::string(GEMLET_BINARY) + " chat -m " + TinyModel() +
                          " --temp 0 -n 5 --ignore-eos --no-history <" + script + " >" + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto text = ReadFileToString(log);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find(">>> "), std::string::npos) << "no prompt without a terminal";
  EXPECT_NE(text->find("this turn only"), std::string::npos) << *text;
  EXPECT_NE(text->find("[thinking on"), std::string::npos) << *text;
  EXPECT_NE(text->find("error: unknown command /bogus (see /help)"), std::string::npos) << *text;
}

// Runs a scripted chat (one message or command a line) on the tiny model; its output.
std::string ScriptedChat(const std::string& lines, const std::string& flags) {
  const std::string script = TestDir() + "/policy.txt", log = TestDir() + "/policy.out";
  std::FILE* f = std::fopen(script.c_str(), "w");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return "";
  std::fputs(lines.c_str(), f);
  std::fclose(f);
  const std::string cmd = std::string(GEMLET_BINARY) + " chat -m " + TinyModel() + " " + flags + " --no-history <" +
                          script + " >" + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  auto text = ReadFileToString(log);
  return text.ok() ? *text : "";
}

// A full context: --context-policy stop refuses the message with a notice that says what to
// do (and /reset starts over); drop-oldest drops whole old turns, keeps the system prompt and
// prefills the rest again, so every message is answered.
TEST(ChatPipe, ContextPoliciesWhenTheContextIsFull) {
  std::string lines;
  for (int i = 0; i < 6; ++i) lines += "Message number " + std::to_string(i) + "\n/stats\n";
  const std::string flags = "--temp 0 -n 8 --ignore-eos --ctx 64 --system 'Be brief.'";

  const std::string stop = ScriptedChat(lines + "/reset\nAfter the reset\n/stats\n", flags);
  EXPECT_NE(stop.find("error: the context is full: "), std::string::npos) << stop;
  EXPECT_NE(stop.find("/reset starts a new conversation (or run with --context-policy drop-oldest)"),
            std::string::npos)
      << stop;
  EXPECT_EQ(stop.find("dropped the"), std::string::npos) << stop;
  const size_t reset = stop.find("[new conversation]");
  ASSERT_NE(reset, std::string::npos) << stop;
  const Stats after = ParseStats(stop.substr(reset));
  EXPECT_TRUE(after.whole);
  EXPECT_EQ(after.generated, 8) << stop.substr(reset);

  const std::string drop = ScriptedChat(lines, flags + " --context-policy drop-oldest");
  EXPECT_EQ(drop.find("error:"), std::string::npos) << drop;
  EXPECT_NE(drop.find("[context full: dropped the 2 oldest messages"), std::string::npos) << drop;
  // Every message was answered: six turns of 8 tokens, none over the limit.
  size_t turns = 0;
  for (size_t at = drop.find("generated 8 tokens"); at != std::string::npos;
       at = drop.find("generated 8 tokens", at + 1)) {
    ++turns;
  }
  EXPECT_EQ(turns, 6u) << drop;
  // shift keeps the first turn (a context of 64 holds only one turn beside it: 128 here).
  const std::string shift =
      ScriptedChat(lines, "--temp 0 -n 8 --ignore-eos --ctx 128 --system 'Be brief.' --context-policy shift");
  EXPECT_EQ(shift.find("error:"), std::string::npos) << shift;
  EXPECT_NE(shift.find("oldest messages after the first turn"), std::string::npos) << shift;
  EXPECT_NE(shift.find("shift policy"), std::string::npos) << shift;
  EXPECT_EQ(shift.find("of 64 tokens"), std::string::npos) << shift;
  std::smatch m;
  std::string rest = drop;
  while (std::regex_search(rest, m, std::regex(R"(context: (\d+) of 64 tokens)"))) {
    EXPECT_LE(std::stoll(m[1]), 64);
    rest = m.suffix();
  }
}

// A long document for the prefill tests: about `tokens` tokens of the tiny model's vocabulary.
std::string LongDocument(int64_t tokens) {
  const std::string sentence = "The quick brown fox jumps over the lazy dog while the cat sleeps. ";
  const int64_t per = TokenCount(sentence);
  std::string text;
  for (int64_t i = 0; i < tokens / std::max<int64_t>(1, per); ++i) text += sentence;
  return text;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = TestDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}

// run -f FILE and stdin give the same greedy text; off a terminal there is no progress line,
// and -q drops the timings line too.
TEST(RunLongPrompt, FileAndStdinNoProgressOffATerminal) {
  const std::string path = WriteFile("doc-small.txt", LongDocument(600));
  const std::string args = "run -m " + TinyModel() + " --temp 0 -n 4 --chunk 64 --threads 1 ";
  std::string from_file, from_stdin, quiet;
  ASSERT_EQ(RunGemlet(args + "-f " + path, &from_file, "GEMLET_PROGRESS_DELAY_MS=0"), 0) << from_file;
  const std::string out = TestDir() + "/stdin.out";
  const int rc = std::system((std::string("GEMLET_PROGRESS_DELAY_MS=0 ") + GEMLET_BINARY + " " + args + ">" + out +
                              " 2>&1 <" + path).c_str());
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  from_stdin = ReadFileToString(out).value();
  EXPECT_EQ(from_file.substr(0, from_file.find("prompt: ")), from_stdin.substr(0, from_stdin.find("prompt: ")));
  EXPECT_EQ(from_file.find("prefill "), std::string::npos) << from_file;
  EXPECT_NE(from_file.find("prompt: "), std::string::npos) << from_file;
  ASSERT_EQ(RunGemlet(args + "-q -f " + path, &quiet), 0) << quiet;
  EXPECT_EQ(quiet.find("prompt: "), std::string::npos) << quiet;
  EXPECT_EQ(from_file.substr(0, from_file.find("prompt: ")), quiet) << "-q changed the text";
  std::string err;
  EXPECT_EQ(RunGemlet(args + "-f " + path + " -p hi", &err), 2) << err;
  EXPECT_EQ(RunGemlet(args + "-f " + TestDir() + "/no-such-file", &err), 1) << err;
}

// On a terminal the prefill shows its progress (tokens, tok/s, ETA), and Ctrl+C stops it:
// run reports how far it got (exit code 130).
TEST(RunLongPrompt, ProgressOnATerminalAndCtrlCStopsThePrefill) {
  const std::string path = WriteFile("doc-long.txt", LongDocument(60000));
  std::vector<std::string> env = Env();
  env.push_back("GEMLET_PROGRESS_DELAY_MS=0");
  Pty pty({"run", "-m", TinyModel(), "-f", path, "--temp", "0", "-n", "4", "--chunk", "16", "--threads", "1"}, env);
  ASSERT_TRUE(pty.started());
  size_t at = 0;
  ASSERT_TRUE(pty.WaitFor("prefill ", &at)) << pty.output();
  ASSERT_TRUE(pty.WaitFor("tok/s, ETA ", &at)) << pty.output();
  pty.Send("\x03");
  ASSERT_TRUE(pty.WaitFor("interrupted during the prefill: ", &at)) << pty.output();
  EXPECT_EQ(pty.Exit(), 130);
}

// chat /file PATH: the document is the message; Ctrl+C during its prefill stops the turn and
// keeps what was prefilled, so the next try starts from there (stopped again here, so that
// the test does not wait for the whole document).
TEST(ChatPty, FileMessageProgressAndCtrlCKeepsThePrefill) {
  const std::string path = WriteFile("doc-chat.txt", LongDocument(60000));
  std::vector<std::string> env = Env();
  env.push_back("GEMLET_PROGRESS_DELAY_MS=0");
  Pty pty({"chat", "-m", TinyModel(), "--temp", "0", "-n", "2", "--ignore-eos", "--no-history", "--threads", "1",
           "--chunk", "16", "--ctx", "131072"},
          env);
  size_t at = 0;
  pty.UntilPrompt(&at);
  Stats s[2];
  for (Stats& st : s) {
    pty.Line("/file " + path);
    ASSERT_TRUE(pty.WaitFor("tok/s, ETA ", &at)) << pty.output();
    pty.Send("\x03");
    ASSERT_TRUE(pty.WaitFor("[interrupted]", &at)) << pty.output();
    pty.UntilPrompt(&at);
    pty.Line("/stats");
    st = ParseStats(pty.UntilPrompt(&at));
    EXPECT_EQ(st.ended, "interrupted");
    EXPECT_EQ(st.generated, 0);
  }
  EXPECT_GT(s[0].position, 16);
  EXPECT_EQ(s[1].reused, s[0].position) << "the interrupted prefill was not kept";
  EXPECT_GT(s[1].position, s[0].position);
  pty.Line("/file " + TestDir() + "/no-such-file");
  EXPECT_NE(pty.UntilPrompt(&at).find("error: "), std::string::npos);
  pty.Send("\x04");
  EXPECT_EQ(pty.Exit(), 0);
}

TEST(ChatFlags, BadFlagsAreOneLineUsageErrors) {
  std::string out;
  EXPECT_EQ(RunGemlet("chat -m " + TinyModel() + " --context-policy sometimes", &out), 2);
  EXPECT_NE(out.find("--context-policy must be stop, drop-oldest or shift"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(RunGemlet("chat -m " + TestDir() + "/missing.gemlet", &out), 1);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(RunGemlet("chat --help", &out), 0);
  EXPECT_NE(out.find("examples:"), std::string::npos);
  EXPECT_NE(out.find("--temp"), std::string::npos);
}

}  // namespace chat_pty_test
}  // namespace gemlet::cli
