#include "runtime/session_file.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>
#include <vector>

#include "base/mapped_file.h"
#include "kernels/kernels.h"
#include "kernels/ref/quant.h"

namespace gemlet::runtime {

namespace {

constexpr char kMagic[8] = {'G', 'E', 'M', 'L', 'E', 'T', 'S', 'S'};

class Fnv {
 public:
  void Add(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 0x100000001b3ull;
  }
  void Add(const std::string& s) {
    const uint64_t n = s.size();
    Add(&n, 8);
    Add(s.data(), s.size());
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

std::string SourceSha(const GemletFile& file) {
  const auto& meta = file.metadata();
  auto prov = meta.find("provenance");
  if (prov == meta.end() || !prov->is_object()) return "";
  auto sha = prov->find("source_sha256");
  return sha != prov->end() && sha->is_string() ? sha->get<std::string>() : "";
}

// Appends little-endian scalars and byte runs (the build targets are little-endian).
class Writer {
 public:
  template <typename T>
  void Put(T v) {
    Bytes(&v, sizeof(T));
  }
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  std::vector<uint8_t>& buf() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

// Bounds-checked reads; every failure names the file and the field.
class Reader {
 public:
  Reader(const std::string& path, const uint8_t* p, size_t n) : path_(path), p_(p), n_(n) {}
  template <typename T>
  Status Get(T* v, const char* what) {
    RETURN_IF_ERROR(Need(sizeof(T), what));
    std::memcpy(v, p_ + off_, sizeof(T));
    off_ += sizeof(T);
    return Status::Ok();
  }
  // A view of the next n bytes.
  Result<const uint8_t*> Take(uint64_t n, const char* what) {
    RETURN_IF_ERROR(Need(n, what));
    const uint8_t* r = p_ + off_;
    off_ += n;
    return r;
  }
  Status Need(uint64_t n, const char* what) const {
    if (n > n_ - off_) {
      return Corrupt(path_ + ": truncated session file: " + what + " needs " + std::to_string(n) + " bytes at offset " +
                     std::to_string(off_) + ", " + std::to_string(n_ - off_) + " left");
    }
    return Status::Ok();
  }
  size_t offset() const { return off_; }

 private:
  const std::string& path_;
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
};

// True if |x| <= limit for every f32 x of the (possibly unaligned) bytes p[count] (false for
// NaN). K and V come out of norms and projections of finite weights: a NaN or infinity can
// only be corruption.
bool AllWithin(const uint8_t* p, uint64_t count, float limit) {
  for (uint64_t i = 0; i < count; ++i) {
    float f;
    std::memcpy(&f, p + i * sizeof(float), sizeof(float));
    if (!(std::fabs(f) <= limit)) return false;
  }
  return true;
}

struct LayerRows {
  uint32_t layer;
  uint64_t pos0, count, row;
  const uint8_t* k;  // f32 rows in the file (possibly unaligned: copied out with memcpy)
  const uint8_t* v;
};

}  // namespace

uint64_t SessionFileChecksum(const void* data, size_t n) {
  Fnv h;
  h.Add(data, n);
  return h.value();
}

uint64_t ModelFingerprint(const GemletFile& file) {
  Fnv h;
  const auto& meta = file.metadata();
  h.Add(meta.contains("config") ? meta["config"].dump() : std::string());
  h.Add(meta.contains("quant_plan") ? meta["quant_plan"].dump() : std::string());
  h.Add(SourceSha(file));
  for (const auto& t : file.tensors()) {
    h.Add(t.name);
    const int32_t type = static_cast<int32_t>(t.type), layout = static_cast<int32_t>(t.layout);
    h.Add(&type, 4);
    h.Add(&layout, 4);
    for (int64_t d : t.shape) h.Add(&d, 8);
  }
  return h.value();
}

Status SaveSessionFile(const std::string& path, const Session& session, const nlohmann::json& extra) {
  const GemletFile& file = session.engine().file();
  const auto& cfg = session.engine().config();
  Writer w;
  w.Bytes(kMagic, 8);
  w.Put<uint32_t>(kSessionFileVersion);
  w.Put<uint32_t>(0);
  w.Put<uint64_t>(ModelFingerprint(file));
  const std::string sha = SourceSha(file);
  w.Put<uint32_t>(static_cast<uint32_t>(sha.size()));
  w.Bytes(sha.data(), sha.size());
  const std::string js = extra.dump();
  w.Put<uint64_t>(js.size());
  w.Bytes(js.data(), js.size());
  const auto& tokens = session.history();
  w.Put<uint64_t>(tokens.size());
  w.Bytes(tokens.data(), tokens.size() * sizeof(int32_t));
  const KvCache& kv = session.kv_cache();
  w.Put<uint32_t>(static_cast<uint32_t>(kv.cached_layers()));
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    if (!cfg.has_kv(l)) continue;
    ops::KvSegment seg[2];
    const int nseg = kv.Past(l, seg);
    const uint64_t row = cfg.kv_dim(l);
    uint64_t count = 0;
    for (int s = 0; s < nseg; ++s) count += seg[s].count;
    w.Put<uint32_t>(static_cast<uint32_t>(l));
    w.Put<uint64_t>(nseg ? seg[0].pos0 : 0);
    w.Put<uint64_t>(count);
    w.Put<uint64_t>(row);
    // Rows on disk are f32 whatever the cache holds (f16 -> f32 -> f16 is lossless, and so is
    // q8 -> f32 -> q8: quantizing dequantized values gives the same blocks, ops::RoundToKvType).
    std::vector<float> wide(row);
    for (int kv_i = 0; kv_i < 2; ++kv_i) {
      for (int s = 0; s < nseg; ++s) {
        for (int64_t r = 0; r < seg[s].count; ++r) {
          const void* src = kv_i == 0 ? seg[s].k : seg[s].v;
          if (seg[s].type == TensorType::kF16) {
            kernels::ActiveKernels().f16_to_f32(static_cast<const uint16_t*>(src) + r * seg[s].stride, wide.data(),
                                                static_cast<int64_t>(row));
            w.Bytes(wide.data(), row * sizeof(float));
          } else if (seg[s].type == TensorType::kQ8) {
            kernels::DequantizeRowRef(TensorType::kQ8, static_cast<const BlockQ8*>(src) + r * seg[s].stride / kQBlock,
                                      wide.data(), static_cast<int64_t>(row));
            w.Bytes(wide.data(), row * sizeof(float));
          } else {
            w.Bytes(static_cast<const float*>(src) + r * seg[s].stride, row * sizeof(float));
          }
        }
      }
    }
  }
  w.Put<uint64_t>(SessionFileChecksum(w.buf().data(), w.buf().size()));

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError(path + ": cannot write: " + std::strerror(errno));
  const bool ok = std::fwrite(w.buf().data(), 1, w.buf().size(), f) == w.buf().size();
  const bool closed = std::fclose(f) == 0;
  std::error_code ec;
  if (!ok || !closed) {
    std::filesystem::remove(tmp, ec);
    return IoError(path + ": write failed (disk full?)");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return IoError(path + ": cannot replace: " + ec.message());
  }
  return Status::Ok();
}

Result<nlohmann::json> LoadSessionFile(const std::string& path, Session* session,
                                       const std::function<Status(const nlohmann::json&)>& check_extra) {
  ASSIGN_OR_RETURN(std::string data, ReadFileToString(path));
  return LoadSessionBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size(), path, session, check_extra);
}

Result<nlohmann::json> LoadSessionBytes(const uint8_t* p, size_t size, const std::string& path, Session* session,
                                        const std::function<Status(const nlohmann::json&)>& check_extra) {
  if (size < 8 + 8 || std::memcmp(p, kMagic, 8) != 0) {
    return Corrupt(path + ": not a gemlet session file (made by /save in gemlet chat)");
  }
  const uint64_t sum = SessionFileChecksum(p, size - 8);
  uint64_t stored_sum;
  std::memcpy(&stored_sum, p + size - 8, 8);
  Reader r(path, p, size - 8);
  RETURN_IF_ERROR(r.Take(8, "magic").status());
  uint32_t version, reserved;
  RETURN_IF_ERROR(r.Get(&version, "version"));
  RETURN_IF_ERROR(r.Get(&reserved, "version"));
  if (version != kSessionFileVersion) {
    return InvalidArgument(path + ": session file version " + std::to_string(version) + ", this gemlet reads " +
                           std::to_string(kSessionFileVersion) + " (save the conversation again with this version)");
  }
  if (stored_sum != sum) return Corrupt(path + ": checksum mismatch: the session file is damaged");

  const Engine& engine = session->engine();
  const auto& cfg = engine.config();
  uint64_t fp;
  RETURN_IF_ERROR(r.Get(&fp, "model fingerprint"));
  uint32_t sha_len;
  RETURN_IF_ERROR(r.Get(&sha_len, "model source hash"));
  ASSIGN_OR_RETURN(const uint8_t* sha_p, r.Take(sha_len, "model source hash"));
  const std::string sha(reinterpret_cast<const char*>(sha_p), sha_len);
  if (fp != ModelFingerprint(engine.file()) || sha != SourceSha(engine.file())) {
    return InvalidArgument(path + ": saved with a different model than " + engine.file().path() +
                           " (its KV state only fits the model it was made with; load it with that model)");
  }
  uint64_t js_len;
  RETURN_IF_ERROR(r.Get(&js_len, "conversation"));
  ASSIGN_OR_RETURN(const uint8_t* js_p, r.Take(js_len, "conversation"));
  nlohmann::json extra = nlohmann::json::parse(js_p, js_p + js_len, nullptr, /*allow_exceptions=*/false);
  if (extra.is_discarded()) return Corrupt(path + ": the conversation JSON is malformed");
  if (check_extra) RETURN_IF_ERROR(check_extra(extra));

  uint64_t n;
  RETURN_IF_ERROR(r.Get(&n, "token count"));
  if (n > size / sizeof(int32_t)) return Corrupt(path + ": token count " + std::to_string(n) + " exceeds the file");
  std::vector<int32_t> tokens(n);
  ASSIGN_OR_RETURN(const uint8_t* tok_p, r.Take(n * sizeof(int32_t), "tokens"));
  if (n > 0) std::memcpy(tokens.data(), tok_p, n * sizeof(int32_t));  // (an empty vector's data() may be null)
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= cfg.vocab_size) {
      return Corrupt(path + ": token " + std::to_string(i) + " has id " + std::to_string(tokens[i]) +
                     ", outside the vocabulary");
    }
  }
  if (static_cast<int64_t>(n) > session->context_limit()) {
    return InvalidArgument(path + ": the saved conversation holds " + std::to_string(n) +
                           " tokens, more than this session's context limit of " +
                           std::to_string(session->context_limit()) + " (raise --ctx)");
  }

