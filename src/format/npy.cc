#include "format/npy.h"

#include <cstring>
#include <limits>

#include "base/half.h"
#include "base/mapped_file.h"

namespace gemlet {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// A cursor over the Python-literal header dict: {'descr': '<f4', 'fortran_order': False,
// 'shape': (59, 512), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  Status Parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    Skip();
    if (!Eat('{')) return Bad("header is not a dict");
    for (;;) {
      Skip();
      if (Eat('}')) break;
      std::string key;
      RETURN_IF_ERROR(String(&key));
      Skip();
      if (!Eat(':')) return Bad("expected ':' after '" + key + "'");
      Skip();
      if (key == "descr") {
        RETURN_IF_ERROR(String(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (s_.compare(i_, 4, "True") == 0) {
          *fortran = true;
          i_ += 4;
        } else if (s_.compare(i_, 5, "False") == 0) {
          *fortran = false;
          i_ += 5;
        } else {
          return Bad("fortran_order is not True or False");
        }
        have_fortran = true;
      } else if (key == "shape") {
        RETURN_IF_ERROR(Tuple(shape));
        have_shape = true;
      } else {
        return Bad("unexpected header key '" + key + "'");
      }
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat('}')) break;
      return Bad("expected ',' or '}' in the header");
    }
    if (!have_descr || !have_fortran || !have_shape) {
      return Bad("header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return Status::Ok();
  }

 private:
  Status Bad(const std::string& m) const { return Corrupt(name_ + ": .npy " + m); }
  void Skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  Status String(std::string* out) {
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return Bad("expected a quoted string");
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string::npos) return Bad("unterminated string");
    *out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return Status::Ok();
  }
  Status Tuple(std::vector<int64_t>* out) {
    out->clear();
    if (!Eat('(')) return Bad("shape is not a tuple");
    for (;;) {
      Skip();
      if (Eat(')')) return Status::Ok();
      int64_t v = 0;
      size_t digits = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return Bad("shape value too large");
        v = v * 10 + (s_[i_++] - '0');
        ++digits;
      }
      if (digits == 0) return Bad("shape holds a non-integer");
      if (s_.compare(i_, 1, "L") == 0) ++i_;  // Python 2 long suffix
      out->push_back(v);
      if (out->size() > 32) return Bad("shape has more than 32 dimensions");
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat(')')) return Status::Ok();
      return Bad("malformed shape tuple");
    }
  }

  const std::string& s_;
  const std::string& name_;
  size_t i_ = 0;
};

}  // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// The header of an .npy image: its dtype, its shape, and where the data starts, after
// checking the magic, the version, the header's extent and C order.
Status ParseHeader(const uint8_t* data, size_t size, const std::string& name, std::string* descr,
                   std::vector<int64_t>* shape, size_t* data_pos) {
  if (size < kMagicLen + 4 || std::memcmp(data, kMagic, kMagicLen) != 0) {
    return Corrupt(name + ": not a .npy file (bad magic)");
  }
  const uint8_t major = data[6];
  size_t header_len = 0, pos = 0;
  if (major == 1) {
    header_len = data[8] | (static_cast<size_t>(data[9]) << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return Corrupt(name + ": .npy file truncated in the header");
    header_len = data[8] | (static_cast<size_t>(data[9]) << 8) | (static_cast<size_t>(data[10]) << 16) |
                 (static_cast<size_t>(data[11]) << 24);
    pos = 12;
  } else {
    return Unsupported(name + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > size - pos) return Corrupt(name + ": .npy header runs past the end of the file");
  const std::string header(reinterpret_cast<const char*>(data + pos), header_len);
  pos += header_len;
  bool fortran = false;
  RETURN_IF_ERROR(HeaderParser(header, name).Parse(descr, &fortran, shape));
  if (fortran) return Unsupported(name + ": Fortran-order .npy arrays are not supported");
  *data_pos = pos;
  return Status::Ok();
}

// The number of elements of `shape`, checked against the `avail` bytes of items of `item` bytes.
Result<uint64_t> CheckPayload(const std::vector<int64_t>& shape, size_t item, size_t avail, const std::string& name) {
  // The product of the non-zero dimensions must fit in int64_t, also when a zero makes the
  // array empty: NpyArray::numel() multiplies them in order (npy_fuzz found (…, 0, …) shapes
  // whose leading dimensions overflowed it).
  uint64_t nonzero = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d == 0) {
      empty = true;
      continue;
    }
    if (nonzero > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d)) {
      return Corrupt(name + ": .npy shape overflows");
    }
    nonzero *= static_cast<uint64_t>(d);
  }
  const uint64_t numel = empty ? 0 : nonzero;
  if (numel > avail / item) {
    return Corrupt(name + ": .npy data holds " + std::to_string(avail / item) + " values, shape needs " +
                   std::to_string(numel));
  }
  return numel;
}

}  // namespace

