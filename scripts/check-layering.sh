#!/usr/bin/env bash
# check-layering.sh - the rooms of ARCHITECTURE.md, checked.
#
# A library file may include its own room's headers, the public headers
# (<katra/...>), and another room's headers only when that room sits on a
# lower level and the header is one of its doors, whether the include is
# written "room/x.h" or <room/x.h>.  Public headers include only public and
# system headers.  A kt__ function is declared only in its own room or in
# one of that room's doors (or a public header): a prototype copied into
# another room hides a call through no door.  A room's objects call only
# down: no undefined symbol of ring/ ... capture/ may be defined by a room
# on the same or a higher level (nm on the build's objects: a call through
# the public API is no include, and only the symbols show it).  Memory
# orders are named only in <katra/atomic.h>: no other file of the library,
# the commands or the benchmarks uses a raw atomic builtin (GCC's or
# clang's), <stdatomic.h>, _Atomic, or in the C++ header <atomic> and
# std::atomic.  The table below is ARCHITECTURE.md's "Levels and doors"
# table, with tools/'s sub-rooms from its "The command"; change both
# together.  A source in tools/ itself, outside every sub-room, is a
# violation.
#
#   check-layering.sh [ROOT]     check the tree at ROOT (default: this checkout);
#                                the symbols from ROOT/build's objects
#                                (KATRA_BUILD=DIR for another build), or,
#                                without a build, from objects compiled here
#   check-layering.sh --self-test
#                                plant one violation of each kind in a copy
#                                and fail unless every one is caught
set -euo pipefail

# A parser, not a pattern: without universal-ctags the checks would pass
# what they cannot see.
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "${0##*/}: needs universal-ctags (bash scripts/deps.sh)" >&2
  exit 1
fi

# room level doors (space-separated, relative to the room; * = every header)
ROOMS='
ring    1 ring.h
format  1 format.h reader_internal.h utf8.h compact.h fd_sink.h
recover 2 recover.h
flush   3 flush.h live.h
capture 4 capture_internal.h
tools/pipeline 5 *
tools/analysis 6 stats.h valstats.h trackstats.h windows.h collapse.h samples.h report.h report_page.h diff.h
tools/export   6 chrome.h export_fxt.h export_perfetto.h
tools/cmd      7 -
bench   5 -
'
# The rooms whose objects make the library, for the symbol check.
LIB_ROOMS='ring format recover flush capture'
# What an include's first folder may name: the rooms, and folders that are
# no room (an include of one is a violation, not a system header).
NOT_ROOMS='tests examples include scripts cmake docs build'

level_of() { awk -v r="$1" 'NF && $1 == r { print $2 }' <<<"$ROOMS"; }
is_door() { awk -v r="$1" -v h="$2" 'NF && $1 == r { for (i = 3; i <= NF; i++) if ($i == h || $i == "*") f = 1 } END { exit !f }' <<<"$ROOMS"; }
# The room a path lies in: the longest room name that is a folder prefix of it.
room_of() { awk -v p="$1" 'NF && index(p, $1 "/") == 1 && length($1) > length(r) { r = $1 } END { print r }' <<<"$ROOMS"; }
room_dirs() { awk 'NF { print $1 }' <<<"$ROOMS"; }
is_named_folder() { local d; for d in $(room_dirs) $NOT_ROOMS; do [[ $1 == "$d" ]] && return 0; done; return 1; }

# The library, command and benchmark sources, relative to $1.
sources() { (cd "$1" && for d in $(room_dirs); do ls "$d"/*.[ch] "$d"/*/*.[ch] 2>/dev/null || true; done); }

# A source of the command outside its sub-rooms has no place in the table.
check_placed() { # $1 root; prints violations
  local f
  for f in $(cd "$1" && ls tools/*.[ch] 2>/dev/null); do
    echo "$f: in no sub-room of tools/ (ARCHITECTURE.md, \"The command\")"
  done
}

# Every include of a file that names a folder of the tree, "x/y.h" or <x/y.h>.
includes_of() {
  sed -n -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
         -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/<\1/p' "$1" |
  while IFS= read -r inc; do
    if [[ $inc == '<'* ]]; then
      inc=${inc#<}
      [[ $inc == */* ]] && is_named_folder "${inc%%/*}" && echo "$inc"
    else
      echo "$inc"
    fi
  done
}

