#!/usr/bin/env bash
# `gemlet pull` end to end against a local stand-in for the Hugging Face Hub (node, no npm
# packages): tests/hub/pull.test.mjs.
#   tests/hub/run.sh GEMLET_BINARY [SHARED_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export GEMLET_BINARY="${1:?usage: run.sh GEMLET_BINARY [SHARED_DIR]}"
export GEMLET_SHARED_DIR="${2:-${GEMLET_SHARED_DIR:-$here/../../../shared}}"
command -v node >/dev/null || { echo "run.sh: node not found (Node >= 20 is needed)" >&2; exit 1; }
cd "$here" && exec node --test --test-concurrency=1 pull.test.mjs