Result<NpyArray> ParseNpy(const uint8_t* data, size_t size, const std::string& name) {
  std::string descr;
  size_t pos = 0;
  NpyArray out;
  RETURN_IF_ERROR(ParseHeader(data, size, name, &descr, &out.shape, &pos));
  size_t item = 0;
  if (descr == "<f4" || descr == "|f4") {
    item = 4;
  } else if (descr == "<f2" || descr == "|f2") {
    item = 2;
  } else if (descr == "<f8") {
    item = 8;
  } else {
    return Unsupported(name + ": .npy dtype '" + descr +
                       "' is not supported (float16/32/64 little-endian only)");
  }
  ASSIGN_OR_RETURN(const uint64_t numel, CheckPayload(out.shape, item, size - pos, name));
  out.data.resize(numel);
  const uint8_t* p = data + pos;
  for (uint64_t i = 0; i < numel; ++i) {
    if (item == 4) {
      std::memcpy(&out.data[i], p + 4 * i, 4);
    } else if (item == 2) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out.data[i] = F16ToF32(h);
    } else {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out.data[i] = static_cast<float>(d);
    }
  }
  return out;
}

Result<std::vector<int32_t>> ParseNpyIds(const uint8_t* data, size_t size, const std::string& name) {
  std::string descr;
  std::vector<int64_t> shape;
  size_t pos = 0;
  RETURN_IF_ERROR(ParseHeader(data, size, name, &descr, &shape, &pos));
  size_t item = 0;
  if (descr == "<i4") {
    item = 4;
  } else if (descr == "<i8") {
    item = 8;
  } else {
    return Unsupported(name + ": token ids must be an int32 (or int64) little-endian .npy array, got dtype '" +
                       descr + "'");
  }
  if (shape.size() != 1) {
    return InvalidArgument(name + ": token ids must be a one-dimensional .npy array, got " +
                           std::to_string(shape.size()) + " dimensions");
  }
  ASSIGN_OR_RETURN(const uint64_t numel, CheckPayload(shape, item, size - pos, name));
  std::vector<int32_t> ids(numel);
  const uint8_t* p = data + pos;
  for (uint64_t i = 0; i < numel; ++i) {
    int64_t v;
    if (item == 4) {
      int32_t w;
      std::memcpy(&w, p + 4 * i, 4);
      v = w;
    } else {
      std::memcpy(&v, p + 8 * i, 8);
    }
    if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument(name + ": token id " + std::to_string(v) + " at index " + std::to_string(i) +
                             " is not a valid id");
    }
    ids[i] = static_cast<int32_t>(v);
  }
  return ids;
}

Result<std::vector<int32_t>> ReadNpyIds(const std::string& path) {
  ASSIGN_OR_RETURN(auto map, MappedFile::Open(path));
  if (map->size() == 0) return Corrupt(path + ": empty file, not a .npy array");
  return ParseNpyIds(map->data(), map->size(), path);
}

Result<NpyArray> ReadNpy(const std::string& path) {
  ASSIGN_OR_RETURN(auto map, MappedFile::Open(path));
  if (map->size() == 0) return Corrupt(path + ": empty file, not a .npy array");
  return ParseNpy(map->data(), map->size(), path);
}

std::string EncodeNpyF32(const float* data, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  int64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
    numel *= shape[i];
  }
  dict += "), }";
  // magic(6) + version(2) + len(2) + dict + padding + '\n' is a multiple of 64.
  size_t total = kMagicLen + 4 + dict.size() + 1;
  const size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(numel) * 4);
  return out;
}

Status WriteNpyF32(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  return WriteStringToFile(path, EncodeNpyF32(data, shape));
}

}  // namespace gemlet
