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
  # With no model, `gemlet chat` synthesizes the tiny demo model once into its cache folder.
  exec "$GEMLET" chat "$@"
fi

# Until `gemlet chat` exists: synthesize, convert and run one prompt by hand.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/gemlet/demo"
mkdir -p "$CACHE"
echo "demo: the weights are RANDOM (gemlet synth --preset tiny): the text is meaningless."
"$GEMLET" synth --preset tiny -o "$CACHE/tiny-hf" --quiet
"$GEMLET" convert "$CACHE/tiny-hf" -o "$CACHE/tiny.gemlet" --quiet
"$GEMLET" info "$CACHE/tiny.gemlet"
echo
if has_command run; then
  exec "$GEMLET" run -m "$CACHE/tiny.gemlet" -p "${1:-Hello! Who are you?}"
fi
# Neither chat nor run yet: compute the logits of a chat prompt, "<bos><|turn>user\nHello!
# <turn|>\n<|turn>model\n" in ids of the synthetic tokenizer (u s er \n H e ll o ! ... m o d e l).
"$GEMLET" logits -m "$CACHE/tiny.gemlet" -o "$CACHE/logits.npy" \
  --tokens 2,105,145,143,219,107,158,129,231,139,189,106,107,105,137,139,128,129,136,107
