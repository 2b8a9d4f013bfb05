#!/usr/bin/env bash
# run.sh - the main job: install what is missing, build Release into build/,
# run ringbench on its built-in default workload.  Arguments go to ringbench.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKATRA_WERROR=OFF
cmake --build build -j2
exec build/ringbench "$@"
