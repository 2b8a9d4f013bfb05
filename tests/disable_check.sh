#!/usr/bin/env bash
# disable_check.sh CC CXX SRC_DIR [TRACED_PROBE] - KATRA_DISABLE compiles
# tracing out (katra/disable.h):
#
# - every program in examples/ (C++ and C) and tests/disable_probe.c (as C
#   and as C++) compile with -DKATRA_DISABLE under -Wall -Wextra -Werror
#   at -O0 and -O2, their objects reference no kt_ symbol (`nm -u`), and
#   they link without libkatra; disable_probe runs and checks what the
#   calls return;
# - arguments are still type-checked: a wrong argument to an out-of-line
#   call, an inline emit or a macro fails to compile;
# - TRACED_PROBE, the same probe built without it against the library,
#   runs a real session (so the probe is the real API's code).
set -euo pipefail

cc=${1:?usage: disable_check.sh CC CXX SRC_DIR [TRACED_PROBE]}
cxx=${2:?usage: disable_check.sh CC CXX SRC_DIR [TRACED_PROBE]}
src=${3:?usage: disable_check.sh CC CXX SRC_DIR [TRACED_PROBE]}
traced=${4:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-disable.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
warn=(-Wall -Wextra -Werror -DKATRA_DISABLE -I"$src/include")

# compile_off LANG FILE OPT NAME - compile, check the object, link.
compile_off() {
  local lang=$1 file=$2 opt=$3 name=$4 std comp
  if [ "$lang" = c ]; then comp=$cc; std=(-std=c11); else comp=$cxx; std=(-std=c++17 -pedantic); fi
  if ! "$comp" -x "$lang" "${std[@]}" "${warn[@]}" "$opt" -c "$file" -o "$tmp/$name.o" \
       2>"$tmp/$name.err"; then
    echo "FAIL: $file ($lang $opt) does not compile with KATRA_DISABLE:"; cat "$tmp/$name.err"
    fail=1; return
  fi
  local refs
  refs=$(nm -u "$tmp/$name.o" | grep -E '\bkt_|\bkt__|katra' || true)
  if [ -n "$refs" ]; then
    echo "FAIL: $file ($lang $opt) references katra:"; echo "$refs"; fail=1; return
  fi
  if ! "$cxx" "$tmp/$name.o" -o "$tmp/$name" -pthread 2>"$tmp/$name.lerr"; then
    echo "FAIL: $file ($lang $opt) does not link without libkatra:"; cat "$tmp/$name.lerr"
    fail=1; return
  fi
  echo "ok: $file ($lang $opt): no kt_ symbol referenced, linked without libkatra"
}

n=0
for opt in -O0 -O2; do
  for f in "$src"/examples/*.cpp "$src"/examples/*.c; do
    [ -e "$f" ] || continue
    lang=c; case $f in *.cpp) lang=c++;; esac
    n=$((n + 1)); compile_off "$lang" "$f" "$opt" "ex$n"
  done
  for lang in c c++; do
    n=$((n + 1)); compile_off "$lang" "$src/tests/disable_probe.c" "$opt" "probe$n"
    if [ -x "$tmp/probe$n" ] && ! "$tmp/probe$n" >"$tmp/probe$n.out" 2>&1; then
      echo "FAIL: disable_probe ($lang $opt):"; cat "$tmp/probe$n.out"; fail=1
    fi
  done
done

# Each of these must be refused: the argument's type is wrong.
bad=(
  'uint32_t f(void) { return kt_name(42); }'
  'int f(void) { return kt_thread_name(1.5); }'
  'int f(void) { kt_session *s; return kt_session_start("x", 0); }'
  'void f(void) { kt_counter(1, "seven"); }'
  'void f(void) { kt_alloc(3, 8); }'
  'void f(void) { KT_ZONE(42); }'
  'void f(void) { KT_ARG_I64(7, 1); }'
  'int f(void) { return kt_track_create(5, 1); }'
  'void f(void) { KT_FRAME(3); }'
  'void f(void) { KT_COUNTER("c", "seven"); }'
  'void f(void) { KT_MESSAGE("m", 5); }'
)
# The same calls with the right arguments, which must compile: the bad
# ones fail for their argument, nothing else.
good=(
  'uint32_t f(void) { return kt_name("x"); }'
  'int f(void) { return kt_thread_name("t"); }'
  'int f(void) { kt_session *s; return kt_session_start("x", 0, &s); }'
  'void f(void) { kt_counter(1, 7); }'
  'void f(void) { kt_alloc("", 8); }'
  'void f(void) { KT_ZONE("z"); }'
  'void f(void) { KT_ARG_I64("a", 1); }'
  'int f(void) { return kt_track_create("t", 1); }'
  'void f(void) { KT_FRAME("f"); }'
  'void f(void) { KT_COUNTER("c", 7); }'
  'void f(void) { KT_MESSAGE("m", "five"); }'
)
# try LANG CODE: 0 when CODE compiles with KATRA_DISABLE.
try() {
  local comp=$cc std=(-std=c11)
  if [ "$1" = c++ ]; then comp=$cxx; std=(-std=c++17); fi
  printf '#include <katra/katra.h>\n#include <katra/track.h>\n%s\n' "$2" >"$tmp/try.c"
  "$comp" -x "$1" "${std[@]}" "${warn[@]}" -c "$tmp/try.c" -o "$tmp/try.o" 2>/dev/null
}
for i in "${!bad[@]}"; do
  for lang in c c++; do
    if try "$lang" "${bad[$i]}"; then
      echo "FAIL: compiled out, '${bad[$i]}' ($lang) still compiles: its argument is not checked"
      fail=1
    fi
    if ! try "$lang" "${good[$i]}"; then
      echo "FAIL: compiled out, '${good[$i]}' ($lang) does not compile"
      fail=1
    fi
  done
done
echo "ok: ${#bad[@]} calls with a wrong argument refused, with the right one compiled, C and C++"

if [ -n "$traced" ]; then
  if ! "$traced" >"$tmp/traced.out" 2>&1; then
    echo "FAIL: the traced probe:"; cat "$tmp/traced.out"; fail=1
  else
    echo "ok: the traced probe: $(cat "$tmp/traced.out")"
  fi
fi
exit $fail
