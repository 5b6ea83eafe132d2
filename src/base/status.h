// Status and Result<T>: errors the outside world causes (files, flags, requests, context
// overflow). Programmer invariants use GEMLET_CHECK instead.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace gemlet {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad flag, bad request, invalid UTF-8, ...
  kNotFound,         // missing file or tensor
  kIo,               // read/write/mmap failure
  kCorrupt,          // malformed or hostile file contents
  kUnsupported,      // valid input we do not handle (unknown tensor type, architecture)
  kOutOfRange,       // context overflow, too many tokens
  kCancelled,
  kInternal,
};

const char* ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "message" for errors, "ok" otherwise.
  std::string ToString() const { return ok() ? std::string("ok") : message_; }
  // Returns a copy with "context: " prepended to the message.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(ErrorCode::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(ErrorCode::kNotFound, std::move(m)); }
inline Status IoError(std::string m) { return Status(ErrorCode::kIo, std::move(m)); }
inline Status Corrupt(std::string m) { return Status(ErrorCode::kCorrupt, std::move(m)); }
inline Status Unsupported(std::string m) { return Status(ErrorCode::kUnsupported, std::move(m)); }
inline Status OutOfRange(std::string m) { return Status(ErrorCode::kOutOfRange, std::move(m)); }
inline Status Cancelled(std::string m) { return Status(ErrorCode::kCancelled, std::move(m)); }
inline Status Internal(std::string m) { return Status(ErrorCode::kInternal, std::move(m)); }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status(ErrorCode::kInternal, "Result built from ok Status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, const char* msg);

}  // namespace gemlet

#define GEMLET_CONCAT_INNER(a, b) a##b
#define GEMLET_CONCAT(a, b) GEMLET_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define RETURN_IF_ERROR(expr)                     \
  do {                                            \
    ::gemlet::Status _st = (expr);                \
    if (!_st.ok()) return _st;                    \
  } while (0)

// ASSIGN_OR_RETURN(auto x, Foo()): unwraps a Result or returns its Status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(GEMLET_CONCAT(_res_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

// Programmer invariants only: never for input from files, flags or the network.
#define GEMLET_CHECK(cond)                                                      \
  do {                                                                          \
    if (!(cond)) ::gemlet::CheckFailed(__FILE__, __LINE__, #cond, nullptr);     \
  } while (0)
#define GEMLET_CHECK_MSG(cond, msg)                                             \
  do {                                                                          \
    if (!(cond)) ::gemlet::CheckFailed(__FILE__, __LINE__, #cond, (msg));       \
  } while (0)
