#!/usr/bin/env bash
# The Debian 12 packages gemlet needs to build, test, cross-test and fuzz. Sourced by
# .ci/run and scripts/demo.sh (one list for both); run directly to install them:
#   sudo scripts/deps.sh
# The project uses Debian packages only (no vendored code, no downloads).

GEMLET_APT_PACKAGES=(
  # build (scripts/test.sh uses Ninja for new build folders, make otherwise)
  cmake make ninja-build g++ pkg-config
  # libraries (header-only or static): GoogleTest/GoogleMock (googletest also ships the source
  # that the aarch64 cross build compiles), Google Benchmark, JSON, HTTP server, line editing
  googletest libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcpp-httplib-dev
  libedit-dev
  # downloads for `gemlet pull` (tools/hub) and image URLs in server requests behind
  # --allow-image-urls (tools/server/image_fetch.cc): libcurl with OpenSSL (HTTPS)
  libcurl4-openssl-dev
  # image decoding (src/format/image_decode.cc): JPEG (libjpeg-turbo), PNG, WebP
  libjpeg62-turbo-dev libpng-dev libwebp-dev
  # audio (src/format/audio_decode.cc, src/ops/log_mel.cc): libsndfile (WAV, FLAC, Ogg
  # Vorbis/Opus, MP3), libsoxr (resampling), FFTW (the log-mel features' FFT)
  libsndfile1-dev libsoxr-dev libfftw3-dev
  # clang + libFuzzer runtime (fuzz targets)
  clang libclang-rt-14-dev
  # Arm64 cross build, run under qemu-user
  g++-aarch64-linux-gnu qemu-user
  # the Arm64 copies of the libraries, so that the cross build decodes images and audio like the
  # native ones and links the gemlet binary itself (Debian multiarch: gemlet_install_deps adds
  # the arm64 architecture to dpkg first; cmake/toolchain-aarch64.cmake finds them)
  libjpeg62-turbo-dev:arm64 libpng-dev:arm64 libwebp-dev:arm64 libsndfile1-dev:arm64
  libsoxr-dev:arm64 libfftw3-dev:arm64 libcpp-httplib-dev:arm64 libedit-dev:arm64
  libcurl4-openssl-dev:arm64
  # and the Arm64 C and C++ runtime that qemu runs the guest binaries on (its loader
  # /lib/ld-linux-aarch64.so.1 must be the same glibc build as the libc.so.6 beside the
  # libraries above: the cross toolchain's own copy is an older build, and mixing the two
  # hangs the first thread a guest binary starts)
  libc6:arm64 libstdc++6:arm64
  # the interactive chat tests drive a terminal
  tmux
  # ---- server issue: packages for the web UI / browser tests go here (e.g. chromium,
  # ---- chromium-driver, nodejs, npm). Keep them in this list so CI and the demo agree.
  # Headless Chromium for tests/server/chat_page.test.mjs (driven by npm playwright-core).
  # Not nodejs/npm: the e2e tests need Node >= 20 (playwright-core's minimum) and Debian 12
  # ships 18; CI machines have NodeSource's nodejs 20, which bundles npm and conflicts with
  # Debian's npm package. tests/server/run.sh checks the Node version and runs `npm ci`.
  # The npm packages of the tests (openai, playwright-core, and ajv + ajv-formats, the JSON
  # Schema validator of tests/grammar/run_ajv.sh) are pinned in tests/server/package-lock.json.
  chromium
  # tests/scaleout: replicas of `gemlet serve` behind nginx (non-root, in a temp folder)
  nginx
)

# Prints the packages of GEMLET_APT_PACKAGES that are not installed.
gemlet_missing_packages() {
  local p
  for p in "${GEMLET_APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
      echo "$p"
    fi
  done
}

# Installs whatever is missing (apt-get update first); uses sudo when not root.
gemlet_install_deps() {
  local missing
  missing=$(gemlet_missing_packages | tr '\n' ' ')
  if [ -z "${missing// /}" ]; then
    echo "deps: all ${#GEMLET_APT_PACKAGES[@]} packages are installed"
    return 0
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "deps: missing packages: $missing; run as root: apt-get install $missing" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo "deps: installing $missing"
  if [[ " $missing " == *":arm64 "* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo[@]}" dpkg --add-architecture arm64
  fi
  # shellcheck disable=SC2086
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  # shellcheck disable=SC2086
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  gemlet_install_deps
fi