check_includes() { # $1 root; prints violations
  local root=$1 file room inc target rest lf lt
  while IFS= read -r file; do
    room=$(room_of "$file")
    while IFS= read -r inc; do
      [[ $inc == */* ]] || continue            # same folder
      target=$(room_of "$inc")
      [[ $target == "$room" ]] && continue     # own room
      rest=${inc#"$target"/}
      lf=$(level_of "$room"); lt=$(level_of "$target")
      if [[ -z $lt ]]; then
        echo "$file: includes \"$inc\", not a room's header"
      elif (( lt >= lf )); then
        echo "$file: includes \"$inc\": $target (level $lt) is not below $room (level $lf)"
      elif ! is_door "$target" "$rest"; then
        echo "$file: includes \"$inc\": not a door of $target/"
      fi
    done < <(includes_of "$root/$file")
  done < <(sources "$root")
  while IFS= read -r file; do
    if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/$file" >/dev/null ||
       [[ -n $(includes_of "$root/$file") ]]; then
      echo "$file: a public header includes an internal header"
    fi
  done < <(cd "$root" && ls include/katra/*.h)
}

check_atomics() { # $1 root; prints violations
  local root=$1 file
  while IFS= read -r file; do
    [[ $file == include/katra/atomic.h ]] && continue
    if grep -nE '__atomic_|__sync_|__c11_atomic|stdatomic|_Atomic|std::atomic|<atomic>' \
         "$root/$file" >/dev/null; then
      echo "$file: a raw atomic, not one of katra/atomic.h's accessors"
    fi
  done < <(sources "$1"; cd "$root" && ls include/katra/*.h include/katra/*.hpp 2>/dev/null)
}

# A kt__ function declared outside its own room, in a file that is neither
# a door of that room nor a public header: a copied prototype.  ctags
# (universal-ctags) tells definitions from prototypes.
check_prototypes() { # $1 root; prints violations
  local root=$1
  (cd "$root" && { sources .; ls include/katra/*.h; } | sed 's|^\./||' |
     ctags -x --_xformat='%N	%K	%F' --langmap=C:.c.h --kinds-C=fp -L - 2>/dev/null) |
  awk -F'\t' '$1 ~ /^kt__/' | while IFS=$'\t' read -r name kind file; do
    echo "$kind $name $file"
  done | awk -v rooms="$ROOMS" '
    BEGIN { n = split(rooms, L, "\n")
            for (i = 1; i <= n; i++) { k = split(L[i], w, " "); if (!k) continue
              room[++nr] = w[1]; for (j = 3; j <= k; j++) door[w[1] "/" w[j]] = 1 } }
    function room_of(p,   i, r) { r = ""
      for (i = 1; i <= nr; i++) if (index(p, room[i] "/") == 1 && length(room[i]) > length(r)) r = room[i]
      return r }
    $1 == "function" { def[$2] = room_of($3) }
    $1 == "prototype" { pn[++np] = $2; pf[np] = $3 }
    END { for (i = 1; i <= np; i++) {
            d = def[pn[i]]; f = pf[i]
            if (d == "" || room_of(f) == d || door[f] || f ~ /^include\/katra\//) continue
            printf "%s: declares %s, a function of %s/: include the door of %s/ that declares it\n", f, pn[i], d, d } }'
}

# The library's objects, one folder per room, into $2: the build's (under
# $KATRA_BUILD or $1/build) when they are there, else compiled from $1.
library_objects() {
  local root=$1 out=$2 build=${KATRA_BUILD:-$1/build} r f
  local objs=$build/CMakeFiles/katra_obj.dir
  for r in $LIB_ROOMS; do
    mkdir -p "$out/$r"
    if ls "$objs/$r"/*.o >/dev/null 2>&1; then
      cp "$objs/$r"/*.o "$out/$r/"
    else
      for f in "$root/$r"/*.c; do
        cc -std=gnu11 -O0 -w -c -DKT_BUILDING_LIBRARY -I"$root/include" -I"$root" \
          "$f" -o "$out/$r/$(basename "$f").o"
      done
    fi
  done
}

# A call that goes up or sideways: an undefined symbol of a room's objects
# that a room on the same or a higher level defines.
check_symbols() { # $1 objects (one folder per room); prints violations
  local objs=$1 r lr
  for r in $LIB_ROOMS; do
    lr=$(level_of "$r")
    (cd "$objs/$r" && nm --defined-only -g -A ./*.o 2>/dev/null) |
      awk -v r="$r" -v l="$lr" '{ print $NF, r, l }'
  done >"$objs/defined"
  for r in $LIB_ROOMS; do
    (cd "$objs/$r" && nm -u -A ./*.o 2>/dev/null) | awk -v r="$r" -v l="$(level_of "$r")" '
      FNR == NR { room[$1] = $2; level[$1] = $3; next }
      { sym = $NF; obj = $1; sub(/^\.\//, "", obj); sub(/\.o:.*$/, "", obj)
        if ((sym in room) && room[sym] != r && level[sym] >= l)
          printf "%s/%s: calls %s, defined in %s/ (level %d), not below %s/ (level %d)\n",
                 r, obj, sym, room[sym], level[sym], r, l }' "$objs/defined" -
  done
}

# Print one line per violation in the tree at $1 (symbols from the objects
# in $2); return how many.
check_tree() {
  local out n
  out=$(check_includes "$1"; check_placed "$1"; check_atomics "$1"; check_prototypes "$1"; check_symbols "$2")
  [[ -z $out ]] && return 0
  echo "$out"
  n=$(wc -l <<<"$out")
  return $((n > 255 ? 255 : n))
}

self_test() {
  local here tmp n
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir "$tmp/tree"
  cp -r "$here/ring" "$here/format" "$here/recover" "$here/flush" "$here/capture" \
    "$here/tools" "$here/bench" "$here/include" "$tmp/tree/"
  library_objects "$here" "$tmp/obj"
  check_tree "$tmp/tree" "$tmp/obj" >"$tmp/out" || {
    echo "self-test: the clean tree fails:"; cat "$tmp/out"; return 1; }
  local t=$tmp/tree
  # One violation of each kind: upward, sideways at level 1, a private
  # header of a lower room, a non-room, an internal header in a public one,
  # and a memory order written outside katra/atomic.h: GCC's builtin in C,
  # clang's, and C++'s in the C++ header.
  echo '#include "flush/flush.h"' >>"$t/ring/names.c"
  echo '#include "ring/ring.h"' >>"$t/format/utf8.c"
  echo '#include "ring/private.h"' >>"$t/recover/crash.c"
  echo '#include "tests/helpers.h"' >>"$t/capture/manager.c"
  echo '#include "ring/ring.h"' >>"$t/include/katra/trace.h"
  echo 'static int f(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }' >>"$t/flush/session.c"
  echo 'static int g(void *p) { return __c11_atomic_load(p, 2); }' >>"$t/tools/pipeline/outfile.c"
  printf '#include <atomic>\ninline std::atomic<int> kt_planted;\n' >>"$t/include/katra/katra.hpp"
  # The kinds the angle brackets hid: a private header through <>, in the
  # library and in a public header; an upward include through <>.
  echo '#include <ring/private.h>' >>"$t/flush/session.c"
  echo '#include <flush/flush.h>' >>"$t/include/katra/reader.h"
  echo '#include <capture/capture_internal.h>' >>"$t/recover/crashdir.c"
  # Prototypes copied across rooms: the ring's slow path into capture/, the
  # fd sink into a private header of flush/.
  echo 'int kt__emit_slow(void);' >>"$t/capture/manager.c"
  echo 'void *kt__fd_sink_new(int fd);' >>"$t/flush/session_impl.h"
  # The command's sub-rooms: the pipeline including a command's header (up),
  # an export including analysis' private header (sideways), and a source
  # left in tools/ outside every sub-room.
  echo '#include "tools/cmd/cli.h"' >>"$t/tools/pipeline/fmt.c"
  echo '#include "tools/analysis/stats_impl.h"' >>"$t/tools/export/chrome.c"
  echo 'int kt_planted_tool;' >"$t/tools/planted.c"
  # Calls up and sideways through the public API, which no include shows:
  # format/ opening a session (flush/, level 3) and ring/ opening a reader
  # (format/, its own level).
  printf 'int kt_session_start();\nint kt__planted_up(void) { return kt_session_start(); }\n' \
    >"$tmp/up.c"
  printf 'int kt_reader_open();\nint kt__planted_side(void) { return kt_reader_open(); }\n' \
    >"$tmp/side.c"
  cc -std=gnu11 -w -c "$tmp/up.c" -o "$tmp/obj/format/planted_up.c.o"
  cc -std=gnu11 -w -c "$tmp/side.c" -o "$tmp/obj/ring/planted_side.c.o"
  n=0
  check_tree "$t" "$tmp/obj" >"$tmp/out" || n=$?
  if [[ $n -ne 18 ]]; then
    echo "self-test: 18 planted violations, $n caught:"; cat "$tmp/out"; return 1
  fi
  echo "check-layering self-test: 18 of 18 planted violations caught"
}

if [[ ${1:-} == --self-test ]]; then
  self_test
  exit
fi
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
objs=$(mktemp -d)
trap 'rm -rf "$objs"' EXIT
library_objects "$root" "$objs"
n=0
check_tree "$root" "$objs" || n=$?
if (( n )); then
  echo "check-layering: $n violation(s) of ARCHITECTURE.md's \"Levels and doors\" and its memory-order rule"
  exit 1
fi
echo "check-layering: every include goes down through a door, every call down, every kt__ prototype in its room or a door, every memory order through katra/atomic.h"
