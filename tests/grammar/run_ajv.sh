#!/usr/bin/env bash
# JSON Schema → grammar, checked by an independent validator (ctest: gemlet_json_schema_ajv):
# json_schema_samples writes 50 random documents of each schema in tests/data/schemas (a random
# walk over the grammar's matcher), then tests/server/validate_json_samples.mjs validates every
# one with ajv (draft 2020-12 and ajv-formats).
#   tests/grammar/run_ajv.sh SAMPLES_BINARY WORK_DIR
# Needs Node >= 20 with npm (the packages of tests/server/package-lock.json: `npm ci` there,
# run when they are missing). Nothing is skipped: a missing piece is a failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
server="$root/tests/server"
samples="${1:?usage: run_ajv.sh SAMPLES_BINARY WORK_DIR}"
work="${2:?usage: run_ajv.sh SAMPLES_BINARY WORK_DIR}"
fail() { echo "run_ajv.sh: $*" >&2; exit 1; }
command -v node >/dev/null || fail "node not found (Node >= 20 is needed)"
needs_ci() {
  [[ ! -d "$server/node_modules/ajv" || ! -d "$server/node_modules/ajv-formats" ||
     "$server/package-lock.json" -nt "$server/node_modules/.package-lock.json" ]]
}
if needs_ci; then  # under the lock tests/server/run.sh takes too
  (
    flock 9
    if needs_ci; then cd "$server" && npm ci --no-audit --no-fund --loglevel=error; fi
  ) 9>"${TMPDIR:-/tmp}/gemlet-server-npm-ci.lock" || fail "npm ci failed in $server"
fi
rm -rf "$work"
mkdir -p "$work"
"$samples" "$root/tests/data/schemas" "$work" 50 1
(cd "$server" && node validate_json_samples.mjs "$root/tests/data/schemas" "$work" 20 50)
