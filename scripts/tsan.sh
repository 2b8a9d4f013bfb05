#!/usr/bin/env bash
# tsan.sh - build into build-tsan/ with ThreadSanitizer (clang) and run the
# tests there: the ring stress tests (2 producers x 10M events through 64 KiB
# rings, both policies), thread churn and the format tests.  Criterion cannot
# run under TSan, so these builds use tests/tsan/criterion/criterion.h.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh

export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DKATRA_SANITIZE=thread -DKATRA_WERROR=ON
cmake --build build-tsan -j2
ctest --test-dir build-tsan --output-on-failure -E install_consumer
