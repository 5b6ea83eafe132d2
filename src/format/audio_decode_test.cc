#include "format/audio_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace gemlet {
namespace audio_decode_test {

// Built without libsndfile/libsoxr (the Arm64 cross build): decoding is refused, and says so.
#if !(GEMLET_HAVE_SNDFILE && GEMLET_HAVE_SOXR)
#define GEMLET_NEED_AUDIO_LIBS() GTEST_SKIP() << "built without libsndfile/libsoxr: audio files cannot be decoded"
#else
#define GEMLET_NEED_AUDIO_LIBS() (void)0
#endif

const std::string kAudio = std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b-audio/";

void Put32(std::vector<uint8_t>* v, uint32_t x) {
  for (int s = 0; s < 32; s += 8) v->push_back(static_cast<uint8_t>(x >> s));
}
void Put16(std::vector<uint8_t>* v, uint16_t x) {
  v->push_back(static_cast<uint8_t>(x));
  v->push_back(static_cast<uint8_t>(x >> 8));
}

// A WAV file: the codec `tag` with `bits` per sample, `payload` the sample bytes, `declared`
// data bytes in the header (default: the payload's size).
std::vector<uint8_t> WavOf(uint16_t tag, int bits, int channels, uint32_t rate, const std::vector<uint8_t>& payload,
                           int64_t declared = -1) {
  std::vector<uint8_t> v;
  const uint32_t data = static_cast<uint32_t>(declared >= 0 ? declared : static_cast<int64_t>(payload.size()));
  const uint16_t block = static_cast<uint16_t>(channels * bits / 8);
  v.insert(v.end(), {'R', 'I', 'F', 'F'});
  Put32(&v, 36 + data);
  v.insert(v.end(), {'W', 'A', 'V', 'E', 'f', 'm', 't', ' '});
  Put32(&v, 16);
  Put16(&v, tag);
  Put16(&v, static_cast<uint16_t>(channels));
  Put32(&v, rate);
  Put32(&v, rate * block);
  Put16(&v, block);
  Put16(&v, static_cast<uint16_t>(bits));
  v.insert(v.end(), {'d', 'a', 't', 'a'});
  Put32(&v, data);
  v.insert(v.end(), payload.begin(), payload.end());
  return v;
}

// A PCM16 WAV: `declared` data bytes in the header (default: the real size), `tag` the codec.
std::vector<uint8_t> Wav(const std::vector<int16_t>& samples, int channels, uint32_t rate, int64_t declared = -1,
                         uint16_t tag = 1) {
  std::vector<uint8_t> payload;
  for (int16_t s : samples) Put16(&payload, static_cast<uint16_t>(s));
  return WavOf(tag, 16, channels, rate, payload, declared);
}

// A mono IEEE-float WAV (format tag 3) of the given samples.
std::vector<uint8_t> FloatWav(const std::vector<float>& samples, uint32_t rate) {
  std::vector<uint8_t> payload;
  for (float f : samples) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    Put32(&payload, u);
  }
  return WavOf(3, 32, 1, rate, payload);
}

Result<AudioClip> Decode(const std::vector<uint8_t>& b) { return DecodeAudio(b.data(), b.size(), "test.wav"); }

TEST(AudioDecode, Pcm16MonoAt16kIsExact) {
  GEMLET_NEED_AUDIO_LIBS();
  auto bytes = ReadFileToString(kAudio + "click.wav");
  ASSERT_TRUE(bytes.ok());
  auto clip = DecodeAudioFile(kAudio + "click.wav");
  ASSERT_TRUE(clip.ok()) << clip.status().ToString();
  EXPECT_EQ(clip->sample_rate, 16000);
  EXPECT_EQ(clip->source_rate, 16000);
  EXPECT_EQ(clip->source_channels, 1);
  EXPECT_EQ(clip->source_format, "wav");
  ASSERT_EQ(clip->samples.size(), 8320u);
  // The data chunk's samples / 32768, bit for bit (the file is a plain 44-byte-header WAV).
  const auto* pcm = reinterpret_cast<const uint8_t*>(bytes->data()) + bytes->size() - 8320 * 2;
  int nonzero = 0;
  for (size_t i = 0; i < 8320; ++i) {
    const int16_t s = static_cast<int16_t>(pcm[2 * i] | pcm[2 * i + 1] << 8);
    ASSERT_EQ(clip->samples[i], static_cast<float>(s) / 32768.0f) << i;
    nonzero += s != 0;
  }
  EXPECT_GT(nonzero, 0);
}

