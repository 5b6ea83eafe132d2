#include "format/audio_decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/mapped_file.h"

#ifndef GEMLET_HAVE_SNDFILE
#define GEMLET_HAVE_SNDFILE 0
#endif
#ifndef GEMLET_HAVE_SOXR
#define GEMLET_HAVE_SOXR 0
#endif

#if GEMLET_HAVE_SNDFILE
#include <sndfile.h>
#endif
#if GEMLET_HAVE_SOXR
#include <soxr.h>
#endif

namespace gemlet {

namespace {

uint32_t Le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

std::string Seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

// A RIFF/WAVE file's own header, checked before libsndfile (which quietly clamps a data chunk
// that runs past the end of the file): a declared duration over the limit and a data chunk
// longer than the bytes present are errors. Other containers pass.
Status CheckWavHeader(const uint8_t* d, size_t n, const std::string& name, double max_seconds) {
  if (n < 12 || std::memcmp(d, "RIFF", 4) != 0 || std::memcmp(d + 8, "WAVE", 4) != 0) return Status::Ok();
  size_t pos = 12;
  uint32_t rate = 0, block_align = 0;
  bool have_fmt = false;
  while (pos + 8 <= n) {
    const uint8_t* c = d + pos;
    const uint64_t size = Le32(c + 4);
    if (std::memcmp(c, "fmt ", 4) == 0) {
      if (size < 16 || pos + 8 + 16 > n) return Corrupt(name + ": the WAV fmt chunk is truncated");
      rate = Le32(c + 12);
      block_align = Le16(c + 20);
      have_fmt = true;
    } else if (std::memcmp(c, "data", 4) == 0) {
      if (!have_fmt) return Corrupt(name + ": the WAV data chunk comes before its fmt chunk");
      if (rate == 0 || block_align == 0) return Corrupt(name + ": the WAV fmt chunk has a zero rate or block size");
      const uint64_t avail = n - (pos + 8);
      if (size == 0xFFFFFFFFu) return Status::Ok();  // a streamed file: length unknown, to the end
      const double declared = static_cast<double>(size / block_align) / rate;
      if (declared > max_seconds) {
        return OutOfRange(name + ": the WAV header declares " + Seconds(declared) + " of audio, over the limit of " +
                               Seconds(max_seconds));
      }
      if (size > avail) {
        return Corrupt(name + ": truncated WAV: the data chunk declares " + std::to_string(size) +
                       " bytes but the file holds " + std::to_string(avail));
      }
      return Status::Ok();
    }
    pos += 8 + size + (size & 1);
  }
  return Corrupt(name + ": the WAV file has no data chunk");
}

#if GEMLET_HAVE_SNDFILE
struct MemFile {
  const uint8_t* data;
  sf_count_t size;
  sf_count_t pos = 0;
};

sf_count_t VioLength(void* u) { return static_cast<MemFile*>(u)->size; }
sf_count_t VioSeek(sf_count_t off, int whence, void* u) {
  auto* m = static_cast<MemFile*>(u);
  sf_count_t p = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->size + off;
  if (p < 0 || p > m->size) return -1;
  m->pos = p;
  return p;
}
sf_count_t VioRead(void* ptr, sf_count_t count, void* u) {
  auto* m = static_cast<MemFile*>(u);
  const sf_count_t k = std::max<sf_count_t>(0, std::min(count, m->size - m->pos));
  if (k > 0) std::memcpy(ptr, m->data + m->pos, static_cast<size_t>(k));
  m->pos += k;
  return k;
}
sf_count_t VioWrite(const void*, sf_count_t, void*) { return 0; }
sf_count_t VioTell(void* u) { return static_cast<MemFile*>(u)->pos; }

std::string MajorFormatName(int format) {
  SF_FORMAT_INFO info{};
  info.format = format & SF_FORMAT_TYPEMASK;
  if (sf_command(nullptr, SFC_GET_FORMAT_INFO, &info, sizeof info) == 0 && info.extension) return info.extension;
  return "audio";
}
#endif

}  // namespace

bool AudioDecodingAvailable() { return GEMLET_HAVE_SNDFILE && GEMLET_HAVE_SOXR; }

Result<std::vector<float>> ResampleMono(const std::vector<float>& in, int64_t in_rate, int64_t out_rate) {
  if (in_rate <= 0 || out_rate <= 0) return InvalidArgument("resample: rates must be positive");
  if (in_rate == out_rate) return in;
#if GEMLET_HAVE_SOXR
  const double ratio = static_cast<double>(out_rate) / static_cast<double>(in_rate);
  const size_t olen = static_cast<size_t>(std::llround(static_cast<double>(in.size()) * ratio));
  // libsoxr writes through a null buffer when asked for no output (found by audio_decode_fuzz:
  // one sample at 605,856 Hz): nothing to resample into is an empty result.
  if (olen == 0) return std::vector<float>();
  std::vector<float> out(olen);
  size_t odone = 0;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
  const soxr_error_t err = soxr_oneshot(static_cast<double>(in_rate), static_cast<double>(out_rate), 1, in.data(),
                                        in.size(), nullptr, out.data(), olen, &odone, &io, &q, nullptr);
  if (err) return Internal(std::string("resample: libsoxr: ") + err);
  out.resize(odone);
  return out;
#else
  return Unsupported("resample: this build has no libsoxr (cannot resample " + std::to_string(in_rate) + " Hz to " +
                     std::to_string(out_rate) + " Hz)");
#endif
}

Result<AudioClip> DecodeAudio(const uint8_t* data, size_t size, const std::string& name,
                              const AudioDecodeOptions& options) {
#if GEMLET_HAVE_SNDFILE && GEMLET_HAVE_SOXR
  if (size == 0) return Corrupt(name + ": the audio file is empty");
  RETURN_IF_ERROR(CheckWavHeader(data, size, name, options.max_seconds));
  MemFile mem{data, static_cast<sf_count_t>(size)};
  SF_VIRTUAL_IO vio{VioLength, VioSeek, VioRead, VioWrite, VioTell};
  SF_INFO info{};
  SNDFILE* sf = sf_open_virtual(&vio, SFM_READ, &info, &mem);
  if (!sf) {
    return Corrupt(name + ": not a readable audio file (WAV, FLAC, Ogg Vorbis/Opus, MP3, ...): " +
                   sf_strerror(nullptr));
  }
  struct Closer {
    SNDFILE* f;
    ~Closer() { sf_close(f); }
  } closer{sf};
  if (info.channels <= 0 || info.channels > 64) {
    return Corrupt(name + ": " + std::to_string(info.channels) + " channels");
  }
  if (info.samplerate <= 0 || info.samplerate > 768000) {
    return Corrupt(name + ": a sample rate of " + std::to_string(info.samplerate) + " Hz");
  }
  const double max_frames_d = options.max_seconds * info.samplerate;
  if (info.frames > 0 && info.frames != SF_COUNT_MAX && static_cast<double>(info.frames) > max_frames_d) {
    return OutOfRange(name + ": the file declares " + Seconds(static_cast<double>(info.frames) / info.samplerate) +
                           " of audio, over the limit of " + Seconds(options.max_seconds));
  }
  const int64_t max_frames = static_cast<int64_t>(max_frames_d);
  const int ch = info.channels;
  std::vector<float> mono;
  std::vector<float> buf(static_cast<size_t>(4096 * ch));
  for (;;) {
    const sf_count_t got = sf_readf_float(sf, buf.data(), 4096);
    if (got <= 0) break;
    if (static_cast<int64_t>(mono.size()) + got > max_frames) {
      return OutOfRange(name + ": the audio is longer than the limit of " + Seconds(options.max_seconds));
    }
    for (sf_count_t f = 0; f < got; ++f) {  // the channel mean (librosa.to_mono)
      double s = 0;
      for (int c = 0; c < ch; ++c) s += buf[f * ch + c];
      mono.push_back(ch == 1 ? buf[f] : static_cast<float>(s / ch));
    }
  }
  if (const int e = sf_error(sf); e != SF_ERR_NO_ERROR) {
    return Corrupt(name + ": the audio stream is corrupt: " + sf_error_number(e));
  }
  if (info.frames > 0 && info.frames != SF_COUNT_MAX && static_cast<int64_t>(mono.size()) < info.frames &&
      (info.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG) {  // an MP3's count is an estimate
    return Corrupt(name + ": truncated: the header declares " + std::to_string(info.frames) + " frames, " +
                   std::to_string(mono.size()) + " could be decoded");
  }
  if (mono.empty()) return Corrupt(name + ": the audio file holds 0 samples");
  // Float files can hold any value; samples are nominally within ±1. A sample past
  // kMaxSampleMagnitude (60 dB over full scale) is no recording, and near the float limit the
  // resampler and the log-mel features would overflow to infinity (found by audio_decode_fuzz).
  constexpr float kMaxSampleMagnitude = 1000.0f;
  for (float v : mono) {
    if (!std::isfinite(v)) return Corrupt(name + ": the audio holds a non-finite sample");
    if (std::fabs(v) > kMaxSampleMagnitude) {
      return Corrupt(name + ": the audio holds a sample of magnitude " + std::to_string(std::fabs(v)) +
                     ", over " + std::to_string(static_cast<int>(kMaxSampleMagnitude)) +
                     " (samples are nominally within ±1)");
    }
  }
  AudioClip clip;
  clip.source_rate = info.samplerate;
  clip.source_channels = ch;
  clip.source_format = MajorFormatName(info.format);
  clip.sample_rate = options.target_rate;
  auto res = ResampleMono(mono, info.samplerate, options.target_rate);
  if (!res.ok()) return res.status().WithContext(name);
  clip.samples = std::move(*res);
  if (clip.samples.empty()) return Corrupt(name + ": the audio is too short to resample");
  return clip;
#else
  (void)data;
  (void)size;
  (void)options;
  return Unsupported(name + ": this build has no audio decoding (built without libsndfile/libsoxr)");
#endif
}

Result<AudioClip> DecodeAudioFile(const std::string& path, const AudioDecodeOptions& options) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  return DecodeAudio(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path, options);
}

}  // namespace gemlet
