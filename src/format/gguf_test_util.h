// Test helper: builds GGUF images in memory (header, metadata of any type, tensor infos,
// aligned data), so tests can make valid and malformed files without llama.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "format/gguf.h"

namespace gemlet::testing {

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

  template <typename T>
  static std::string Enc(T v) {
    std::string s(sizeof(T), '\0');
    std::memcpy(s.data(), &v, sizeof(T));
    return s;
  }
  static std::string EncStr(const std::string& s) { return Enc<uint64_t>(s.size()) + s; }
  // An array value (after its type tag): element type, count, encoded elements.
  static std::string EncArray(GgufValueType elem, uint64_t count, const std::string& elems) {
    return Enc<uint32_t>(static_cast<uint32_t>(elem)) + Enc<uint64_t>(count) + elems;
  }

  // A key with an already encoded value.
  GgufBuilder& Raw(const std::string& key, GgufValueType type, const std::string& value) {
    kv_ += EncStr(key) + Enc<uint32_t>(static_cast<uint32_t>(type)) + value;
    ++n_kv_;
    return *this;
  }
  GgufBuilder& U32(const std::string& k, uint32_t v) { return Raw(k, GgufValueType::kU32, Enc(v)); }
  GgufBuilder& I32(const std::string& k, int32_t v) { return Raw(k, GgufValueType::kI32, Enc(v)); }
  GgufBuilder& U64(const std::string& k, uint64_t v) { return Raw(k, GgufValueType::kU64, Enc(v)); }
  GgufBuilder& F32(const std::string& k, float v) { return Raw(k, GgufValueType::kF32, Enc(v)); }
  GgufBuilder& Bool(const std::string& k, bool v) { return Raw(k, GgufValueType::kBool, Enc<uint8_t>(v)); }
  GgufBuilder& Str(const std::string& k, const std::string& v) {
    return Raw(k, GgufValueType::kString, EncStr(v));
  }
  GgufBuilder& Strings(const std::string& k, const std::vector<std::string>& v) {
    std::string e;
    for (const auto& s : v) e += EncStr(s);
    return Raw(k, GgufValueType::kArray, EncArray(GgufValueType::kString, v.size(), e));
  }
  GgufBuilder& I32s(const std::string& k, const std::vector<int32_t>& v) {
    std::string e;
    for (int32_t x : v) e += Enc(x);
    return Raw(k, GgufValueType::kArray, EncArray(GgufValueType::kI32, v.size(), e));
  }
  GgufBuilder& F32s(const std::string& k, const std::vector<float>& v) {
    std::string e;
    for (float x : v) e += Enc(x);
    return Raw(k, GgufValueType::kArray, EncArray(GgufValueType::kF32, v.size(), e));
  }
  GgufBuilder& Bools(const std::string& k, const std::vector<bool>& v) {
    std::string e;
    for (bool x : v) e += Enc<uint8_t>(x);
    return Raw(k, GgufValueType::kArray, EncArray(GgufValueType::kBool, v.size(), e));
  }
  // `ne` innermost first, as GGUF stores it; data is placed at the next aligned offset
  // unless `offset` is given.
  GgufBuilder& Tensor(const std::string& name, const std::vector<int64_t>& ne, uint32_t ggml_type,
                      const std::string& data, int64_t offset = -1) {
    tensors_.push_back({name, ne, ggml_type, data, offset});
    return *this;
  }
  GgufBuilder& Alignment(uint32_t a) {
    alignment_ = a;
    return U32("general.alignment", a);
  }

  std::string Build() const {
    std::string out = "GGUF" + Enc(version_) + Enc<uint64_t>(tensors_.size()) + Enc<uint64_t>(n_kv_) + kv_;
    std::string data;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors_) {
      while (data.size() % alignment_) data += '\0';
      offsets.push_back(t.offset >= 0 ? static_cast<uint64_t>(t.offset) : data.size());
      data += t.data;
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const auto& t = tensors_[i];
      out += EncStr(t.name) + Enc<uint32_t>(static_cast<uint32_t>(t.ne.size()));
      for (int64_t d : t.ne) out += Enc(d);
      out += Enc(t.type) + Enc<uint64_t>(offsets[i]);
    }
    if (!tensors_.empty()) {
      while (out.size() % alignment_) out += '\0';
    }
    return out + data;
  }

 private:
  struct T {
    std::string name;
    std::vector<int64_t> ne;
    uint32_t type;
    std::string data;
    int64_t offset;
  };
  uint32_t version_;
  uint32_t alignment_ = 32;
  uint64_t n_kv_ = 0;
  std::string kv_;
  std::vector<T> tensors_;
};

}  // namespace gemlet::testing
