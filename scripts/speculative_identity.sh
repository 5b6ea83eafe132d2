#!/usr/bin/env bash
# Greedy identity of speculative decoding on a full-size model (issue #16; a benchmark-style
# run, not CI): greedy output with drafts (MTP, prompt lookup, auto, adaptive; MTP with forced
# K = 1 … 8) equals plain greedy output token for token, over several prompts.
#   scripts/speculative_identity.sh GEMLET MODEL.gemlet DRAFTER.gemlet [N_ADAPTIVE] [N_FORCED]
# Three prompts (random ids, one that repeats itself, a long one) get N_ADAPTIVE tokens each
# (default 340: 1,020 per setting); forced K = 1 … 8 take N_FORCED tokens each (default 128:
# 1,024 in all), the prompts in turn, compared with the plain run's first N_FORCED tokens.
# Prints one line per setting; exits 1 if any output differs.
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
long="2"
for i in $(seq 1 300); do long+=",$(( (i * 7919) % 200000 + 1000 ))"; done
rep="2,105"
for i in $(seq 1 8); do rep+=",4000,4001,4002,4003,4004,4005"; done
prompts=("2,818,5279,529,7001,236764" "$rep" "$long")

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
exit $fail
