// libFuzzer target: the .npy readers (format/npy.h, ParseNpy and ParseNpyIds) on arbitrary bytes. Nothing may
// crash or read outside the input; an accepted array holds exactly the product of its shape
// in values, and (when it is small enough) writing it as float32 and reading that back gives
// the same shape and the same bits.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "format/npy.h"

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "npy_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);  // the exact extent, for ASan
  // The token-id reader (`--tokens-file`): any accepted array is ids in [0, 2^31).
  if (auto ids = gemlet::ParseNpyIds(buf.data(), buf.size(), "fuzz.npy"); ids.ok()) {
    for (int32_t id : *ids) Require(id >= 0, "a negative token id");
  }
  auto a = gemlet::ParseNpy(buf.data(), buf.size(), "fuzz.npy");
  if (!a.ok()) return 0;
  int64_t n = 1;  // in order, as numel(): ParseNpy bounds the non-zero dimensions' product
  for (int64_t d : a->shape) {
    Require(d >= 0, "a negative dimension");
    Require(!__builtin_mul_overflow(n, d, &n), "a shape whose product overflows int64_t");
  }
  Require(a->numel() == n && static_cast<int64_t>(a->data.size()) == n, "values do not match the shape");
  const std::string bytes = gemlet::EncodeNpyF32(a->data.data(), a->shape);
  auto b = gemlet::ParseNpy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "round-trip.npy");
  Require(b.ok(), "the float32 file written from an accepted array does not parse");
  Require(b->shape == a->shape, "the round trip changed the shape");
  Require(b->data.size() == a->data.size() &&
              (a->data.empty() || std::memcmp(b->data.data(), a->data.data(), a->data.size() * 4) == 0),
          "the round trip changed the values");
  return 0;
}
