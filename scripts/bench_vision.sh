#!/usr/bin/env bash
# Image input on full-size E2B (random weights: `gemlet synth --preset e2b` carries the real
# vision tower): encode time of one image at 70, 140 and 280 soft tokens, time to first token
# of "Describe this image." with the image at 280 tokens (and without it), and peak RSS while
# encoding against a text-only run. Rounds interleave the cases, so that the machine's load
# falls on all of them alike; the load average is printed beside each round.
#   scripts/bench_vision.sh [GEMLET_BINARY] [BENCH_DIR] [ROUNDS] [THREADS]
# BENCH_DIR (default /work/bench) keeps e2b-vision/ (the HF checkpoint) and e2b-vision.gemlet
# (the default plan) for later runs; they are made under BENCH_DIR/.synth.lock when missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gemlet="${1:-$here/../build/tools/cli/gemlet}"
dir="${2:-/work/bench}"
rounds="${3:-3}"
threads="${4:-2}"
shared="${GEMLET_SHARED_DIR:-$here/../../shared}"
image="$shared/oracle/tiny-e2b-vision/image-A.png"
model="$dir/e2b-vision.gemlet"
mkdir -p "$dir"
if [[ ! -f "$model" ]]; then
  flock "$dir/.synth.lock" bash -c "
    [[ -f '$model' ]] && exit 0
    '$gemlet' synth --preset e2b -o '$dir/e2b-vision' -q
    '$gemlet' convert '$dir/e2b-vision' -o '$model' -q"
fi
ls -l "$model"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One command's wall seconds and peak RSS (MB), from GNU time.
measure() {
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
  read -r wall kb <"$tmp/time"
  printf '%.2f s  %4d MB' "$wall" $((kb / 1024))
}

for ((r = 1; r <= rounds; r++)); do
  echo "round $r  ($(uptime | sed 's/.*load average/load average/'))"
  for n in 70 140 280; do
    m="$(measure "$gemlet" encode-image -m "$model" --image "$image" --image-tokens "$n" --threads "$threads" -o "$tmp/soft.npy")"
    echo "  encode-image $n tokens: $m  ($(sed -n 's/.*pixels, \(.*\)/\1/p' "$tmp/out"))"
  done
  m="$(measure "$gemlet" run -m "$model" --chat -p "Describe this image." -n 1 --temp 0 --threads "$threads" --json -q)"
  echo "  text only, first token: $m  (prefill $(sed -n 's/.*"prefill_ms":\([0-9.]*\).*/\1/p' "$tmp/out") ms)"
  m="$(measure "$gemlet" run -m "$model" --chat --image "$image" --image-tokens 280 -p "Describe this image." -n 1 --temp 0 --threads "$threads" --json -q)"
  echo "  image 280 tokens, first token: $m  (prefill $(sed -n 's/.*"prefill_ms":\([0-9.]*\).*/\1/p' "$tmp/out") ms)"
done
