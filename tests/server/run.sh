#!/usr/bin/env bash
# End-to-end tests of `gemlet serve`: the OpenAI Node client and headless Chromium against the
# tiny random model on a free loopback port (and image and audio input against the tiny vision
# and audio oracles).
#   tests/server/run.sh [GEMLET_BINARY] [WORK_DIR]
# Needs Node >= 20 with npm (dependencies from package-lock.json: `npm ci` here, run
# automatically when node_modules is missing) and Debian's chromium (GEMLET_CHROMIUM overrides
# its path). Nothing is skipped: a missing piece is a failure.
# Waits are bounded polls on real conditions (never fixed sleeps), with generous deadlines for
# loaded CI machines; the whole run takes well under a minute on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gemlet="${1:-$here/../../build/tools/cli/gemlet}"
work="${2:-$(mktemp -d)}"
mkdir -p "$work"
fail() { echo "run.sh: $*" >&2; exit 1; }
[[ -x "$gemlet" ]] || fail "no gemlet binary at $gemlet"
export GEMLET_CHROMIUM="${GEMLET_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
[[ -n "$GEMLET_CHROMIUM" && -x "$GEMLET_CHROMIUM" ]] ||
  fail "chromium not found (GEMLET_CHROMIUM='$GEMLET_CHROMIUM'); install it: scripts/deps.sh"
command -v node >/dev/null || fail "node not found (Node >= 20 is needed)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
(( node_major >= 20 )) || fail "Node $(node --version) is too old; playwright-core needs >= 20"

