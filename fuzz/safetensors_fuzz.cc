// libFuzzer target: the safetensors header parser (SafetensorsFile::FromMemory). Accepted
// files must describe tensors that lie inside the input.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);
  auto f = gemlet::SafetensorsFile::FromMemory(buf.data(), buf.size(), "fuzz.safetensors");
  if (!f.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const auto& t : (*f)->tensors()) {
    if (t.nbytes > 0) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];
    (void)t.numel();
    (void)(*f)->FloatType(t);
    (void)(*f)->Find(t.name);
  }
  return 0;
}
