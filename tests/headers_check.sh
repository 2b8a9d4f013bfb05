#!/usr/bin/env bash
# headers_check.sh CC CXX INCLUDE_DIR - every public header compiles on
# its own, included first and twice, as C11 and as C++17 (katra.hpp as
# C++ only), under -Wall -Wextra -Werror: a header that needs another
# included before it, or leaves an unused static behind, fails here.
# disable.h is also compiled with KATRA_DISABLE, the only way it is used.
set -uo pipefail
cc=$1 cxx=$2 inc=$3
fail=0 n=0
check() { # LANG STD HEADER [FLAGS...]
  local lang=$1 std=$2 h=$3 out
  shift 3
  n=$((n + 1))
  if ! out=$(printf '#include <katra/%s>\n#include <katra/%s>\n' "$h" "$h" |
      "$([[ $lang == c ]] && echo "$cc" || echo "$cxx")" -x "$lang" -std="$std" -Wall -Wextra \
        -Werror "$@" -I"$inc" -fsyntax-only - 2>&1); then
    echo "FAIL $h ($lang $std $*):"; echo "$out" | head -20; fail=$((fail + 1))
  fi
}
for f in "$inc"/katra/*.h "$inc"/katra/*.hpp; do
  h=${f##*/}
  [[ $h == *.h ]] && check c c11 "$h"
  check c++ c++17 "$h"
  if [[ $h == disable.h ]]; then
    check c c11 "$h" -DKATRA_DISABLE
    check c++ c++17 "$h" -DKATRA_DISABLE
  fi
done
echo "headers: $((n - fail)) passed, $fail failed"
[[ $fail == 0 ]]
