// One field of a model's JSON config (config.json, or its text/vision/audio part), read with its
// JSON type checked, so that a wrong file gets an error that names the field.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace gemlet::model {

// *out = j[key] for a bool (a JSON boolean), an integer type (a JSON integer) or a floating
// type (any JSON number). A missing or null field is an error when `required`; otherwise *out
// keeps its default. `what` names the config in the messages, e.g. "drafter config \"x\" is not
// an integer".
template <typename T>
Status GetConfigField(const nlohmann::json& j, const char* key, T* out, bool required,
                      std::string_view what = "config") {
  auto it = j.find(key);
  auto error = [&](std::string_view problem) {
    return InvalidArgument(std::string(what) + " \"" + key + "\" " + std::string(problem));
  };
  if (it == j.end() || it->is_null()) {
    if (required) return InvalidArgument(std::string(what) + " has no \"" + key + "\"");
    return Status::Ok();
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return error("is not a boolean");
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) return error("is not an integer");
  } else {
    static_assert(std::is_floating_point_v<T>, "config fields are bools, integers or numbers");
    if (!it->is_number()) return error("is not a number");
  }
  *out = it->get<T>();
  return Status::Ok();
}

}  // namespace gemlet::model
