// InverseSoftplus: llama.cpp stores softplus(per_dim_scale); the converter must get the
// checkpoint's value back, so that the audio tower (which applies softplus itself) computes
// what it computes from the HF checkpoint.
#include "tools/convert/mmproj_import.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>

#include "base/half.h"
#include "format/gguf_test_util.h"

namespace gemlet::convert {
namespace mmproj_import_test {

// torch's f32 softplus (beta 1, threshold 20), as llama.cpp's converter computes it.
float TorchSoftplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// softplus in double, rounded once.
float ExactSoftplus(float x) { return static_cast<float>(std::log1p(std::exp(static_cast<double>(x)))); }

int64_t UlpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::abs(static_cast<int64_t>(ia) - ib);  // a, b > 0
}

// Every bf16 value away from 0 comes back bit for bit, whichever softplus made the stored value.
TEST(InverseSoftplus, RecoversEveryBf16Value) {
  int checked = 0, near_zero = 0;
  float max_near_zero = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float x = Bf16ToF32(static_cast<uint16_t>(h));
    if (!std::isfinite(x) || std::abs(x) > 80.0f) continue;
    for (float s : {TorchSoftplus(x), ExactSoftplus(x)}) {
      if (!(s > 0.0f)) continue;  // underflowed: nothing to invert
      const float y = InverseSoftplus(s);
      if (std::abs(x) > 1e-3f) {
        EXPECT_EQ(y, x) << "s " << s;
        ++checked;
      } else {
        // softplus(x) ≈ ln 2 + x/2 has lost x's low bits: within 1e-6.
        EXPECT_LE(std::abs(y - x), 1e-6f) << "x " << x << " s " << s;
        max_near_zero = std::max(max_near_zero, std::abs(y - x));
        ++near_zero;
      }
    }
  }
  EXPECT_GT(checked, 8000);
  EXPECT_GT(near_zero, 1000);
  std::printf("[mmproj] %d bf16 values with |x| > 1e-3 recovered exactly; |x| <= 1e-3: max error %.2e\n", checked,
              max_near_zero);
}

// softplus(InverseSoftplus(s)) is s again for a stored softplus value s: exactly for nearly
// every float x, always within the 4 ulps the inverse searches.
TEST(InverseSoftplus, SoftplusOfTheInverseIsTheStoredValue) {
  int exact = 0, total = 0;
  for (float x = -30.0f; x < 30.0f; x += 0.000731f) {
    const float s = TorchSoftplus(x);
    const float back = ExactSoftplus(InverseSoftplus(s));
    EXPECT_LE(UlpDistance(back, s), 4) << "x " << x << " s " << s << " back " << back;
    exact += back == s;
    ++total;
  }
  std::printf("[mmproj] f32(softplus(InverseSoftplus(s))) == s for %d of %d values s = softplus(x)\n", exact, total);
  EXPECT_GT(exact, total * 9 / 10);
  // Huge values: softplus(x) = x in f32.
  EXPECT_EQ(InverseSoftplus(1e30f), 1e30f);
  EXPECT_EQ(InverseSoftplus(std::numeric_limits<float>::max()), std::numeric_limits<float>::max());
}

// ReadMmproj refuses what is not a Gemma 4 mmproj with the file and key in the message.
TEST(ReadMmproj, RefusesOtherFilesNamingTheKey) {
  using testing::GgufBuilder;
  struct Case {
    std::string image, says;
  };
  const std::vector<Case> cases = {
      {GgufBuilder().Str("general.architecture", "gemma4").Build(), "general.architecture is 'gemma4', not clip"},
      {GgufBuilder().Str("general.architecture", "clip").Build(), "neither clip.has_vision_encoder"},
      {GgufBuilder().Str("general.architecture", "clip").Bool("clip.has_vision_encoder", true).Build(),
       "clip.projector_type"},
      {GgufBuilder()
           .Str("general.architecture", "clip")
           .Bool("clip.has_vision_encoder", true)
           .Str("clip.projector_type", "gemma3")
           .Build(),
       "clip.projector_type is 'gemma3'"},
      {GgufBuilder()
           .Str("general.architecture", "clip")
           .Bool("clip.has_audio_encoder", true)
           .Str("clip.audio.projector_type", "gemma4a")
           .U32("clip.audio.projection_dim", 1536)
           .Build(),
       "clip.audio.projection_dim is 1536 but the text model's hidden size is 2560"},
      {GgufBuilder()
           .Str("general.architecture", "clip")
           .Bool("clip.has_vision_encoder", true)
           .Str("clip.vision.projector_type", "gemma4v")
           .U32("clip.vision.projection_dim", 2560)
           .Build(),
       "clip.vision.embedding_length"},
  };
  for (const Case& c : cases) {
    auto g = GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(c.image.data()), c.image.size(), "m.gguf");
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    auto r = ReadMmproj(**g, 2560, Vocab{});
    ASSERT_FALSE(r.ok()) << c.says;
    EXPECT_NE(r.status().message().find("m.gguf"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
}

}  // namespace mmproj_import_test
}  // namespace gemlet::convert
