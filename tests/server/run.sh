#!/usr/bin/env bash
# End-to-end tests of `gemlet serve`: the OpenAI Node client and headless Chromium against the
# tiny random model on a free loopback port.
#   tests/server/run.sh [GEMLET_BINARY] [WORK_DIR]
# Needs node + npm (dependencies from package-lock.json: `npm ci` here, run automatically when
# node_modules is missing) and Debian's chromium (GEMLET_CHROMIUM overrides its path).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gemlet="${1:-$here/../../build/tools/cli/gemlet}"
work="${2:-$(mktemp -d)}"
mkdir -p "$work"
[[ -x "$gemlet" ]] || { echo "run.sh: no gemlet binary at $gemlet" >&2; exit 1; }

if [[ ! -d "$here/node_modules/openai" || ! -d "$here/node_modules/playwright-core" ]]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The tiny model (a fraction of a second to make).
"$gemlet" synth --preset tiny -o "$work/tiny" -q
"$gemlet" convert "$work/tiny" -o "$work/tiny.gemlet" -q

port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
key="test-key-$RANDOM$RANDOM"
"$gemlet" serve -m "$work/tiny.gemlet" --host 127.0.0.1 --port "$port" --api-key "$key" \
  --slots 8 --ctx 100000 --threads 2 >"$work/serve.log" 2>&1 &
pid=$!
cleanup() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

for _ in $(seq 100); do
  if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "run.sh: server not healthy" >&2; cat "$work/serve.log" >&2; exit 1; }

export GEMLET_BASE_URL="http://127.0.0.1:$port/v1" GEMLET_API_KEY="$key"
export GEMLET_CHROMIUM="${GEMLET_CHROMIUM:-/usr/bin/chromium}"
status=0
(cd "$here" && node --test --test-concurrency=1 openai_client.test.mjs chat_page.test.mjs) || status=$?

# The server must still be up after everything, and stop cleanly on SIGTERM.
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "run.sh: server died" >&2; status=1; }
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "run.sh: server ignored SIGTERM" >&2; status=1; fi
wait "$pid" || { echo "run.sh: server exited with an error" >&2; cat "$work/serve.log" >&2; status=1; }
exit "$status"
