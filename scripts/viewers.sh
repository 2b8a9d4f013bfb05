#!/usr/bin/env bash
# viewers.sh - build the viewers' own tools that tests/tracy_import.sh
# feeds katra's exports to: Tracy's tracy-import-fuchsia,
# tracy-import-chrome, tracy-csvexport and tracy-inspect, from the shared/
# folder that sits beside the clone (../shared/viewers/tracy: a subset of
# Tracy v0.14.0 and its Makefile, built offline against Debian's packages,
# which scripts/deps.sh installs) into build-tracy/.  make rebuilds only
# what is out of date: nothing once the tools are built (about a second,
# deps.sh's check included); from scratch 3 minutes of CPU (measured: 2 min
# 51 s user, 7 s sys; 9 min 44 s of wall time niced on a machine at load 6-10).
#   bash scripts/viewers.sh          # prints where the tools are
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

src=../shared/viewers/tracy
if [[ ! -f $src/Makefile ]]; then
  echo "viewers.sh: no $src/Makefile: the shared/ folder belongs beside the clone" >&2
  exit 1
fi
bash scripts/deps.sh

out=$PWD/build-tracy
if make -q -C "$src" O="$out" all >/dev/null 2>&1; then
  echo "viewers.sh: Tracy's tools up to date in build-tracy/"
  exit 0
fi
start=$SECONDS
log=$(mktemp "${TMPDIR:-/tmp}/katra-viewers.XXXXXX.log")
if ! make -C "$src" O="$out" -j2 all >"$log" 2>&1; then
  echo "viewers.sh: building Tracy's tools failed; make's output:" >&2
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
echo "viewers.sh: Tracy's tools built in build-tracy/ in $((SECONDS - start)) s"
