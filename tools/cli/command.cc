#include "tools/cli/command.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gemlet::cli {

std::vector<Command>& CommandRegistry() {
  static std::vector<Command> registry;
  return registry;
}

Flags::Flags(std::string command, std::vector<std::string> args)
    : command_(std::move(command)), args_(std::move(args)), used_(args_.size(), false) {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (args_[i] == "--help" || args_[i] == "-h") {
      help_ = true;
      used_[i] = true;
    }
    if (args_[i] == "--") break;
  }
}

int Flags::FindFlag(std::initializer_list<const char*> names, std::string* inline_value) {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (args_[i] == "--") break;
    if (used_[i]) continue;
    const std::string& a = args_[i];
    for (const char* n : names) {
      const size_t len = std::strlen(n);
      if (a == n) {
        inline_value->clear();
        return static_cast<int>(i);
      }
      if (a.size() > len && a.compare(0, len, n) == 0 && a[len] == '=') {
        *inline_value = a.substr(len + 1);
        return static_cast<int>(i) | (1 << 30);
      }
    }
  }
  return -1;
}

std::optional<std::string> Flags::Str(std::initializer_list<const char*> names) {
  std::optional<std::string> result;
  for (;;) {  // the last occurrence wins
    std::string inline_value;
    int idx = FindFlag(names, &inline_value);
    if (idx < 0) break;
    if (idx & (1 << 30)) {
      idx &= ~(1 << 30);
      used_[idx] = true;
      result = inline_value;
    } else {
      used_[idx] = true;
      if (static_cast<size_t>(idx) + 1 < args_.size()) {
        used_[idx + 1] = true;
        result = args_[idx + 1];
      } else {
        result = std::string();  // reported by the caller's validation as an empty value
      }
    }
  }
  return result;
}

std::string Flags::Str(std::initializer_list<const char*> names, const std::string& def) {
  auto v = Str(names);
  return v ? *v : def;
}

std::vector<std::string> Flags::StrAll(std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (;;) {
    std::string inline_value;
    int idx = FindFlag(names, &inline_value);
    if (idx < 0) break;
    if (idx & (1 << 30)) {
      used_[idx & ~(1 << 30)] = true;
      out.push_back(inline_value);
    } else {
      used_[idx] = true;
      if (static_cast<size_t>(idx) + 1 < args_.size()) {
        used_[idx + 1] = true;
        out.push_back(args_[idx + 1]);
      } else {
        out.push_back(std::string());
      }
    }
  }
  return out;
}

bool Flags::Bool(std::initializer_list<const char*> names) {
  bool result = false;
  for (;;) {
    std::string inline_value;
    int idx = FindFlag(names, &inline_value);
    if (idx < 0) break;
    const bool has_inline = idx & (1 << 30);
    idx &= ~(1 << 30);
    used_[idx] = true;
    result = !(has_inline && (inline_value == "false" || inline_value == "0" || inline_value == "off"));
  }
  return result;
}

Result<int64_t> Flags::Int(std::initializer_list<const char*> names, int64_t def) {
  auto v = Str(names);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno != 0) {
    return InvalidArgument(std::string(*names.begin()) + " expects an integer, got '" + *v + "'");
  }
  return static_cast<int64_t>(x);
}

Result<double> Flags::Float(std::initializer_list<const char*> names, double def) {
  auto v = Str(names);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || errno != 0) {
    return InvalidArgument(std::string(*names.begin()) + " expects a number, got '" + *v + "'");
  }
  return x;
}

Result<std::vector<int64_t>> Flags::IntList(std::initializer_list<const char*> names) {
  auto v = Str(names);
  std::vector<int64_t> out;
  if (!v) return out;
  size_t pos = 0;
  const std::string& s = *v;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0) {
      return InvalidArgument(std::string(*names.begin()) +
                             " expects comma-separated integers, got '" + item + "'");
    }
    out.push_back(x);
    pos = comma + 1;
  }
  return out;
}

std::vector<std::string> Flags::Positional() const {
  std::vector<std::string> out;
  bool after_dashdash = false;
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!after_dashdash && args_[i] == "--") {
      after_dashdash = true;
      continue;
    }
    if (used_[i]) continue;
    if (!after_dashdash && args_[i].size() > 1 && args_[i][0] == '-' &&
        !(args_[i][1] >= '0' && args_[i][1] <= '9')) {
      continue;  // an unknown flag; Finish() reports it
    }
    out.push_back(args_[i]);
  }
  return out;
}

Status Flags::Finish() const {
  for (size_t i = 0; i < args_.size(); ++i) {
    if (args_[i] == "--") break;
    if (!used_[i] && args_[i].size() > 1 && args_[i][0] == '-' &&
        !(args_[i][1] >= '0' && args_[i][1] <= '9')) {
      return InvalidArgument("unknown flag " + args_[i]);
    }
  }
  return Status::Ok();
}

int ReportError(const std::string& command, const Status& st) {
  std::fprintf(stderr, "gemlet %s: %s\n", command.c_str(), st.message().c_str());
  return st.code() == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

int ReportModelError(const std::string& command, const Status& st) {
  std::fprintf(stderr, "gemlet %s: %s\n", command.c_str(), st.message().c_str());
  return kExitFailure;
}

int UsageError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "gemlet %s: %s (see gemlet %s --help)\n", command.c_str(), message.c_str(),
               command.c_str());
  return kExitUsage;
}

}  // namespace gemlet::cli
