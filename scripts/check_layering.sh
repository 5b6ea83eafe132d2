#!/usr/bin/env bash
# The layering check (issue #13; ctest runs it as gemlet_layering, tests/layering_test.sh
# shows that it fails). Scans every .h/.cc/.inc under ROOT/src and ROOT/tools, except files
# marked generated in their first lines ("@generated" or "DO NOT EDIT"), and prints one line
# per violation, `file:line: what`:
#   a. an #include "X/..." of a layer the file's layer does not build on (upward or sideways),
#      of a folder the layer map below does not know, or of a test utility from non-test code;
#   b. an include that FORBIDDEN_INCLUDES below bans though the layers allow it (the server
#      reaches the model only through runtime);
#   c. a Gemma-specific name in the model-agnostic layers (MODEL_AGNOSTIC): "gemma" in any
#      case or a Gemma 4 control string, in comments and test files too;
#   d. a Gemma 4 control string in the code of CONTROL_STRING_FREE (comments and the test
#      files are not judged; CONTROL_STRING_EXEMPT lists the files that may spell them).
# Test files (*_test.cc, *_bench.cc, *_fuzz.cc, *_test_util.h, anything in a testing/ folder)
# are judged by their folder like the rest, but may also include test utilities
# (*_test_util.h, testing/..., tests/..., fuzz/...) from anywhere. tests/ and fuzz/ themselves
# may include anything and are not scanned.
# Usage: scripts/check_layering.sh [ROOT]     (ROOT: the repository; default: this script's)
# Exit status: 0 clean (one summary line), 1 violations, 2 usage error. Needs bash, find,
# sort and a POSIX awk (mawk is enough).
set -euo pipefail

# ---- The layer map ---------------------------------------------------------------------------
# One row per layer (one CMake library): its folder and the layers it builds on directly. A
# layer may include its own folder and, transitively, every layer it builds on. Headers are
# included by their path from src/ (src/ops/norm.h as "ops/norm.h") or, outside src/, from the
# repository root ("tools/server/serve.h"). A folder in src/ or tools/ with no row here is an
# error, so a new layer cannot go unchecked: add its row.
#
#   folder          builds on
LAYERS='
src/base        -
src/format      src/base
src/kernels     src/base
src/ops         src/kernels
src/model       src/ops src/format
src/text        src/format src/grammar
src/grammar     src/base
src/runtime     src/model src/text src/grammar
tools/convert   src/model src/text
tools/server    src/runtime
tools/hub       tools/convert
tools/cli       tools/convert tools/server tools/hub
'
# src/text is text handling (tokenizer, UTF-8, chat format and template, output parser);
# src/runtime the inference state above it (engine, sessions, KV caches, sampler, batching).

# Includes banned although the layer map allows them:  folder  include-prefix  why
FORBIDDEN_INCLUDES='
tools/server    model/          the server reaches the model only through runtime/
'

# Layers that know no model family: no "gemma" (any case) and no control string, comments
# included. ("GemmAcc"-style GEMM names are not "gemma": a capital A after "Gemm" is allowed.)
MODEL_AGNOSTIC='src/kernels src/ops src/grammar'

# Folders whose non-test code spells no Gemma 4 control string (the chat format owns them),
# and the files or folders (ending in /) there that are exempt: the web page, test helpers.
CONTROL_STRING_FREE='tools/server'
CONTROL_STRING_EXEMPT='tools/server/web_page.cc tools/server/testing/'

# The Gemma 4 control strings (<|"|> is also matched as written in a C++ literal, <|\"|>).
CONTROL_STRINGS='<|turn> <turn|> <|channel> <channel|> <|tool_call> <tool_call|> <|tool_response> <tool_response|> <|"|> <|think|> <bos> <eos>'
# ----------------------------------------------------------------------------------------------

