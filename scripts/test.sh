#!/usr/bin/env bash
# test.sh - install what is missing, build into build/ and run every test
# through ctest.  With CI=true compiler warnings are errors.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh

werror=OFF
[[ ${CI:-} == true ]] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKATRA_WERROR="$werror"
cmake --build build -j2

status=0
ctest --test-dir build --output-on-failure || status=$?
# The examples/ program's FXT and Chrome exports through Tracy's own
# importers and loader (scripts/viewers.sh builds them from ../shared: 3
# minutes of CPU once, then about 1 s; the test itself about 1 s).
if [[ -x build/examples/particles ]]; then
  { bash scripts/viewers.sh &&
    bash tests/tracy_import.sh build/katra build/examples/particles build-tracy; } || status=$?
  # A real Lua program's zones the same way (lua_trace: CI has Lua).
  if [[ -x build/examples/lua_trace ]]; then
    bash tests/lua_tracy.sh build/katra build/examples/lua_trace build-tracy || status=$?
  fi
else
  echo "test.sh: no build/examples/particles (no C++ compiler?): Tracy import test not run" >&2
  status=1
fi
# katra report's pages in a real browser: no console message, no request
# (installs Debian's chromium when it is missing).
bash tests/report_chromium.sh build/katra build/ringbench || status=$?

# ctest shows a passing test's output only in its log: print each Criterion
# program's summary line from there.
log=build/Testing/Temporary/LastTest.log
if [[ -f $log ]]; then
  echo "Criterion summaries:"
  awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 }
       /Synthesis:/ { sub(/^\[=+\] /, ""); printf "  %-16s %s\n", name, $0 }' "$log"
fi
exit "$status"
