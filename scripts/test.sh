#!/usr/bin/env bash
# The project's test command (README "Running the tests"; .ci/run calls it). Stages:
#   release  Release build (-j$JOBS) of everything, including the benchmarks, and ctest
#   asan     clang ASan + UBSan build (-DGEMLET_SANITIZE=ON -DGEMLET_FUZZ=ON, no benchmarks; -O0,
#            with the compute libraries at -O1 so the model-running tests stay quick) and ctest
#   aarch64  Arm64 cross build (cmake/toolchain-aarch64.cmake; the libraries from Debian's
#            :arm64 packages) of the test binaries and the gemlet binary, which answers a prompt
#            on the demo model under qemu; ctest under qemu-user -cpu max (+i8mm), and beside it
#            the CPU feature and kernel tests once each under qemu -cpu cortex-a72 (NEON) and
#            cortex-a76 (+dotprod); each run asserts its tier
#   fuzz     every fuzz/*_fuzz.cc libFuzzer target (built in the asan stage's folder), run from
#            its seed corpus fuzz/corpus/<target>/ (real files cut down, and the crash inputs
#            found before, which every run replays first); a target without a seed corpus
#            fails the stage. The stage's fuzzing time is $FUZZ_BUDGET seconds of wall time
#            (JOBS targets at a time), shared equally by the targets, at least 15 s each;
#            FUZZ_SECONDS sets each target's time directly (e.g. FUZZ_SECONDS=600 for a
#            real fuzzing session)
# The native stages' ctest runs include the layering check (gemlet_layering:
# scripts/check_layering.sh on the tree; gemlet_layering_selftest: tests/layering_test.sh).
# Usage: scripts/test.sh [STAGE...]      (no stage: all four, in that order)
# Every stage runs even if an earlier one failed; the summary at the end lists each stage's
# result and time, and the exit code is 1 if anything failed.
# Environment: JOBS (default 2), FUZZ_BUDGET (default 180), FUZZ_SECONDS (default: from the budget).
# Build folders: build/ (shared with scripts/demo.sh), build-asan/ (also the fuzzers), build-aarch64/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-2}
FUZZ_BUDGET=${FUZZ_BUDGET:-180}
FUZZ_SECONDS=${FUZZ_SECONDS:-}
ALL_STAGES=(release asan aarch64 fuzz)
if [ $# -gt 0 ]; then STAGES=("$@"); else STAGES=("${ALL_STAGES[@]}"); fi
for s in "${STAGES[@]}"; do
  case " ${ALL_STAGES[*]} " in *" $s "*) ;; *) echo "test.sh: unknown stage '$s' (expected: ${ALL_STAGES[*]})" >&2; exit 2 ;; esac
done

SUMMARY=()
LOG_DIR=$(mktemp -d)
trap 'rm -rf "$LOG_DIR"' EXIT
# Stages run in subshells (so that `set -e` holds inside them); they report test counts and
# notes through these files.
COUNTS="$LOG_DIR/counts"
NOTES="$LOG_DIR/notes"
: >"$COUNTS"
: >"$NOTES"

banner() { printf '\n==== %s ====\n' "$*"; }
# generator DIR: the -G flag for a new build folder: Ninja when installed (it keeps both cores
# busier than make across targets); an existing folder keeps the generator it was made with.
generator() {
  if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null; then echo "-GNinja"; fi
}
count() { echo "$1 $2" >>"$COUNTS"; }  # count PASSED FAILED
note() { echo "$*" >>"$NOTES"; }

# ctest_run DIR [ctest args...]: runs ctest, adds its counts to the totals.
ctest_run() {
  local dir=$1
  shift
  local log="$LOG_DIR/ctest.log" rc=0
  ctest --test-dir "$dir" --output-on-failure -j"$JOBS" "$@" 2>&1 | tee "$log" || rc=$?
  local line total failed
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)
  if [ -n "$line" ]; then
    failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
    count $((total - failed)) "$failed"
  elif grep -q 'No tests were found' "$log"; then
    echo "ctest: no tests were found in $dir" >&2
    rc=1
  fi
  return "$rc"
}

# count_binary_run NAME CMD...: runs one test binary (not through ctest) and counts it.
count_binary_run() {
  local name=$1
  shift
  if "$@"; then
    count 1 0
  else
    count 0 1
    echo "FAILED: $name" >&2
    return 1
  fi
}

