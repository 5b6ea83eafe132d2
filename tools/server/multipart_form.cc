#include "tools/server/multipart_form.h"

#include <cctype>

namespace gemlet::server {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view TrimWs(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The parameters of a header value after its first ';': name=value or name="value".
std::string Param(std::string_view value, std::string_view key) {
  size_t i = value.find(';');
  while (i != std::string_view::npos && i < value.size()) {
    ++i;
    const size_t eq = value.find('=', i);
    if (eq == std::string_view::npos) return "";
    const std::string_view name = TrimWs(value.substr(i, eq - i));
    size_t j = eq + 1;
    while (j < value.size() && value[j] == ' ') ++j;
    std::string v;
    if (j < value.size() && value[j] == '"') {
      ++j;
      while (j < value.size() && value[j] != '"') {
        if (value[j] == '\\' && j + 1 < value.size()) ++j;
        v += value[j++];
      }
      i = value.find(';', j);
    } else {
      const size_t end = value.find(';', j);
      v = std::string(TrimWs(value.substr(j, end == std::string_view::npos ? std::string_view::npos : end - j)));
      i = end;
    }
    if (IEquals(name, key)) return v;
  }
  return "";
}

}  // namespace

const FormPart* MultipartForm::Find(std::string_view name) const {
  for (const FormPart& p : parts) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Result<std::string> MultipartBoundary(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  const std::string_view type = TrimWs(content_type.substr(0, semi));
  if (!IEquals(type, "multipart/form-data")) {
    return InvalidArgument("the body must be multipart/form-data (a 'file' part and fields), got Content-Type '" +
                           std::string(type) + "'");
  }
  std::string b = Param(content_type, "boundary");
  if (b.empty() || b.size() > 200) return InvalidArgument("the multipart/form-data Content-Type has no valid boundary");
  return b;
}

Result<MultipartForm> ParseMultipartForm(std::string_view body, std::string_view boundary, size_t max_parts) {
  if (boundary.empty()) return InvalidArgument("the multipart boundary is empty");
  const std::string delim = "--" + std::string(boundary);
  MultipartForm form;
  // The first delimiter: at the start or after a preamble line.
  size_t pos;
  if (body.substr(0, delim.size()) == delim) {
    pos = delim.size();
  } else {
    const size_t d = body.find("\r\n" + delim);
    if (d == std::string_view::npos) return InvalidArgument("the multipart body has no boundary line");
    pos = d + 2 + delim.size();
  }
  const std::string next = "\r\n" + delim;
  for (;;) {
    // After a delimiter: "--" ends the body, else optional whitespace and CRLF.
    if (body.substr(pos, 2) == "--") return form;
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") return InvalidArgument("the multipart body has a malformed boundary line");
    pos += 2;
    if (form.parts.size() >= max_parts)
      return InvalidArgument("the multipart body has more than " + std::to_string(max_parts) + " parts");
    const size_t head_end = body.find("\r\n\r\n", pos);
    // A part with no headers at all starts right with the blank line.
    const bool no_headers = body.substr(pos, 2) == "\r\n";
    if (!no_headers && head_end == std::string_view::npos)
      return InvalidArgument("multipart part " + std::to_string(form.parts.size() + 1) + " has no end of headers");
    FormPart part;
    const size_t data_begin = no_headers ? pos + 2 : head_end + 4;
    std::string_view headers = no_headers ? std::string_view() : body.substr(pos, head_end - pos);
    while (!headers.empty()) {
      const size_t eol = headers.find("\r\n");
      const std::string_view line = headers.substr(0, eol);
      headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view key = TrimWs(line.substr(0, colon)), value = TrimWs(line.substr(colon + 1));
      if (IEquals(key, "Content-Disposition")) {
        part.name = Param(value, "name");
        part.filename = Param(value, "filename");
      } else if (IEquals(key, "Content-Type")) {
        part.content_type = std::string(value);
      }
    }
    const size_t data_end = body.find(next, data_begin);
    if (data_end == std::string_view::npos)
      return InvalidArgument("multipart part " + std::to_string(form.parts.size() + 1) +
                             (part.name.empty() ? "" : " ('" + part.name + "')") + " has no closing boundary");
    part.data = body.substr(data_begin, data_end - data_begin);
    form.parts.push_back(std::move(part));
    pos = data_end + next.size();
  }
}

}  // namespace gemlet::server
