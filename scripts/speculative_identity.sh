#!/usr/bin/env bash
# Greedy identity of speculative decoding (issue #16): greedy output with drafts (MTP,
# prompt lookup, auto, adaptive; MTP with forced K = 1 … 8) equals plain greedy output token
# for token, over several prompts, in `gemlet run` and through `gemlet serve`. CI runs it on
# the tiny oracle model and its assistant (gemlet_speculative_identity, tests/CMakeLists.txt);
# on a full-size model it is a benchmark-style run (minutes).
#   scripts/speculative_identity.sh GEMLET MODEL.gemlet DRAFTER.gemlet [N_ADAPTIVE] [N_FORCED]
# Three prompts (random ids, one that repeats itself, a long one; ids folded into the model's
# vocabulary) get N_ADAPTIVE tokens each (default 340: 1,020 per setting); forced K = 1 … 8
# take N_FORCED tokens each (default 128: 1,024 in all), the prompts in turn, compared with the
# plain run's first N_FORCED tokens.
# The server part (SERVER=0 skips it) starts `gemlet serve --draft M` for M = off, mtp,
# lookup, auto and mtp with --draft-fixed --draft-max 8, and sends the same three prompts as
# token ids to /v1/completions (temperature 0, ignore_eos, logprobs). Each answer must have
# N_ADAPTIVE tokens; the plain server's texts must be the plain run's, and every other
# server's tokens and log-probabilities the plain server's, bit for bit; /metrics must show
# drafted tokens for every mode but off.
# Prints one line per setting; exits 1 if any output differs. The server part needs node.
set -euo pipefail
gemlet=$1 model=$2 drafter=$3 n=${4:-340} nf=${5:-128}
threads=${THREADS:-2}

ids_of() {  # the "ids" array of `run --json`, as one comma-separated line
  tr -d ' \n' | grep -o '"ids":\[[^]]*\]' | sed 's/"ids":\[//; s/\]//'
}
run() {  # run PROMPT N FLAGS...: the generated ids
  local prompt=$1 count=$2
  shift 2
  "$gemlet" run -m "$model" --drafter "$drafter" --tokens "$prompt" -n "$count" --temp 0 --ignore-eos \
    --threads "$threads" --json -q "$@" | ids_of
}
# Token ids below the model's vocabulary (gemlet info), so that tiny test models work too.
vocab=$("$gemlet" info "$model" | grep -o 'vocab [0-9]*' | head -1 | grep -o '[0-9]*$')
id() { echo $(( $1 % (vocab - 16) + 16 )); }
long="2"
for i in $(seq 1 300); do long+=",$(id $(( (i * 7919) % 200000 + 1000 )))"; done
rep="2,105"
for i in $(seq 1 8); do rep+=",$(id 4000),$(id 4001),$(id 4002),$(id 4003),$(id 4004),$(id 4005)"; done
prompts=("2,$(id 818),$(id 5279),$(id 529),$(id 7001),$(id 236764)" "$rep" "$long")

declare -a plain
for p in 0 1 2; do plain[$p]=$(run "${prompts[$p]}" "$n" --draft off); done
fail=0
check() {  # check NAME PROMPT_INDEX COUNT IDS
  local want
  want=$(echo "${plain[$2]}" | cut -d, -f1-"$3")
  if [ "$4" == "$want" ]; then
    echo "same   $1 (prompt $2, $3 tokens)"
  else
    echo "DIFFER $1 (prompt $2, $3 tokens)"
    fail=1
  fi
}
for mode in mtp lookup auto; do
  for p in 0 1 2; do check "--draft $mode" $p "$n" "$(run "${prompts[$p]}" "$n" --draft $mode)"; done
done
for k in 1 2 3 4 5 6 7 8; do
  p=$(( k % 3 ))
  check "--draft mtp --draft-fixed --draft-max $k" $p "$nf" \
    "$(run "${prompts[$p]}" "$nf" --draft mtp --draft-fixed --draft-max $k)"
done

[ "${SERVER:-1}" == 0 ] && exit $fail
# The plain run's texts, to compare the server's with.
declare -a plain_text
text_of() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.stringify(JSON.parse(s).text)))'; }
for p in 0 1 2; do
  plain_text[$p]=$("$gemlet" run -m "$model" --tokens "${prompts[$p]}" -n "$n" --temp 0 --ignore-eos \
    --threads "$threads" --json -q --draft off | text_of)
done
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
serve() {  # serve FLAGS...: starts the server, sets $server and $port
  "$gemlet" serve -m "$model" --drafter "$drafter" --host 127.0.0.1 --port 0 --threads "$threads" \
    --slots 1 --no-log "$@" >"$work/log" 2>&1 &
  server=$!
  port=""
  for _ in $(seq 1 300); do
    port=$(grep -o 'on http://127.0.0.1:[0-9]*' "$work/log" | grep -o '[0-9]*$' || true)
    [ -n "$port" ] && get /health >/dev/null 2>&1 && return 0
    kill -0 "$server" 2>/dev/null || { cat "$work/log"; return 1; }
    sleep 0.2
  done
  return 1
}
get() {  # get PATH: the body of a GET (node's fetch; no curl needed)
  node -e 'fetch(process.argv[1]).then(async r=>{if(!r.ok)process.exit(1);process.stdout.write(await r.text())},()=>process.exit(1))' \
    "http://127.0.0.1:$port$1"
}
complete() {  # complete PROMPT: {"text", "tokens", "lp"} of the greedy answer, as one JSON line
  node -e 'const [url,prompt,n]=process.argv.slice(1);
    fetch(url,{method:"POST",headers:{"Content-Type":"application/json"},
      body:`{"prompt":[${prompt}],"max_tokens":${n},"temperature":0,"ignore_eos":true,"logprobs":0}`})
    .then(r=>r.json()).then(j=>{const c=j.choices[0];if(c.logprobs.tokens.length!=Number(n))process.exit(1);
      process.stdout.write(JSON.stringify({text:c.text,tokens:c.logprobs.tokens,lp:c.logprobs.token_logprobs}))},
      ()=>process.exit(1))' "http://127.0.0.1:$port/v1/completions" "$1" "$n"
}
drafted() { get /metrics | grep -E '^gemlet_draft_tokens_total ' | grep -o '[0-9]*$' || echo 0; }
declare -a plain_server
serve --draft off
for p in 0 1 2; do plain_server[$p]=$(complete "${prompts[$p]}"); done
kill "$server"; wait "$server" 2>/dev/null || true; server=""
for p in 0 1 2; do
  got=$(echo "${plain_server[$p]}" | text_of)
  if [ "$got" == "${plain_text[$p]}" ]; then echo "same   serve --draft off (prompt $p, $n tokens) = run's text"
  else echo "DIFFER serve --draft off (prompt $p, $n tokens) vs run's text"; fail=1; fi
done
for flags in "--draft mtp" "--draft lookup" "--draft auto" "--draft mtp --draft-fixed --draft-max 8"; do
  # shellcheck disable=SC2086
  serve $flags
  for p in 0 1 2; do
    if [ "$(complete "${prompts[$p]}")" == "${plain_server[$p]}" ]; then
      echo "same   serve $flags (prompt $p, $n tokens, log-probabilities included)"
    else
      echo "DIFFER serve $flags (prompt $p, $n tokens)"
      fail=1
    fi
  done
  d=$(drafted)
  echo "       serve $flags: $d tokens drafted"
  [ "$d" -gt 0 ] || { echo "DIFFER serve $flags drafted nothing"; fail=1; }
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
done
exit $fail
