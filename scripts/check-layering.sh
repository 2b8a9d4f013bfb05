#!/usr/bin/env bash
# check-layering.sh - the rooms of ARCHITECTURE.md, checked.
#
# A library file may include its own room's headers, the public headers
# (<katra/...>), and another room's headers only when that room sits on a
# lower level and the header is one of its doors.  Public headers include
# only public and system headers.  Memory orders are named only in
# <katra/atomic.h>: no other file of the library, the commands or the
# benchmarks uses a raw atomic builtin (GCC's or clang's), <stdatomic.h>,
# _Atomic, or in the C++ header <atomic> and std::atomic.  The
# table below is ARCHITECTURE.md's
# "Levels and doors" table; change both together.
#
#   check-layering.sh [ROOT]     check the tree at ROOT (default: this checkout)
#   check-layering.sh --self-test
#                                plant one violation of each kind in a copy
#                                and fail unless every one is caught
set -euo pipefail

# room level doors (space-separated, relative to the room)
ROOMS='
ring    1 ring.h
format  1 format.h reader_internal.h utf8.h compact.h
recover 2 recover.h
flush   3 flush.h live.h
capture 4 capture_internal.h
tools   5 -
bench   5 -
'

level_of() { awk -v r="$1" 'NF && $1 == r { print $2 }' <<<"$ROOMS"; }
is_door() { awk -v r="$1" -v h="$2" 'NF && $1 == r { for (i = 3; i <= NF; i++) if ($i == h) f = 1 } END { exit !f }' <<<"$ROOMS"; }

# Print one line per violation in the tree at $1; return how many.
check_tree() {
  local root=$1 bad=0 file room inc target rest lf lt
  while IFS= read -r file; do
    room=${file%%/*}
    while IFS= read -r inc; do
      target=${inc%%/*}
      [[ $inc == */* ]] || continue            # same folder
      [[ $target == "$room" ]] && continue     # own room
      rest=${inc#*/}
      lf=$(level_of "$room"); lt=$(level_of "$target")
      if [[ -z $lt ]]; then
        echo "$file: includes \"$inc\", not a room's header"; bad=$((bad + 1))
      elif (( lt >= lf )); then
        echo "$file: includes \"$inc\": $target (level $lt) is not below $room (level $lf)"
        bad=$((bad + 1))
      elif ! is_door "$target" "$rest"; then
        echo "$file: includes \"$inc\": not a door of $target/"; bad=$((bad + 1))
      fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$root/$file")
  done < <(cd "$root" && ls ring/*.[ch] format/*.[ch] recover/*.[ch] flush/*.[ch] \
             capture/*.[ch] tools/*.[ch] bench/*.[ch] 2>/dev/null)
  while IFS= read -r file; do
    [[ $file == include/katra/atomic.h ]] && continue
    if grep -nE '__atomic_|__sync_|__c11_atomic|stdatomic|_Atomic|std::atomic|<atomic>' \
         "$root/$file" >/dev/null; then
      echo "$file: a raw atomic, not one of katra/atomic.h's accessors"; bad=$((bad + 1))
    fi
  done < <(cd "$root" && ls ring/*.[ch] format/*.[ch] recover/*.[ch] flush/*.[ch] \
             capture/*.[ch] tools/*.[ch] bench/*.[ch] include/katra/*.h include/katra/*.hpp 2>/dev/null)
  while IFS= read -r file; do
    if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/$file" >/dev/null; then
      echo "$file: a public header includes a quoted (internal) header"; bad=$((bad + 1))
    fi
  done < <(cd "$root" && ls include/katra/*.h)
  return $((bad > 255 ? 255 : bad))
}

self_test() {
  local here tmp n
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  cp -r "$here/ring" "$here/format" "$here/recover" "$here/flush" "$here/capture" \
    "$here/tools" "$here/bench" "$here/include" "$tmp/"
  check_tree "$tmp" >/dev/null || { echo "self-test: the clean tree fails"; return 1; }
  # One violation of each kind: upward, sideways at level 1, a private
  # header of a lower room, a non-room, an internal header in a public one,
  # and a memory order written outside katra/atomic.h: GCC's builtin in C,
  # clang's, and C++'s in the C++ header.
  echo '#include "flush/flush.h"' >>"$tmp/ring/names.c"
  echo '#include "ring/ring.h"' >>"$tmp/format/utf8.c"
  echo '#include "ring/private.h"' >>"$tmp/recover/crash.c"
  echo '#include "tests/helpers.h"' >>"$tmp/capture/manager.c"
  echo '#include "ring/ring.h"' >>"$tmp/include/katra/trace.h"
  echo 'static int f(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }' >>"$tmp/flush/writer_open.c"
  echo 'static int g(void *p) { return __c11_atomic_load(p, 2); }' >>"$tmp/tools/outfile.c"
  printf '#include <atomic>\ninline std::atomic<int> kt_planted;\n' >>"$tmp/include/katra/katra.hpp"
  n=0
  check_tree "$tmp" >"$tmp/out" || n=$?
  if [[ $n -ne 8 ]]; then
    echo "self-test: 8 planted violations, $n caught:"; cat "$tmp/out"; return 1
  fi
  echo "check-layering self-test: 8 of 8 planted violations caught"
}

if [[ ${1:-} == --self-test ]]; then
  self_test
  exit
fi
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
n=0
check_tree "$root" || n=$?
if (( n )); then
  echo "check-layering: $n violation(s) of ARCHITECTURE.md's \"Levels and doors\" and its memory-order rule"
  exit 1
fi
echo "check-layering: every include goes down through a door, every memory order through katra/atomic.h"