stage_release() {
  # GEMLET_SERVER_E2E=ON: a missing node/npm/chromium fails the configure instead of leaving
  # the server's end-to-end test out. GEMLET_LONG_128K=ON: the 131,072-token long-context
  # oracle runs here too (about 70 s on 2 cores).
  cmake -S . -B build $(generator build) -DCMAKE_BUILD_TYPE=Release -DGEMLET_SERVER_E2E=ON -DGEMLET_LONG_128K=ON
  cmake --build build -j"$JOBS"
  ctest_run build
}

# build-asan: one clang build serves both the asan and the fuzz stage: ASan + UBSan everywhere,
# libFuzzer's coverage instrumentation (fuzzer-no-link) in the libraries, -O0 -g1 so that it
# compiles fast and reports name file:line; the libraries that run the model (base, format,
# kernels, ops, model, runtime) at -O1 (GEMLET_HOT_OPT), which halves the tests' time.
configure_asan() {
  CC=clang CXX=clang++ cmake -S . -B build-asan $(generator build-asan) -DCMAKE_BUILD_TYPE=Release -DGEMLET_SANITIZE=ON \
    -DGEMLET_FUZZ=ON -DGEMLET_BENCH=OFF -DGEMLET_SERVER_E2E=ON -DCMAKE_CXX_FLAGS_RELEASE="-O0 -g1" \
    -DGEMLET_HOT_OPT=-O1 \
    -DCMAKE_C_FLAGS_RELEASE="-O0 -g1"
}

stage_asan() {
  configure_asan
  cmake --build build-asan -j"$JOBS"
  # Every test that the release stage runs runs here but the long-context oracle (label
  # `long`: a 32,768-token prompt, minutes at -O1 with sanitizers; its code paths are the
  # short oracle's, which runs here).
  note "asan: gemlet_oracle_long (label long) not run: too slow under the sanitizers; it runs in the release stage"
  note "asan: the speculative greedy test takes verify widths 1, 3, 8 and its chi-square test is left out (GEMLET_REDUCED_TESTS, tests/CMakeLists.txt); the release stage runs them whole"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_init_order=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest_run build-asan -LE '^long'
}

# The registered tests that the aarch64 stage neither builds nor runs (see stage_aarch64).
AARCH64_LEFT_OUT='^(gemlet_cli(_[0-9]+of[0-9]+)?|gemlet_server|gemlet_convert|gemlet_hub)$'

