#!/usr/bin/env bash
# Two `gemlet serve` replicas on loopback behind nginx (nginx.conf.template, run without root
# from a temp folder), driven by scaleout.test.mjs: 8 concurrent clients, prefix affinity
# (the same X-Session-Id or first user message -> the same replica, named by the replicas'
# X-Gemlet-Replica header), and failover when a replica dies.
#   tests/scaleout/run.sh GEMLET_BINARY [WORK_DIR]
# Needs nginx (Debian package nginx or nginx-light) and Node >= 20 (no npm packages).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gemlet="${1:?usage: run.sh GEMLET_BINARY [WORK_DIR]}"
work="${2:-$(mktemp -d)}"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "run.sh: $*" >&2; exit 1; }
nginx="${GEMLET_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
[[ -x "$nginx" ]] || fail "nginx not found (scripts/deps.sh installs it)"
command -v node >/dev/null || fail "node not found (Node >= 20 is needed)"

"$gemlet" synth --preset tiny -o "$work/tiny" -q
"$gemlet" convert "$work/tiny" -o "$work/tiny.gemlet" -q

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# A free loopback port (the kernel's pick; nginx needs a number in its config).
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

ports=()
for r in r1 r2; do
  GEMLET_MODELS="$work/empty-store" "$gemlet" serve -m "$work/tiny.gemlet" --host 127.0.0.1 --port 0 \
    --replica "$r" --slots 4 --threads 1 --no-log >"$work/$r.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  port=""
  for _ in $(seq 600); do
    port="$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$work/r$((i + 1)).log" | head -1)"
    [[ -n "$port" ]] && break
    kill -0 "${pids[$i]}" 2>/dev/null || { cat "$work/r$((i + 1)).log" >&2; fail "replica r$((i + 1)) exited"; }
    sleep 0.1
  done
  [[ -n "$port" ]] || fail "replica r$((i + 1)) did not start"
  ports+=("$port")
done

nport="$(free_port)"
sed -e "s|@DIR@|$work|g" -e "s|@PORT@|$nport|g" -e "s|@REPLICA1@|127.0.0.1:${ports[0]}|g" \
  -e "s|@REPLICA2@|127.0.0.1:${ports[1]}|g" "$here/nginx.conf.template" >"$work/nginx.conf"
"$nginx" -t -p "$work" -c "$work/nginx.conf" -e "$work/error.log" 2>"$work/nginx-t.log" ||
  { cat "$work/nginx-t.log" >&2; fail "nginx rejected the config"; }
"$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
pids+=($!)

export GEMLET_LB_URL="http://127.0.0.1:$nport" GEMLET_R1_PID="${pids[0]}" GEMLET_R2_PID="${pids[1]}"
status=0
(cd "$here" && node --test --test-concurrency=1 scaleout.test.mjs) || status=$?
if (( status != 0 )); then
  for f in r1.log r2.log error.log; do echo "---- $f" >&2; tail -20 "$work/$f" >&2 || true; done
fi
exit "$status"
