#include "format/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <set>

#include "format/safetensors.h"

namespace gemlet {

Result<std::unique_ptr<SafetensorsWriter>> SafetensorsWriter::Create(
    const std::string& path, std::vector<SafetensorsTensorInfo> tensors, const nlohmann::json& metadata) {
  std::unique_ptr<SafetensorsWriter> w(new SafetensorsWriter());
  w->path_ = path;
  w->tmp_path_ = path + ".tmp";

  nlohmann::json header = nlohmann::json::object();
  if (!metadata.is_null()) {
    if (!metadata.is_object()) return InvalidArgument(path + ": safetensors metadata must be an object");
    for (const auto& [k, v] : metadata.items()) {
      if (!v.is_string()) {
        return InvalidArgument(path + ": safetensors metadata value of '" + k + "' is not a string");
      }
    }
    if (!metadata.empty()) header["__metadata__"] = metadata;
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::string where = path + ": tensor '" + t.name + "'";
    if (t.name.empty() || t.name == "__metadata__") return InvalidArgument(where + ": invalid name");
    if (!names.insert(t.name).second) return InvalidArgument(where + " listed twice");
    const int esize = SafetensorsDtypeBytes(t.dtype);
    if (esize == 0) return InvalidArgument(where + ": unknown dtype '" + t.dtype + "'");
    uint64_t bytes = static_cast<uint64_t>(esize);
    for (int64_t d : t.shape) {
      if (d < 0) return InvalidArgument(where + ": negative dimension");
      if (d != 0 && bytes > UINT64_MAX / 2 / static_cast<uint64_t>(d)) {
        return InvalidArgument(where + ": size overflows");
      }
      bytes *= static_cast<uint64_t>(d);
    }
    if (offset > UINT64_MAX / 2 - bytes) return InvalidArgument(where + ": file size overflows");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    w->ends_.push_back(offset);
  }
  w->tensors_ = std::move(tensors);
  w->data_bytes_ = offset;

  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception&) {
    return InvalidArgument(path + ": a tensor name or metadata value is not valid UTF-8");
  }
  // Pad with spaces so the data starts 8-byte aligned, as the reference implementation does.
  while ((8 + json.size()) % 8 != 0) json.push_back(' ');
  w->header_bytes_ = 8 + json.size();

  w->f_ = std::fopen(w->tmp_path_.c_str(), "wb");
  if (!w->f_) return IoError(w->tmp_path_ + ": cannot create: " + std::strerror(errno));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(json.size()) >> (8 * i));
  if (std::fwrite(len, 1, 8, w->f_) != 8 || std::fwrite(json.data(), 1, json.size(), w->f_) != json.size()) {
    return IoError(w->tmp_path_ + ": write failed: " + std::strerror(errno));
  }
  // Skip over zero-size leading tensors.
  while (w->current_ < w->ends_.size() && w->ends_[w->current_] == 0) ++w->current_;
  return w;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (f_) std::fclose(f_);
  if (!finished_) std::remove(tmp_path_.c_str());
}

Status SafetensorsWriter::Append(const void* data, size_t nbytes) {
  GEMLET_CHECK(!finished_ && f_ != nullptr);
  if (nbytes > data_bytes_ - written_) {
    return InvalidArgument(path_ + ": " + std::to_string(nbytes) +
                           " bytes appended past the end of the data (" +
                           std::to_string(data_bytes_ - written_) + " left)");
  }
  if (nbytes && std::fwrite(data, 1, nbytes, f_) != nbytes) {
    return IoError(tmp_path_ + ": write failed: " + std::strerror(errno));
  }
  written_ += nbytes;
  while (current_ < ends_.size() && ends_[current_] <= written_) ++current_;
  return Status::Ok();
}

Status SafetensorsWriter::Finish() {
  GEMLET_CHECK(!finished_ && f_ != nullptr);
  if (written_ != data_bytes_) {
    return InvalidArgument(path_ + ": tensor '" + tensors_[current_].name + "' is incomplete (" +
                           std::to_string(data_bytes_ - written_) + " bytes missing)");
  }
  const bool flush_ok = std::fflush(f_) == 0;
  const bool close_ok = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!flush_ok || !close_ok) return IoError(tmp_path_ + ": write failed: " + std::strerror(errno));
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return IoError(path_ + ": cannot rename from " + tmp_path_ + ": " + std::strerror(errno));
  }
  finished_ = true;
  return Status::Ok();
}

}  // namespace gemlet
