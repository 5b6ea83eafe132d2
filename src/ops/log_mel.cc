#include "ops/log_mel.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <mutex>

#include "base/status.h"

#if GEMLET_HAVE_FFTW
#include <fftw3.h>
#endif

namespace gemlet::ops {

double HertzToMelHtk(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double MelToHertzHtk(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

std::vector<double> MelFilterBankHtk(const LogMelParams& p) {
  const int64_t n_bins = p.fft_length / 2 + 1, M = p.n_mels;
  // HF audio_utils.mel_filter_bank: edges linspace(mel_min, mel_max, M + 2) back in Hz, bins
  // linspace(0, sr // 2, n_bins), then _create_triangular_filter_bank.
  const double mel_min = HertzToMelHtk(p.f_min), mel_max = HertzToMelHtk(p.f_max);
  std::vector<double> edges(M + 2);
  for (int64_t i = 0; i < M + 2; ++i) {
    edges[i] = MelToHertzHtk(mel_min + (mel_max - mel_min) * static_cast<double>(i) / static_cast<double>(M + 1));
  }
  const double nyquist = std::floor(p.sample_rate / 2);
  std::vector<double> fb(n_bins * M);
  for (int64_t b = 0; b < n_bins; ++b) {
    const double f = nyquist * static_cast<double>(b) / static_cast<double>(n_bins - 1);
    for (int64_t m = 0; m < M; ++m) {
      const double down = -(edges[m] - f) / (edges[m + 1] - edges[m]);
      const double up = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]);
      fb[b * M + m] = std::max(0.0, std::min(down, up));
    }
  }
  return fb;
}

std::vector<double> PeriodicHannF32(int64_t n) {
  std::vector<double> w(n);
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < n; ++i) {
    w[i] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * pi * static_cast<double>(i) / static_cast<double>(n)));
  }
  return w;
}

#if GEMLET_HAVE_FFTW
// FFTW's planner is not thread-safe (plan execution with the new-array interface is).
std::mutex& FftwPlannerLock() {
  static std::mutex m;
  return m;
}

// One plan for the transform size.
struct LogMel::Fft {
  explicit Fft(int64_t n) : n(n) {
    std::lock_guard<std::mutex> lock(FftwPlannerLock());
    double* in = fftw_alloc_real(n);
    fftw_complex* out = fftw_alloc_complex(n / 2 + 1);
    plan = fftw_plan_dft_r2c_1d(static_cast<int>(n), in, out, FFTW_ESTIMATE);
    fftw_free(in);
    fftw_free(out);
  }
  ~Fft() {
    std::lock_guard<std::mutex> lock(FftwPlannerLock());
    fftw_destroy_plan(plan);
  }
  // |X[k]| for k ≤ n/2 of the real x [n].
  void Magnitude(const double* x, double* mag) const {
    double* in = fftw_alloc_real(n);
    fftw_complex* out = fftw_alloc_complex(n / 2 + 1);
    std::copy(x, x + n, in);
    fftw_execute_dft_r2c(plan, in, out);
    for (int64_t k = 0; k <= n / 2; ++k) mag[k] = std::hypot(out[k][0], out[k][1]);
    fftw_free(in);
    fftw_free(out);
  }
  int64_t n;
  fftw_plan plan;
};
#else
// A direct DFT (a build without FFTW, e.g. the Arm64 cross build): the same sums, O(n²).
struct LogMel::Fft {
  explicit Fft(int64_t n) : n(n), cs(n), sn(n) {
    const double pi = 3.14159265358979323846;
    for (int64_t i = 0; i < n; ++i) {
      cs[i] = std::cos(2.0 * pi * static_cast<double>(i) / static_cast<double>(n));
      sn[i] = std::sin(2.0 * pi * static_cast<double>(i) / static_cast<double>(n));
    }
  }
  void Magnitude(const double* x, double* mag) const {
    for (int64_t k = 0; k <= n / 2; ++k) {
      double re = 0, im = 0;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t j = (k * t) % n;
        re += x[t] * cs[j];
        im -= x[t] * sn[j];
      }
      mag[k] = std::hypot(re, im);
    }
  }
  int64_t n;
  std::vector<double> cs, sn;
};
#endif

LogMel::LogMel(const LogMelParams& p, std::vector<double> window)
    : p_(p), window_(std::move(window)), filters_(MelFilterBankHtk(p)), fft_(std::make_unique<Fft>(p.fft_length)) {
  GEMLET_CHECK(static_cast<int64_t>(window_.size()) == p.frame_length && p.frame_length <= p.fft_length);
}

LogMel::~LogMel() = default;

void LogMel::Compute(const float* signal, int64_t n_frames, int64_t hop, float* out) const {
  const int64_t L = p_.frame_length, N = p_.fft_length, n_bins = N / 2 + 1, M = p_.n_mels;
  std::vector<double> frame(N, 0.0), mag(n_bins), mel(M);
  for (int64_t f = 0; f < n_frames; ++f) {
    const float* s = signal + f * hop;
    for (int64_t i = 0; i < L; ++i) frame[i] = static_cast<double>(s[i]) * window_[i];
    fft_->Magnitude(frame.data(), mag.data());
    std::fill(mel.begin(), mel.end(), 0.0);
    for (int64_t b = 0; b < n_bins; ++b) {
      const double* w = filters_.data() + b * M;
      for (int64_t m = 0; m < M; ++m) mel[m] += mag[b] * w[m];
    }
    for (int64_t m = 0; m < M; ++m) out[f * M + m] = static_cast<float>(std::log(mel[m] + p_.floor));
  }
}

}  // namespace gemlet::ops
