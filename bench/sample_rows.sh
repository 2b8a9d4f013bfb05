#!/usr/bin/env bash
# sample_rows.sh [ROUNDS [SECONDS [RATE]]] - the cost of sampled call
# chains (issue #31 must-show 3, its sampling half): sched_rows.sh's
# ringbench runs with KT_SAMPLE_HZ=0 and KT_SAMPLE_HZ=${HZ:-1000}
# alternated in one run; its "switches" column and "per switch" line are
# then the samples written (the katra.samples streams' records) and the
# flusher's extra CPU per sample.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
KNOB=KT_SAMPLE_HZ ON=${HZ:-1000} STREAM=katra.samples FIRST=0 exec bench/sched_rows.sh "$@"
