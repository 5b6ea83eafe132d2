#include "tools/server/api_error.h"

#include <nlohmann/json.hpp>

namespace gemlet::server {

std::string ApiError::ToJson() const {
  nlohmann::json e = {{"message", message},
                      {"type", type},
                      {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
  return nlohmann::json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError BadRequest(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

ApiError Unauthorized(std::string message) {
  return ApiError{401, std::move(message), "invalid_request_error", "", "invalid_api_key"};
}

ApiError NotFound(std::string message, std::string code) {
  return ApiError{404, std::move(message), "invalid_request_error", "", std::move(code)};
}

ApiError MethodNotAllowed(std::string message) {
  return ApiError{405, std::move(message), "invalid_request_error", "", "method_not_allowed"};
}

ApiError PayloadTooLarge(std::string message) {
  return ApiError{413, std::move(message), "invalid_request_error", "", "request_too_large"};
}

ApiError Overloaded(std::string message, int retry_after_s) {
  ApiError e{503, std::move(message), "server_error", "", "server_overloaded"};
  e.retry_after_s = retry_after_s;
  return e;
}

ApiError InternalError(std::string message) {
  return ApiError{500, std::move(message), "server_error", "", ""};
}

ApiError FromStatus(const Status& st, std::string param) {
  switch (st.code()) {
    case ErrorCode::kInvalidArgument:
      return BadRequest(st.message(), std::move(param));
    case ErrorCode::kOutOfRange:
      return BadRequest(st.message(), std::move(param), "context_length_exceeded");
    case ErrorCode::kUnsupported:
      return BadRequest(st.message(), std::move(param), "unsupported");
    case ErrorCode::kNotFound:
      return NotFound(st.message());
    default:
      return InternalError(st.message());
  }
}

}  // namespace gemlet::server
