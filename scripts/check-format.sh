#!/usr/bin/env bash
# check-format.sh - the files below pass clang-format with the tree's
# .clang-format (tabs of 8, Linux braces, 100 columns, includes in the
# order written).  The tree was formatted by hand before the config was
# written: most files keep one-line enums, short functions and trailing
# comments as their authors aligned them, which no clang-format setting
# reproduces everywhere, and reformatting them all at once would collide
# with every branch in flight.  So the config matches the tree, and the
# check holds the files that pass it; a file joins the list when it passes
# (clang-format -i FILE, then review).  ARCHITECTURE.md, "Sizes".
#
#   check-format.sh [ROOT]     check the listed files of ROOT (default: this checkout)
#   check-format.sh --self-test
#                              plant misformatted code in copies of listed
#                              files and fail unless every one is caught
set -euo pipefail

FILES='
  bench/lttng_tp.c
  bench/pagebench.c
  bench/ringbench_first.c
  bench/readbench.c
  bench/ringbench_flight.h
  capture/sha256.c
  format/fd_sink.h
  format/utf8.h
  format/version.c
  format/writer_open.c
  flush/perf_ring.c
  flush/perf_ring.h
  include/katra/mem.h
  ring/clock.c
  tools/pipeline/bsearch.h
  tools/cmd/cli.h
  tools/cmd/cmd.h
  tools/cmd/diff_page.c
  tools/pipeline/drops.h
  tools/pipeline/grow.h
  tools/pipeline/hist.c
  tools/pipeline/idmap.c
  tools/pipeline/idmap.h
  tools/cmd/opts.c
  tools/export/perfetto_pack.c
  tools/export/perfetto_pack.h
  tools/export/perfetto_slice.c
  tools/pipeline/progress.c
  tools/pipeline/progress.h
  tools/analysis/report_page.h
  tools/pipeline/text.h
'

check_tree() { # $1 root; prints the files that fail, returns how many (max 255)
  local f bad=0
  for f in $FILES; do
    if ! (cd "$1" && clang-format --dry-run -Werror "$f" >/dev/null 2>&1); then
      echo "$f: not as .clang-format has it (clang-format -i $f shows how)"
      bad=$((bad + 1))
    fi
  done
  return $((bad > 255 ? 255 : bad))
}

self_test() {
  local here tmp n f
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  cp "$here/.clang-format" "$tmp/"
  for f in $FILES; do mkdir -p "$tmp/$(dirname "$f")"; cp "$here/$f" "$tmp/$f"; done
  check_tree "$tmp" >/dev/null || { echo "self-test: the clean files fail"; return 1; }
  # A brace on the signature's line, and spaces where the tree has a tab.
  printf 'static int planted(void) {\n\treturn 0;\n}\n' >>"$tmp/ring/clock.c"
  printf 'static int planted(void)\n{\n    return 0;\n}\n' >>"$tmp/tools/pipeline/hist.c"
  n=0
  check_tree "$tmp" >"$tmp/out" || n=$?
  if [[ $n -ne 2 ]]; then
    echo "self-test: 2 planted violations, $n caught:"; cat "$tmp/out"; return 1
  fi
  echo "check-format self-test: 2 of 2 planted violations caught"
}

command -v clang-format >/dev/null ||
  { echo "check-format.sh: needs clang-format (bash scripts/deps.sh)" >&2; exit 1; }
if [[ ${1:-} == --self-test ]]; then
  self_test
  exit
fi
# The listed files of ROOT (default: this checkout).
if ! out=$(check_tree "${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"); then
  printf '%s\ncheck-format: %d listed file(s) not as .clang-format has them\n' "$out" "$(wc -l <<<"$out")"
  exit 1
fi
echo "check-format: the $(wc -w <<<"$FILES") listed files as .clang-format has them"
