#!/usr/bin/env bash
# The newcomer's first command (README "Quick start"): installs the Debian packages that are
# missing (scripts/deps.sh, the same list CI uses), builds gemlet (Release) into build/, and
# runs a chat turn with no model given, on a generated demo model.
#
# The demo model is `gemlet synth --preset tiny`: the real Gemma 4 architecture with tiny
# shapes and RANDOM weights, so the text it writes is meaningless. Real Gemma 4 weights: see
# README "Using a real model".
#
# Usage: scripts/demo.sh [ARGS...]    (ARGS go to `gemlet chat`)
# Environment: JOBS (build parallelism, default: all cores).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# shellcheck source=deps.sh
source scripts/deps.sh
gemlet_install_deps

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"${JOBS:-$(nproc)}" --target gemlet
GEMLET="$ROOT/build/tools/cli/gemlet"
echo

has_command() { "$GEMLET" help | grep -qE "^  $1 "; }

if has_command chat; then
  # With no -m, `gemlet chat` makes the tiny demo model once (~/.cache/gemlet) and uses it.
  if [ -t 0 ]; then
    exec "$GEMLET" chat "$@"
  fi
  # Not on a terminal (a script, CI): one scripted turn.
  printf '%s\n' "Hello! Who are you?" | "$GEMLET" chat -n 48 "$@"
  exit 0
fi

# Without `gemlet chat` (older trees): synthesize, convert and run one prompt by hand.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/gemlet/demo"
mkdir -p "$CACHE"
echo "demo: the weights are RANDOM (gemlet synth --preset tiny): the text is meaningless."
"$GEMLET" synth --preset tiny -o "$CACHE/tiny-hf" --quiet
"$GEMLET" convert "$CACHE/tiny-hf" -o "$CACHE/tiny.gemlet" --quiet
exec "$GEMLET" run -m "$CACHE/tiny.gemlet" -n 48 \
  -p "<|turn>user
${1:-Hello! Who are you?}<turn|>
<|turn>model
"