stage_aarch64() {
  # The libraries that run the model (GEMLET_HOT_OPT: base, format, kernels, ops, model, text,
  # grammar, runtime) keep the shipped -O3; the rest (the tools' plumbing: server, CLI,
  # converter, hub) is compiled at -O1 here, as the test code already is (GEMLET_TEST_OPT):
  # it is most of this stage's compile time, and nothing in it is architecture-specific.
  cmake -S . -B build-aarch64 $(generator build-aarch64) -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-aarch64.cmake" -DGEMLET_BENCH=OFF \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DGEMLET_HOT_OPT=-O3
  # Only the test binaries. gemlet_cli is not run here: it starts the `gemlet`
  # binary as a child process, which needs binfmt_misc registration of qemu for aarch64 (not
  # available in CI containers). It runs in the release and ASan stages; the code it covers is
  # architecture-independent.
  local tests targets=()
  tests=$(ctest --test-dir build-aarch64 -N | sed -nE 's/^ *Test +#[0-9]+: +([A-Za-z0-9_]+).*/\1/p')
  # Every registered test whose gtest binary target exists (tests that run scripts or the
  # gemlet binary, like gemlet_server_e2e, are not registered in cross builds).
  local all_targets
  # (make prints "... NAME", Ninja "NAME: phony" or "NAME: CUSTOM_COMMAND")
  all_targets=$(cmake --build build-aarch64 --target help |
    sed -nE 's/^\.\.\. ([A-Za-z0-9_]+).*/\1/p; s/^([A-Za-z0-9_]+): [A-Z_a-z]+$/\1/p')
  for t in $tests; do
    # gemlet_cli: see above. The others in AARCH64_LEFT_OUT have no architecture-specific code
    # (HTTP and JSON plumbing, the converter's file bookkeeping, the model store), and their
    # model and numeric paths run here in gemlet_integration (the oracle and convert tests).
    # Left out to keep CI short; they run in the release and asan stages.
    [[ $t =~ $AARCH64_LEFT_OUT ]] && continue
    # gemlet_oracle_long: the long-context oracle, too slow under qemu (gemlet_integration's
    # binary, which is built anyway); it runs in the release stage.
    [ "$t" = gemlet_oracle_long ] && continue
    # The shards of gemlet_integration (gemlet_integration_KofN) share one binary.
    local target=${t}_tests
    [[ $t =~ ^gemlet_integration_[0-9]+of[0-9]+$ ]] && target=gemlet_integration_tests
    if grep -qx "$target" <<<"$all_targets"; then
      case " ${targets[*]} " in *" $target "*) ;; *) targets+=("$target") ;; esac
    else
      echo "aarch64: test $t has no $target target" >&2
      return 1
    fi
  done
  if [ ${#targets[@]} -eq 0 ]; then
    echo "aarch64: no tests registered" >&2
    return 1
  fi
  note "aarch64: gemlet_cli and the integration test files that start the gemlet binary not run (that needs binfmt_misc for qemu); gemlet_server, gemlet_convert and gemlet_hub not built or run (no architecture-specific code; they run in the release and asan stages); gemlet_oracle_long not run (too slow under qemu; it runs in the release stage); under qemu (and ASan) the speculative greedy test takes verify widths 1, 3, 8 and its chi-square test is left out, and under qemu the two real-vocabulary tests (GrammarRealVocab, TokenizerSources) too (tests/CMakeLists.txt)"
  # And the shipped binary itself (it links the server and line editing, from the :arm64
  # packages), which then answers one prompt on the demo model under qemu (in-process: no child).
  cmake --build build-aarch64 -j"$JOBS" --target "${targets[@]}" gemlet
  local rc=0
  # (timeout: a guest that hangs fails this step instead of using up CI's time)
  count_binary_run "gemlet run on the demo model (qemu -cpu max)" \
    timeout 300 qemu-aarch64 -L / -E XDG_CACHE_HOME="$LOG_DIR/cache" \
    -cpu max build-aarch64/tools/cli/gemlet run -p "Hello" -n 8 --threads 2 || rc=1
  # Each CPU model with the tier it must select (GEMLET_EXPECT_CPU_TIER, set in the guest by
  # qemu -E): the CPU feature test and the kernel dispatch test assert it, so that a detection
  # fault cannot make the runs test the same tier. ctest below runs under -cpu max (tier i8mm;
  # cmake/toolchain-aarch64.cmake sets the emulator); the two older CPU models run in the
  # background from the start, beside ctest, so that they fill the cores when ctest's last
  # tests leave one idle (all of it is CPU-bound: the total time is what it is; what this
  # saves is the idle tail).
  local kt=build-aarch64/src/kernels/gemlet_kernels_tests bt=build-aarch64/src/base/gemlet_base_tests
  local cpu tier pids=() cpus=()
  if [ -x "$kt" ] && [ -x "$bt" ]; then
    for cpu in cortex-a72:neon cortex-a76:dotprod; do
      tier=${cpu#*:}
      cpu=${cpu%%:*}
      (
        q=(timeout 900 qemu-aarch64 -L / -cpu "$cpu"
          -E GEMLET_EXPECT_CPU_TIER="$tier")
        r=0
        count_binary_run "gemlet_base_tests CpuFeatures.* (-cpu $cpu)" \
          "${q[@]}" "$bt" --gtest_filter='CpuFeatures.*' --gtest_brief=1 || r=1
        count_binary_run "gemlet_kernels_tests (-cpu $cpu)" "${q[@]}" "$kt" --gtest_brief=1 || r=1
        exit "$r"
      ) >"$LOG_DIR/qemu-$cpu.log" 2>&1 &
      pids+=($!)
      cpus+=("$cpu:$tier")
    done
  else
    echo "aarch64: $kt or $bt was not built" >&2
    rc=1
  fi
  ctest_run build-aarch64 -E "$AARCH64_LEFT_OUT" -LE '^long' || rc=1
  local j
  for ((j = 0; j < ${#pids[@]}; j++)); do
    banner "CPU feature and kernel tests under qemu-aarch64 -cpu ${cpus[$j]%%:*} (expecting tier ${cpus[$j]#*:})"
    wait "${pids[$j]}" || rc=1
    cat "$LOG_DIR/qemu-${cpus[$j]%%:*}.log"
  done
  return "$rc"
}

stage_fuzz() {
  local targets=() f
  for f in fuzz/*_fuzz.cc; do
    [ -e "$f" ] && targets+=("$(basename "$f" .cc)")
  done
  if [ ${#targets[@]} -eq 0 ]; then
    echo "fuzz: no fuzz/*_fuzz.cc targets yet: nothing to build or run"
    note "fuzz: no targets in fuzz/ yet"
    return 0
  fi
  for f in "${targets[@]}"; do
    if [ -z "$(ls -A "fuzz/corpus/$f" 2>/dev/null)" ]; then
      echo "fuzz: $f has no seed corpus in fuzz/corpus/$f (fuzz/corpus/make_seeds.py)" >&2
      return 1
    fi
  done
  # The asan stage's build (already built when that stage ran first).
  configure_asan
  cmake --build build-asan -j"$JOBS" --target "${targets[@]}"
  mkdir -p build-asan/artifacts
  # Each target runs $FUZZ_SECONDS; $JOBS of them at a time, each on its own core.
  local pids=() names=() rc=0 i rounds
  if [ -z "$FUZZ_SECONDS" ]; then
    rounds=$(((${#targets[@]} + JOBS - 1) / JOBS))
    FUZZ_SECONDS=$((FUZZ_BUDGET / rounds))
    [ "$FUZZ_SECONDS" -ge 15 ] || FUZZ_SECONDS=15
  fi
  echo "fuzz: ${#targets[@]} targets, $FUZZ_SECONDS s each, $JOBS at a time"
  note "fuzz: each target ran $FUZZ_SECONDS s (FUZZ_BUDGET=$FUZZ_BUDGET s for ${#targets[@]} targets; FUZZ_SECONDS=N for longer runs)"
  run_one() {
    local t=$1 corpus=build-asan/corpus/$1
    mkdir -p "$corpus"
    # New inputs go to the first folder (build-asan/corpus/<target>, kept between local runs).
    "build-asan/fuzz/$t" -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="build-asan/artifacts/$t-" "$corpus" "fuzz/corpus/$t" \
      >"$LOG_DIR/$t.log" 2>&1
  }
  for ((i = 0; i < ${#targets[@]}; i++)); do
    run_one "${targets[$i]}" &
    pids+=($!)
    names+=("${targets[$i]}")
    if [ ${#pids[@]} -ge "$JOBS" ] || [ $((i + 1)) -eq ${#targets[@]} ]; then
      local j
      for ((j = 0; j < ${#pids[@]}; j++)); do
        if wait "${pids[$j]}"; then
          count 1 0
          printf 'fuzz %-28s ok   (%s)\n' "${names[$j]}" \
            "$(grep -E '^stat::number_of_executed_units' "$LOG_DIR/${names[$j]}.log" | awk '{print $2 " runs"}')"
        else
          count 0 1
          rc=1
          printf 'fuzz %-28s FAILED; its log:\n' "${names[$j]}"
          # Named in the summary too: the log above can be long, and CI keeps only its end.
          note "fuzz: ${names[$j]} FAILED (its input: build-asan/artifacts/${names[$j]}-*)"
          tail -60 "$LOG_DIR/${names[$j]}.log"
        fi
      done
      pids=()
      names=()
    fi
  done
  return "$rc"
}

START=$(date +%s)
FAILED_STAGES=0
for s in "${STAGES[@]}"; do
  banner "stage $s"
  t0=$(date +%s)
  failed_before=$(awk '{f += $2} END {print f + 0}' "$COUNTS")
  set +e
  (
    set -e
    "stage_$s"
  )
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    result=FAILED
    FAILED_STAGES=$((FAILED_STAGES + 1))
    if [ "$(awk '{f += $2} END {print f + 0}' "$COUNTS")" -eq "$failed_before" ]; then
      count 0 1  # it failed before any test could (configure or build)
      note "$s: failed outside the tests (configure or build; see its log above)"
    fi
  fi
  SUMMARY+=("$(printf '  %-8s %-7s %5d s' "$s" "$result" $(($(date +%s) - t0)))")
done

PASSED=$(awk '{p += $1} END {print p + 0}' "$COUNTS")
FAILED=$(awk '{f += $2} END {print f + 0}' "$COUNTS")
banner "summary ($(($(date +%s) - START)) s, JOBS=$JOBS)"
printf '%s\n' "${SUMMARY[@]}"
if [ -s "$NOTES" ]; then sed 's/^/  note: /' "$NOTES"; fi
echo "(counted: each ctest test binary, each kernel run per CPU model, each fuzz target)"
if [ "$FAILED_STAGES" -ne 0 ]; then
  echo "FAILED: $FAILED_STAGES stage(s)"
else
  echo "all stages passed"
fi
echo "tests: $PASSED passed, $FAILED failed"
[ "$FAILED_STAGES" -eq 0 ]