if [ $# -gt 1 ]; then
  echo "usage: $0 [ROOT]" >&2
  exit 2
fi
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
if [ ! -d "$ROOT/src" ]; then
  echo "check_layering: $ROOT has no src/ folder" >&2
  exit 2
fi
cd "$ROOT"

# The folders of src/ and tools/ that exist (to tell "no row in the map" from third-party).
DIRS=$( (find src tools -mindepth 1 -maxdepth 1 -type d 2>/dev/null || true) | sort | tr '\n' ' ')

FILES=()
while IFS= read -r f; do FILES+=("$f"); done \
  < <(find src tools -type f \( -name '*.h' -o -name '*.cc' -o -name '*.inc' \) 2>/dev/null | LC_ALL=C sort)
if [ ${#FILES[@]} -eq 0 ]; then
  echo "check_layering: no source files under $ROOT/src or $ROOT/tools" >&2
  exit 2
fi

set +e
LC_ALL=C awk -v layers="$LAYERS" -v forbidden="$FORBIDDEN_INCLUDES" -v agnostic="$MODEL_AGNOSTIC" \
  -v cfree="$CONTROL_STRING_FREE" -v cexempt="$CONTROL_STRING_EXEMPT" -v controls="$CONTROL_STRINGS" \
  -v dirs="$DIRS" -v nfiles="${#FILES[@]}" '
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
# The include path of a folder: src/ops -> ops, tools/cli -> tools/cli.
function incpath(folder) { return substr(folder, 1, 4) == "src/" ? substr(folder, 5) : folder }
function under(path, folder) { return substr(path, 1, length(folder) + 1) == folder "/" }
# The layer (folder) of a file path, the longest row that contains it; "" if none.
function layer_of(path,    i, best) {
  best = ""
  for (i = 1; i <= nl; ++i)
    if (under(path, L[i]) && length(L[i]) > length(best)) best = L[i]
  return best
}
# The layer an include path names; "" if none.
function layer_of_include(inc,    i, best) {
  best = ""
  for (i = 1; i <= nl; ++i)
    if (substr(inc, 1, length(incpath(L[i])) + 1) == incpath(L[i]) "/" && length(L[i]) > length(best)) best = L[i]
  return best
}
function closure(a, b,    k, n, d) {  # may layer a use layer b?
  if (a == b) return 1
  if ((a, b) in memo) return memo[a, b]
  memo[a, b] = 0
  n = split(deps[a], d, " ")
  for (k = 1; k <= n; ++k) if (closure(d[k], b)) { memo[a, b] = 1; break }
  return memo[a, b]
}
function is_test_file(path) {
  return path ~ /_(test|bench|fuzz)\.cc$/ || path ~ /_test_util\.h$/ || path ~ /(^|\/)testing\//
}
function is_test_utility(inc) {
  return inc ~ /_test_util\.h$/ || inc ~ /(^|\/)testing\// || inc ~ /^(tests|fuzz)\//
}
# The violations of a file are held until its end: a generated file (a marker in its first five
# lines) is then dropped, violations and all.
function report(msg) { pending = pending FILENAME ":" FNR ": " msg "\n"; ++npending }
function flush() {
  if (file != "" && !generated) { printf "%s", pending; violations += npending; ++scanned }
  pending = ""; npending = 0
}
function words(list, arr,    n) { n = split(list, arr, " "); return n }
# Splits a line into CODE (comments removed, literal contents blanked: for #include) and
# NOCOMMENT (comments removed, literals kept: for the control strings). State carried across
# lines: in_block (inside /* */), in_raw (inside a raw string literal: its closing ")delim"").
# A quote right after a digit is a C++14 digit separator, not a character literal.
function scan(line,    n, i, c, c2, q, m, d) {
  CODE = ""; NOCOMMENT = ""; n = length(line); i = 1
  while (i <= n) {
    if (in_block) {
      m = index(substr(line, i), "*/")
      if (!m) return
      i += m + 1; in_block = 0; continue
    }
    if (in_raw != "") {
      m = index(substr(line, i), in_raw)
      if (!m) { NOCOMMENT = NOCOMMENT substr(line, i); return }
      NOCOMMENT = NOCOMMENT substr(line, i, m + length(in_raw) - 1); CODE = CODE "\""
      i += m + length(in_raw) - 1; in_raw = ""; continue
    }
    c = substr(line, i, 1); c2 = substr(line, i, 2)
    if (c2 == "//") return
    if (c2 == "/*") { in_block = 1; i += 2; continue }
    if (c == "R" && substr(line, i + 1, 1) == "\"" && substr(line, i - 1, 1) !~ /[A-Za-z0-9_]/) {
      d = substr(line, i + 2); m = index(d, "(")
      if (m) {
        in_raw = ")" substr(d, 1, m - 1) "\""
        NOCOMMENT = NOCOMMENT substr(line, i, 2 + m); CODE = CODE "R\""; i += 2 + m; continue
      }
    }
    if (c == "\"" || (c == "\047" && substr(line, i - 1, 1) !~ /[0-9]/)) {
      q = c; CODE = CODE q; NOCOMMENT = NOCOMMENT q; ++i
      while (i <= n && substr(line, i, 1) != q) {
        m = (substr(line, i, 1) == "\\") ? 2 : 1
        NOCOMMENT = NOCOMMENT substr(line, i, m); i += m
      }
      CODE = CODE q; NOCOMMENT = NOCOMMENT q; ++i; continue
    }
    CODE = CODE c; NOCOMMENT = NOCOMMENT c; ++i
  }
}
BEGIN {
  nl = 0
  nrows = split(layers, rows, "\n")
  for (r = 1; r <= nrows; ++r) {
    row = trim(rows[r]); if (row == "" || row ~ /^#/) continue
    nf = split(row, f, /[ \t]+/)
    L[++nl] = f[1]; deps[f[1]] = ""
    for (k = 2; k <= nf; ++k) if (f[k] != "-") deps[f[1]] = deps[f[1]] " " f[k]
  }
  for (i = 1; i <= nl; ++i) {  # every dependency must be a row
    n = split(deps[L[i]], d, " ")
    for (k = 1; k <= n; ++k) if (!(d[k] in deps)) { print "check_layering: layer map: " L[i] " builds on " d[k] ", which has no row" > "/dev/stderr"; fatal = 1; exit 2 }
  }
  nforb = 0
  nrows = split(forbidden, rows, "\n")
  for (r = 1; r <= nrows; ++r) {
    row = trim(rows[r]); if (row == "" || row ~ /^#/) continue
    split(row, f, /[ \t]+/)
    FF[++nforb] = f[1]; FP[nforb] = f[2]
    why = row; sub(/^[^ \t]+[ \t]+[^ \t]+[ \t]+/, "", why); FW[nforb] = why
  }
  nagn = words(agnostic, AG); ncfree = words(cfree, CF); ncex = words(cexempt, CX)
  nctl = words(controls, CTL)
  CTL[++nctl] = "<|\\\"|>"  # <|"|> as written inside a C++ string literal
  ndirs = words(dirs, DIR)
  for (k = 1; k <= ndirs; ++k) known_dir[DIR[k]] = 1
  violations = 0; scanned = 0; file = ""; pending = ""; npending = 0
}
FNR == 1 {
  flush(); file = FILENAME; generated = 0; in_block = 0; in_raw = ""
  lay = layer_of(FILENAME); test = is_test_file(FILENAME)
  agn = 0; for (k = 1; k <= nagn; ++k) if (under(FILENAME, AG[k])) agn = 1
  cfr = 0
  if (!test) for (k = 1; k <= ncfree; ++k) if (under(FILENAME, CF[k])) cfr = 1
  for (k = 1; k <= ncex; ++k)
    if (FILENAME == CX[k] || (CX[k] ~ /\/$/ && substr(FILENAME, 1, length(CX[k])) == CX[k])) cfr = 0
  if (lay == "") report("in no layer: add its folder to the layer map (scripts/check_layering.sh)")
}
FNR <= 5 && /@generated|DO NOT EDIT/ { generated = 1 }
generated { next }
{
  line = $0
  scan(line)
  # a, b: includes.
  if (CODE ~ /^[ \t]*#[ \t]*include[ \t]*"/ && match(line, /"[^"]*"/)) {
    inc = substr(line, RSTART + 1, RLENGTH - 2)
    if (is_test_utility(inc)) {
      if (!test) report("includes \"" inc "\", a test utility, from non-test code")
    } else if (inc ~ /\//) {
      target = layer_of_include(inc)
      if (target == "") {
        split(inc, comp, "/")
        folder = (comp[1] == "tools") ? "tools/" comp[2] : "src/" comp[1]
        if (folder in known_dir)
          report("includes \"" inc "\": " folder " has no row in the layer map (scripts/check_layering.sh)")
      } else if (lay != "" && !closure(lay, target)) {
        kind = closure(target, lay) ? "upward" : "sideways"
        report("includes \"" inc "\" (" kind "): " lay " does not build on " target " (it builds on" (deps[lay] == "" ? " nothing" : deps[lay]) ")")
      }
      for (k = 1; k <= nforb; ++k)
        if (under(FILENAME, FF[k]) && substr(inc, 1, length(FP[k])) == FP[k])
          report("includes \"" inc "\": " FW[k])
    }
  }
  # c: model-agnostic layers, comments included.
  if (agn) {
    if (match(line, /[Gg][Ee][Mm][Mm]a|GEMMA/)) {
      s = substr(line, RSTART); match(s, /^[A-Za-z0-9_]*/)
      report("names Gemma (\"" substr(s, 1, RLENGTH) "\"): " lay " is model-agnostic")
    }
    for (k = 1; k <= nctl; ++k)
      if (index(line, CTL[k])) report("spells the Gemma 4 control string " CTL[k] ": " lay " is model-agnostic")
  }
  # d: control strings in code (comments are not code).
  if (cfr) {
    for (k = 1; k <= nctl; ++k)
      if (index(NOCOMMENT, CTL[k])) report("spells the Gemma 4 control string " CTL[k] ": the chat format owns them (runtime/), not the server")
  }
}
END {
  if (fatal) exit 2
  flush()
  if (violations) {
    print "check_layering: " violations " violation(s) in " scanned " files" > "/dev/stderr"
    exit 1
  }
  print "check_layering: " scanned " files, " nl " layers: no violations"
}
' "${FILES[@]}"
rc=$?
set -e
exit $rc
