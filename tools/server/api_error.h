// Errors in OpenAI's JSON shape: {"error": {"message", "type", "param", "code"}} with the
// HTTP status OpenAI uses for the same situation.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "base/status.h"

namespace gemlet::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty → null
  std::string code;   // empty → null
  int retry_after_s = 0;  // > 0 adds a Retry-After header (503)

  // The response body, e.g. {"error":{"message":"...","type":"invalid_request_error",...}}.
  std::string ToJson() const;
};

// 400 invalid_request_error naming the offending request field (`param`).
ApiError BadRequest(std::string message, std::string param = "", std::string code = "");
ApiError Unauthorized(std::string message);
ApiError NotFound(std::string message, std::string code = "");
ApiError MethodNotAllowed(std::string message);
ApiError PayloadTooLarge(std::string message);
ApiError Overloaded(std::string message, int retry_after_s);
ApiError InternalError(std::string message);
// Maps a Status from the engine (context overflow, cancelled, ...) to an API error.
ApiError FromStatus(const Status& st, std::string param = "");

// Value or ApiError, the server's Result<T>.
template <typename T>
class [[nodiscard]] ApiOr {
 public:
  ApiOr(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  ApiOr(ApiError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const ApiError& error() const { return std::get<ApiError>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace gemlet::server
