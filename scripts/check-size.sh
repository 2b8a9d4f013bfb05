#!/usr/bin/env bash
# check-size.sh - no function over 80 lines and no source file over 800 lines
# in the library and the command (ARCHITECTURE.md, "Sizes").
#
# A file may be longer when a comment in its first 20 lines says why, on a
# line holding "long-file:"; a function may be longer when the comment just
# above it holds "long-function:".  The code's brace style (a function's
# braces alone in column 0) is what lets awk find functions.
#
#   check-size.sh [ROOT]     check the tree at ROOT (default: this checkout)
#   check-size.sh --self-test
#                            plant a long function and a long file in a copy
#                            and fail unless both are caught
set -euo pipefail

MAX_FN=80
MAX_FILE=800

check_file() { # $1 root, $2 file; prints violations
  awk -v F="$2" -v MF="$MAX_FN" -v MX="$MAX_FILE" '
    FNR <= 20 && /long-file:/ { longok = 1 }
    /long-function:/ { fnok = FNR }
    /^[A-Za-z_].*\(/ { head = $0; headline = FNR }
    /^\{/ { start = FNR; excused = fnok && headline - fnok <= 12 }
    /^\}/ && start {
      n = FNR - start + 1
      if (n > MF && !excused) printf "%s:%d: %d lines: %s\n", F, headline, n, head
      start = 0
    }
    END { if (FNR > MX && !longok) printf "%s: %d lines (over %d)\n", F, FNR, MX }
  ' "$1/$2"
}

check_tree() { # $1 root; prints violations, returns their count (max 255)
  local out
  out=$(cd "$1" && for f in ring/*.[ch] format/*.[ch] recover/*.[ch] flush/*.[ch] \
          capture/*.[ch] tools/*.[ch] include/katra/*.h; do
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
  mkdir -p "$tmp/ring"
  { echo 'static int long_one(void)'; echo '{'
    for i in $(seq 90); do echo "	x += $i;"; done
    echo '}'; } >"$tmp/ring/a.c"
  { for i in $(seq 850); do echo "/* $i */"; done; } >"$tmp/ring/b.c"
  { echo '/* long-file: a test of the excuse */'
    for i in $(seq 850); do echo "/* $i */"; done; } >"$tmp/ring/c.c"
  n=0
  check_tree "$tmp" >"$tmp/out" || n=$?
  if [[ $n -ne 2 ]]; then
    echo "self-test: 2 planted violations, $n caught:"; cat "$tmp/out"; return 1
  fi
  echo "check-size self-test: 2 of 2 planted violations caught, the excused file passed"
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