# npm ci when node_modules is missing or older than package-lock.json; under a lock, since two
# build folders may run this test at once.
needs_ci() {
  [[ ! -d "$here/node_modules/openai" || ! -d "$here/node_modules/playwright-core" ||
     ! -d "$here/node_modules/ollama" || ! -d "$here/node_modules/@anthropic-ai/sdk" ||
     "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]]
}
if needs_ci; then
  (
    flock 9
    if needs_ci; then cd "$here" && npm ci --no-audit --no-fund --loglevel=error; fi
  ) 9>"${TMPDIR:-/tmp}/gemlet-server-npm-ci.lock" || fail "npm ci failed in $here"
fi

# The tiny model (a fraction of a second to make).
"$gemlet" synth --preset tiny -o "$work/tiny" -q
"$gemlet" convert "$work/tiny" -o "$work/tiny.gemlet" -q

# The same tiny shapes with the real Gemma 4 vocabulary (262,144 tokens), for structured output:
# grammars are matched over the real token pieces.
# The structured-output tests run on a second server whose tiny model has the real Gemma 4
# vocabulary (262,144 tokens: real token pieces are what breaks grammar engines), unless
# GEMLET_STRUCTURED_VOCAB=tiny: then on the first server's 512-token model (the ASan stage,
# where the real vocabulary's cold masks cost ~20x; the code paths are the same).
structured_vocab="${GEMLET_STRUCTURED_VOCAB:-real}"
[[ "$structured_vocab" == real || "$structured_vocab" == tiny ]] ||
  fail "GEMLET_STRUCTURED_VOCAB must be real or tiny, not '$structured_vocab'"
shared="${GEMLET_SHARED_DIR:-$here/../../../shared}"
export GEMLET_SHARED_DIR="$shared"
# Image input (vision.test.mjs): the tiny vision oracle, converted.
"$gemlet" convert "$shared/oracle/tiny-e2b-vision" -o "$work/vision.gemlet" -q
# Audio input and transcriptions (audio.test.mjs): the tiny audio oracle, converted.
"$gemlet" convert "$shared/oracle/tiny-e2b-audio" -o "$work/audio.gemlet" -q
if [[ "$structured_vocab" == real ]]; then
  "$gemlet" synth --preset tiny --tokenizer "$shared/tokenizer/gemma4" -o "$work/tinyv" -q
  "$gemlet" convert "$work/tinyv" -o "$work/tinyv.gemlet" -q
fi

# Port 0: the server picks a free port and prints it ("... on http://127.0.0.1:PORT ...").
# One compute thread: the tiny model gains nothing from more, and a second pool thread on a
# loaded 2-core machine turns every op into a wait for a descheduled worker (100x slower).
key="test-key-$RANDOM$RANDOM"
log="$work/serve.log"
"$gemlet" serve -m "$work/tiny.gemlet" --host 127.0.0.1 --port 0 --api-key "$key" \
  --slots 8 --ctx 100000 --threads 1 >"$log" 2>&1 &
pid=$!
vlog="$work/serve-vocab.log"
vpid=""
if [[ "$structured_vocab" == real ]]; then
  "$gemlet" serve -m "$work/tinyv.gemlet" --host 127.0.0.1 --port 0 --api-key "$key" \
    --slots 8 --ctx 4096 --threads 1 >"$vlog" 2>&1 &
  vpid=$!
fi
# The vision server: 70 soft tokens per image keeps the prompts short (under ASan too).
ilog="$work/serve-vision.log"
"$gemlet" serve -m "$work/vision.gemlet" --alias tiny-vision --host 127.0.0.1 --port 0 --api-key "$key" \
  --slots 8 --ctx 1024 --threads 1 --image-tokens 70 >"$ilog" 2>&1 &
ipid=$!
# The audio server: a 30 s window is 750 soft tokens, so the context holds a window's turn;
# uploads up to 12 MB (audio.test.mjs sends a 9.6 MB file, and a larger one for the 413).
alog="$work/serve-audio.log"
"$gemlet" serve -m "$work/audio.gemlet" --alias tiny-audio --host 127.0.0.1 --port 0 --api-key "$key" \
  --slots 4 --ctx 2048 --threads 1 --max-upload 12000000 >"$alog" 2>&1 &
apid=$!
cleanup() {
  for p in "$pid" $vpid $ipid $apid; do
    if kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p"
      for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
}
trap cleanup EXIT

# GET /health over bash's /dev/tcp (no curl needed); true when it answers {"status":"ok"}.
health() {
  timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 &&
    printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && grep -q '\"status\":\"ok\"' <&3" \
    2>/dev/null
}

# wait_port PID LOG NAME: prints the port of the server PID once it answers /health (it
# prints "... on http://127.0.0.1:PORT ..." to LOG); fails if it exits or takes over 60 s
# (ASan builds load slowly).
wait_port() {
  local p=""
  for _ in $(seq 600); do
    kill -0 "$1" 2>/dev/null || { cat "$2" >&2; fail "the $3 exited at start"; }
    p="$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$2" | head -1)"
    [[ -n "$p" ]] && health "$p" && { echo "$p"; return 0; }
    sleep 0.1
  done
  cat "$2" >&2
  fail "the $3 did not become healthy within 60 s"
}
port="$(wait_port "$pid" "$log" server)"
vport="$port"
if [[ -n "$vpid" ]]; then vport="$(wait_port "$vpid" "$vlog" "real-vocabulary server")"; fi
iport="$(wait_port "$ipid" "$ilog" "vision server")"
aport="$(wait_port "$apid" "$alog" "audio server")"

export GEMLET_BASE_URL="http://127.0.0.1:$port/v1" GEMLET_API_KEY="$key"
export GEMLET_VISION_URL="http://127.0.0.1:$iport/v1"
export GEMLET_AUDIO_URL="http://127.0.0.1:$aport/v1"
export GEMLET_STRUCTURED_URL="http://127.0.0.1:$vport/v1"
status=0
start=$SECONDS
(cd "$here" && node --test --test-concurrency=1 openai_client.test.mjs apis.test.mjs chat_page.test.mjs \
  hostile.test.mjs structured_output.test.mjs vision.test.mjs audio.test.mjs) || status=$?
echo "run.sh: node tests took $((SECONDS - start)) s"

# The server must still be up after everything, and stop cleanly on SIGTERM (under ASan a leak
# or error makes the exit status non-zero).
health "$port" || { echo "run.sh: the server died during the tests" >&2; status=1; }
if [[ -n "$vpid" ]]; then
  health "$vport" || { echo "run.sh: the real-vocabulary server died during the tests" >&2; status=1; }
fi
health "$iport" || { echo "run.sh: the vision server died during the tests" >&2; status=1; }
health "$aport" || { echo "run.sh: the audio server died during the tests" >&2; status=1; }
for p in "$pid" $vpid $ipid $apid; do
  kill -TERM "$p"
  for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then echo "run.sh: a server ignored SIGTERM for 30 s" >&2; status=1; fi
  wait "$p" || { echo "run.sh: a server exited with an error" >&2; status=1; }
done
if (( status != 0 )); then
  echo "---- server log ($log):" >&2; tail -50 "$log" >&2
  echo "---- server log ($vlog):" >&2; tail -50 "$vlog" >&2
  echo "---- server log ($ilog):" >&2; tail -50 "$ilog" >&2
  echo "---- server log ($alog):" >&2; tail -50 "$alog" >&2
fi
exit "$status"
