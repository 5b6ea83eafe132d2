// Log-mel spectrogram frames (generic STFT + mel filterbank; the model decides framing and
// padding): each frame of `frame_length` samples is multiplied by a window, zero-padded to
// `fft_length`, its magnitude spectrum |rfft| taken, projected on an HTK mel filterbank and
// ln(mel + floor) taken. The arithmetic is float64 (FFTW's double transform, or a direct DFT in
// a build without FFTW), so the result is the float64 reference rounded once to float32.
//
// The filterbank is transformers' audio_utils.mel_filter_bank(norm=None, mel_scale="htk"):
// triangles between mel-spaced edges over the bins linspace(0, sample_rate/2, fft_length/2+1).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace gemlet::ops {

struct LogMelParams {
  int64_t frame_length = 320;
  int64_t fft_length = 512;
  int64_t n_mels = 128;
  double sample_rate = 16000;
  double f_min = 0, f_max = 8000;
  double floor = 1e-3;  // added to the mel energy before the log (not a max)
};

// HTK mel scale: 2595·log10(1 + f/700) and its inverse.
double HertzToMelHtk(double hz);
double MelToHertzHtk(double mel);

// The filterbank [fft_length/2 + 1, n_mels] (frequency-major, as HF returns it).
std::vector<double> MelFilterBankHtk(const LogMelParams& p);

// A periodic Hann window of n: 0.5 − 0.5·cos(2πi/n), rounded to float32 (as HF stores it).
std::vector<double> PeriodicHannF32(int64_t n);

class LogMel {
 public:
  // `window` has frame_length values.
  LogMel(const LogMelParams& p, std::vector<double> window);
  ~LogMel();
  LogMel(const LogMel&) = delete;
  LogMel& operator=(const LogMel&) = delete;

  const LogMelParams& params() const { return p_; }
  // out [n_frames, n_mels]: frame f reads signal[f·hop, f·hop + frame_length), which the caller
  // guarantees lies inside the signal.
  void Compute(const float* signal, int64_t n_frames, int64_t hop, float* out) const;

 private:
  struct Fft;
  LogMelParams p_;
  std::vector<double> window_;
  std::vector<double> filters_;  // [n_bins, n_mels]
  std::unique_ptr<Fft> fft_;
};

}  // namespace gemlet::ops
