#!/usr/bin/env bash
# sanitize.sh - build into build-asan/ with AddressSanitizer and
# UndefinedBehaviorSanitizer, warnings as errors, and run the tests there.
# The install test is left out: it links the instrumented library into an
# uninstrumented consumer.  CC may name the compiler (default: clang, else gcc).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh

cc=${CC:-}
if [[ -z $cc ]]; then
  if command -v clang >/dev/null; then cc=clang; else cc=gcc; fi
fi

# The C++ compiler of the same family: one sanitizer runtime per program.
case $cc in
  *clang*) cxx=${cc/clang/clang++} ;;
  *gcc*) cxx=${cc/gcc/g++} ;;
  *) cxx=c++ ;;
esac

# CMake drops every -D of a tree whose compilers change; start that tree anew.
same() { [[ $(readlink -f "$(command -v "$1")") == $(readlink -f "$2") ]]; }
cache=build-asan/CMakeCache.txt
if [[ -f $cache ]]; then
  cached=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache")
  cached_cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
  if ! same "$cc" "$cached" || { [[ -n $cached_cxx ]] && ! same "$cxx" "$cached_cxx"; }; then
    rm -rf build-asan
  fi
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DKATRA_SANITIZE=address,undefined -DKATRA_WERROR=ON
cmake --build build-asan -j2

status=0
# A hang anywhere fails in 10 minutes, not ctest's 25.  test_record and
# test_record_run (children of `katra record` that fork() and start
# sessions) run here too: clang 14's ASan allocator does not hold its
# locks across fork(), and katra's own threads are never inside it at a
# fork (flush/work.c).
ctest --test-dir build-asan --output-on-failure --timeout 600 \
  -E '^(install_consumer)$' || status=$?

log=build-asan/Testing/Temporary/LastTest.log
if [[ -f $log ]]; then
  echo "Criterion summaries (ASan+UBSan):"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 }
       /Synthesis:/ { sub(/^\[=+\] /, ""); printf "  %-16s %s\n", name, $0 }' "$log"
fi
exit "$status"
