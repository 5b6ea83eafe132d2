// The compressed formats DecodeAudio reads through libsndfile: FLAC (lossless: bit for bit),
// Ogg Vorbis, Ogg Opus and MP3 (lossy: the length, the tone and the level kept), each file
// written here with libsndfile itself from a 440 Hz + 2.5 kHz test signal. A format this
// libsndfile cannot write (a build without that encoder) is skipped, and says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <cstdio>
#include <string>
#include <vector>

#include "format/audio_decode.h"

#if GEMLET_HAVE_SNDFILE && GEMLET_HAVE_SOXR
#include <sndfile.h>
#endif

namespace gemlet {
namespace audio_codecs_test {

#if GEMLET_HAVE_SNDFILE && GEMLET_HAVE_SOXR

constexpr double kPi = 3.14159265358979323846;

std::vector<float> Signal(int64_t rate, double seconds) {
  std::vector<float> s(static_cast<size_t>(rate * seconds));
  for (size_t i = 0; i < s.size(); ++i) {
    const double t = static_cast<double>(i) / rate;
    s[i] = static_cast<float>(0.4 * std::sin(2 * kPi * 440 * t) + 0.2 * std::sin(2 * kPi * 2500 * t));
  }
  return s;
}

// Writes `s` (mono) at `rate` in `format`; false if this libsndfile cannot.
template <typename T>
bool Write(const std::string& path, int format, int64_t rate, const std::vector<T>& s) {
  SF_INFO info{};
  info.samplerate = static_cast<int>(rate);
  info.channels = 1;
  info.format = format;
  if (!sf_format_check(&info)) return false;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  if (!f) return false;
  sf_count_t n = 0;
  if constexpr (std::is_same_v<T, int16_t>) {
    n = sf_writef_short(f, s.data(), static_cast<sf_count_t>(s.size()));
  } else {
    n = sf_writef_float(f, s.data(), static_cast<sf_count_t>(s.size()));
  }
  sf_close(f);
  return n == static_cast<sf_count_t>(s.size());
}

// The amplitude of frequency `hz` in `s` at `rate` (a single DFT bin over whole periods).
double Amplitude(const std::vector<float>& s, size_t from, size_t n, int64_t rate, double hz) {
  double re = 0, im = 0;
  for (size_t i = from; i < from + n; ++i) {
    re += s[i] * std::cos(2 * kPi * hz * i / rate);
    im += s[i] * std::sin(2 * kPi * hz * i / rate);
  }
  return 2 * std::sqrt(re * re + im * im) / n;
}

struct Codec {
  const char* name;
  int format;
  int64_t rate;
  std::vector<std::string> want_format;  // AudioClip::source_format: libsndfile's extension
};

TEST(AudioCodecs, FlacIsLossless) {
  const std::string path = testing::TempDir() + "/gemlet_codec.flac";
  std::vector<int16_t> s;  // PCM16 values: FLAC stores them exactly, read back / 32768
  for (float x : Signal(16000, 1.0)) s.push_back(static_cast<int16_t>(std::lround(x * 32767.0f)));
  ASSERT_TRUE(Write(path, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, s));
  auto clip = DecodeAudioFile(path);
  ASSERT_TRUE(clip.ok()) << clip.status().ToString();
  EXPECT_EQ(clip->source_format, "flac");
  ASSERT_EQ(clip->samples.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(clip->samples[i], s[i] / 32768.0f) << i;
  std::remove(path.c_str());
}

TEST(AudioCodecs, LossyFormatsKeepLengthAndTone) {
  const Codec codecs[] = {
      {"vorbis", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 44100, {"oga", "ogg"}},
      {"opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, {"oga", "ogg", "opus"}},
      {"mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 44100, {"m1a", "mp3"}},
  };
  int decoded = 0;
  for (const Codec& c : codecs) {
    const std::string path = testing::TempDir() + "/gemlet_codec_" + c.name;
    const std::vector<float> s = Signal(c.rate, 1.5);
    if (!Write(path, c.format, c.rate, s)) {
      std::printf("[ skipped  ] %s: this libsndfile cannot write it\n", c.name);
      continue;
    }
    auto clip = DecodeAudioFile(path);
    ASSERT_TRUE(clip.ok()) << c.name << ": " << clip.status().ToString();
    ++decoded;
    EXPECT_EQ(clip->source_rate, c.rate) << c.name;
    EXPECT_EQ(clip->source_channels, 1) << c.name;
    EXPECT_EQ(clip->sample_rate, 16000) << c.name;
    EXPECT_NE(std::find(c.want_format.begin(), c.want_format.end(), clip->source_format), c.want_format.end())
        << c.name << ": " << clip->source_format;
    // 1.5 s at 16 kHz, give or take the codec's padding (MP3 adds a frame or two).
    EXPECT_NEAR(static_cast<double>(clip->samples.size()), 24000, 2400) << c.name;
    // The middle second: both tones at their level, nothing at 1 kHz.
    const size_t from = 4000, n = 16000;
    ASSERT_GE(clip->samples.size(), from + n) << c.name;
    EXPECT_NEAR(Amplitude(clip->samples, from, n, 16000, 440), 0.4, 0.04) << c.name;
    EXPECT_NEAR(Amplitude(clip->samples, from, n, 16000, 2500), 0.2, 0.03) << c.name;
    EXPECT_LT(Amplitude(clip->samples, from, n, 16000, 1000), 0.01) << c.name;
    std::remove(path.c_str());
  }
  EXPECT_GE(decoded, 1) << "no lossy format could be written";
}

#else
TEST(AudioCodecs, NeedsTheAudioLibraries) { GTEST_SKIP() << "built without libsndfile/libsoxr"; }
#endif

}  // namespace audio_codecs_test
}  // namespace gemlet