  uint32_t n_layers;
  RETURN_IF_ERROR(r.Get(&n_layers, "layer count"));
  std::vector<int64_t> want_layers;
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    if (cfg.has_kv(l)) want_layers.push_back(l);
  }
  if (n_layers != want_layers.size()) {
    return Corrupt(path + ": " + std::to_string(n_layers) + " cached layers, the model has " +
                   std::to_string(want_layers.size()));
  }
  std::vector<LayerRows> layers;
  for (uint32_t i = 0; i < n_layers; ++i) {
    LayerRows lr;
    RETURN_IF_ERROR(r.Get(&lr.layer, "layer"));
    RETURN_IF_ERROR(r.Get(&lr.pos0, "layer"));
    RETURN_IF_ERROR(r.Get(&lr.count, "layer"));
    RETURN_IF_ERROR(r.Get(&lr.row, "layer"));
    const int64_t l = want_layers[i];
    const uint64_t keep = cfg.is_full(l) ? n : std::min<uint64_t>(n, cfg.sliding_window);
    if (lr.layer != l || lr.row != static_cast<uint64_t>(cfg.kv_dim(l)) || lr.count != keep || lr.pos0 != n - keep) {
      return Corrupt(path + ": cached layer " + std::to_string(i) + " (layer " + std::to_string(lr.layer) + ", " +
                     std::to_string(lr.count) + " rows of " + std::to_string(lr.row) + " from position " +
                     std::to_string(lr.pos0) + ") does not match the model's layer " + std::to_string(l) + " (" +
                     std::to_string(keep) + " rows of " + std::to_string(cfg.kv_dim(l)) + ")");
    }
    const uint64_t bytes = lr.count * lr.row * sizeof(float);
    ASSIGN_OR_RETURN(lr.k, r.Take(bytes, "K rows"));
    ASSIGN_OR_RETURN(lr.v, r.Take(bytes, "V rows"));
    constexpr float kFloatMax = std::numeric_limits<float>::max();
    if (!AllWithin(lr.k, lr.count * lr.row, kFloatMax) || !AllWithin(lr.v, lr.count * lr.row, kFloatMax)) {
      return Corrupt(path + ": the K/V rows of layer " + std::to_string(l) + " hold a NaN or infinity");
    }
    if (session->kv_cache().row_type(l) == TensorType::kF16 &&
        (!AllWithin(lr.k, lr.count * lr.row, 65504.0f) || !AllWithin(lr.v, lr.count * lr.row, 65504.0f))) {
      return InvalidArgument(path + ": the K/V rows of layer " + std::to_string(l) +
                             " exceed the f16 range of this session's KV cache (|x| > 65504; load with --kv-type f32)");
    }
    // A q8 block's scale is an f16 of amax/127.
    constexpr float kQ8Max = 65504.0f * 127.0f;
    if (session->kv_cache().row_type(l) == TensorType::kQ8 &&
        (!AllWithin(lr.k, lr.count * lr.row, kQ8Max) || !AllWithin(lr.v, lr.count * lr.row, kQ8Max))) {
      return InvalidArgument(path + ": the K/V rows of layer " + std::to_string(l) +
                             " exceed the q8 range of this session's KV cache (|x| > 65504·127; load with "
                             "--kv-type f32)");
    }
    layers.push_back(lr);
  }
  if (r.offset() != size - 8) return Corrupt(path + ": unexpected bytes after the KV rows");

  // Everything is checked: store. Rows before pos0 are not kept by any layer that reads them.
  RETURN_IF_ERROR(session->Restore(tokens, [&](KvCache& kv) -> Status {
    if (n == 0) return Status::Ok();
    RETURN_IF_ERROR(kv.Reserve(static_cast<int64_t>(n)));
    std::vector<float> k, v;
    for (const LayerRows& lr : layers) {
      k.assign(n * lr.row, 0.0f);
      v.assign(n * lr.row, 0.0f);
      std::memcpy(k.data() + lr.pos0 * lr.row, lr.k, lr.count * lr.row * sizeof(float));
      std::memcpy(v.data() + lr.pos0 * lr.row, lr.v, lr.count * lr.row * sizeof(float));
      kv.Commit(lr.layer, k.data(), v.data(), static_cast<int64_t>(n));
    }
    kv.Advance(static_cast<int64_t>(n));
    return Status::Ok();
  }));
  return extra;
}

}  // namespace gemlet::runtime