TEST(AudioDecode, StereoIsAveragedAndResampled) {
  GEMLET_NEED_AUDIO_LIBS();
  // 1 s of 44.1 kHz stereo: a 1 kHz tone on the left, its negation plus 0.2 on the right
  // would cancel; use left = tone, right = 0 so the mean is tone / 2.
  std::vector<int16_t> s;
  for (int i = 0; i < 44100; ++i) {
    s.push_back(static_cast<int16_t>(std::lround(16000 * std::sin(2 * M_PI * 1000.0 * i / 44100.0))));
    s.push_back(0);
  }
  auto clip = Decode(Wav(s, 2, 44100));
  ASSERT_TRUE(clip.ok()) << clip.status().ToString();
  EXPECT_EQ(clip->source_channels, 2);
  EXPECT_EQ(clip->source_rate, 44100);
  ASSERT_NEAR(static_cast<double>(clip->samples.size()), 16000.0, 1.0);
  // Away from the edges: a 1 kHz sine of amplitude 8000/32768 at 16 kHz.
  double err = 0;
  for (int i = 1000; i < 15000; ++i) {
    err = std::max(err, std::abs(clip->samples[i] - 8000.0 / 32768.0 * std::sin(2 * M_PI * 1000.0 * i / 16000.0)));
  }
  EXPECT_LT(err, 2e-3);
}

TEST(AudioDecode, BadInputsAreClearErrors) {
  GEMLET_NEED_AUDIO_LIBS();
  std::vector<int16_t> s(1600, 100);
  const std::vector<uint8_t> good = Wav(s, 1, 16000);
  ASSERT_TRUE(Decode(good).ok());
  struct Bad {
    const char* what;
    std::vector<uint8_t> bytes;
    const char* message;
  };
  std::vector<uint8_t> truncated(good.begin(), good.begin() + good.size() / 2);
  std::vector<uint8_t> random(4096);
  std::mt19937 rng(7);
  for (auto& b : random) b = static_cast<uint8_t>(rng());
  const std::vector<Bad> bad = {
      {"truncated", truncated, "truncated WAV"},
      {"lying header", Wav(s, 1, 16000, 3200 * 100), "truncated WAV"},
      {"0 samples", Wav({}, 1, 16000), "0 samples"},
      {"empty file", {}, "empty"},
      {"random bytes", random, "not a readable audio file"},
      {"unsupported codec", Wav(s, 1, 16000, -1, 0x1234), "not a readable audio file"},
      {"10 hours", Wav(s, 1, 16000, int64_t{16000} * 2 * 36000), "over the limit"},
  };
  for (const Bad& b : bad) {
    auto r = Decode(b.bytes);
    ASSERT_FALSE(r.ok()) << b.what;
    EXPECT_NE(r.status().message().find(b.message), std::string::npos) << b.what << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find("test.wav"), std::string::npos) << b.what << ": names the input";
  }
  // A real long file over a smaller limit is refused from its header.
  AudioDecodeOptions o;
  o.max_seconds = 0.05;
  auto r = DecodeAudio(good.data(), good.size(), "test.wav", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over the limit"), std::string::npos) << r.status().ToString();
}

// Float samples near the float limit would overflow the resampler to infinity (found by
// audio_decode_fuzz: a 16,032 Hz float WAV of samples around 3e38): refused, with the value.
// Samples a little over full scale, as float files may hold, are kept as they are.
TEST(AudioDecode, FloatSamplesFarOverFullScaleAreRefused) {
  GEMLET_NEED_AUDIO_LIBS();
  std::vector<float> huge(1600, 3.0e38f), loud(1600);
  for (size_t i = 0; i < loud.size(); ++i) loud[i] = 4.0f * std::sin(0.05f * static_cast<float>(i));
  for (uint32_t rate : {16000u, 16032u}) {
    auto r = Decode(FloatWav(huge, rate));
    ASSERT_FALSE(r.ok()) << rate;
    EXPECT_NE(r.status().message().find("a sample of magnitude"), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().message().find("test.wav"), std::string::npos) << r.status().ToString();
    auto ok = Decode(FloatWav(loud, rate));
    ASSERT_TRUE(ok.ok()) << rate << ": " << ok.status().ToString();
    float peak = 0;
    for (float v : ok->samples) {
      ASSERT_TRUE(std::isfinite(v));
      peak = std::max(peak, std::fabs(v));
    }
    EXPECT_GT(peak, 3.5f) << rate;
  }
}

// A clip too short to leave one sample at 16 kHz (one sample at 605,856 Hz; found by
// audio_decode_fuzz: libsoxr was handed an empty output buffer and crashed) is refused.
TEST(AudioDecode, TooShortToResampleIsAnError) {
  GEMLET_NEED_AUDIO_LIBS();
  auto r = Decode(FloatWav({0.25f}, 605856));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too short to resample"), std::string::npos) << r.status().ToString();
  auto empty = ResampleMono({0.25f}, 605856, 16000);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->empty());
}

TEST(AudioDecode, ResampleKeepsLengthAndTone) {
  GEMLET_NEED_AUDIO_LIBS();
  std::vector<float> x(48000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * std::sin(2 * M_PI * 440.0 * i / 48000.0);
  auto y = ResampleMono(x, 48000, 16000);
  ASSERT_TRUE(y.ok());
  ASSERT_EQ(y->size(), 16000u);
  double err = 0;
  for (int i = 1000; i < 15000; ++i) err = std::max(err, std::abs((*y)[i] - 0.5 * std::sin(2 * M_PI * 440.0 * i / 16000.0)));
  EXPECT_LT(err, 1e-3);
  auto same = ResampleMono(x, 16000, 16000);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, x);
}

}  // namespace audio_decode_test
}  // namespace gemlet
