#!/usr/bin/env bash
# check-size.sh - no function over 80 lines and no source file over 800 lines
# in the library, the command and the benchmarks (ARCHITECTURE.md, "Sizes").
#
# A file may be longer when a comment in its first 20 lines says why, on a
# line holding "long-file:"; a function may be longer when the comment just
# above it holds "long-function:".  A function runs from the line of its
# name to its closing brace, as a parser finds them (universal-ctags'
# end: field), whatever the brace style.
#
#   check-size.sh [ROOT]     check the tree at ROOT (default: this checkout)
#   check-size.sh --self-test
#                            plant long functions and a long file in a copy
#                            and fail unless every one is caught
set -euo pipefail

# A parser, not a pattern: without universal-ctags the checks would pass
# what they cannot see.
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "${0##*/}: needs universal-ctags (bash scripts/deps.sh)" >&2
  exit 1
fi

MAX_FN=80
MAX_FILE=800

check_file() { # $1 root, $2 file; prints violations
  ctags -x --_xformat='%n %{end} %N' --langmap=C:.c.h --kinds-C=f "$1/$2" 2>/dev/null |
  awk -v F="$2" -v MF="$MAX_FN" -v MX="$MAX_FILE" '
    FILENAME != "-" && FNR <= 20 && /long-file:/ { longok = 1 }
    FILENAME != "-" && /long-function:/ { fnok[++k] = FNR }
    FILENAME != "-" { lines = FNR; next }
    { n = $2 - $1 + 1; excused = 0
      for (i = 1; i <= k; i++) if ($1 - fnok[i] >= 0 && $1 - fnok[i] <= 12) excused = 1
      if (n > MF && !excused) printf "%s:%d: %d lines: %s()\n", F, $1, n, $3 }
    END { if (lines > MX && !longok) printf "%s: %d lines (over %d)\n", F, lines, MX }
  ' "$1/$2" -
}

check_tree() { # $1 root; prints violations, returns their count (max 255)
  local out
  out=$(cd "$1" && for f in ring/*.[ch] format/*.[ch] recover/*.[ch] flush/*.[ch] \
          capture/*.[ch] tools/*.[ch] tools/*/*.[ch] bench/*.[ch] include/katra/*.h; do
          [[ -f $f ]] && check_file . "$f"; done)
  [[ -z $out ]] && return 0
  echo "$out"
  local n
  n=$(wc -l <<<"$out")
  return $((n > 255 ? 255 : n))
}

self_test() {
  local here tmp n
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/ring" "$tmp/bench"
  { echo 'static int long_one(void)'; echo '{'
    for i in $(seq 90); do echo "	x += $i;"; done
    echo '}'; } >"$tmp/ring/a.c"
  { for i in $(seq 850); do echo "/* $i */"; done; } >"$tmp/ring/b.c"
  { echo '/* long-file: a test of the excuse */'
    for i in $(seq 850); do echo "/* $i */"; done; } >"$tmp/ring/c.c"
  # What brace matching missed: the brace on the signature's line, and a
  # long function in bench/.
  { echo 'static int brace_on_signature(int x) {'
    for i in $(seq 90); do echo "	x += $i;"; done
    echo '	return x;'; echo '}'; } >"$tmp/ring/d.c"
  { echo 'int main(void)'; echo '{'; echo '	int x = 0;'
    for i in $(seq 85); do echo "	x += $i;"; done
    echo '	return x;'; echo '}'; } >"$tmp/bench/e.c"
  # An excused long function passes.
  { echo '/* long-function: a test of the excuse */'; echo 'static int excused(int x) {'
    for i in $(seq 90); do echo "	x += $i;"; done
    echo '	return x;'; echo '}'; } >"$tmp/ring/f.c"
  n=0
  check_tree "$tmp" >"$tmp/out" || n=$?
  if [[ $n -ne 4 ]]; then
    echo "self-test: 4 planted violations, $n caught:"; cat "$tmp/out"; return 1
  fi
  echo "check-size self-test: 4 of 4 planted violations caught, the excused file and function passed"
}

if [[ ${1:-} == --self-test ]]; then
  self_test
  exit
fi
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
n=0
check_tree "$root" || n=$?
if (( n )); then
  echo "check-size: $n function(s) or file(s) over the limits (see ARCHITECTURE.md, \"Sizes\")"
  exit 1
fi
echo "check-size: no function over $MAX_FN lines, no file over $MAX_FILE"
