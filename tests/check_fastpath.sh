#!/usr/bin/env bash
# check_fastpath.sh OBJDUMP OBJECT - the producer fast path holds no call
# and no lock-prefixed instruction.  Each probe's hot part must also read
# the TSC and end in a ret.  The hot part is the symbol's code from its
# entry to where its last record is stored (fastpath_hot.awk): gcc moves
# the slow path to a ".cold" split, clang leaves it after that point.
set -euo pipefail
objdump=$1 obj=$2
fail=0
for fn in kt_probe_zone_begin kt_probe_counter kt_probe_site kt_probe_site_category kt_probe_arg kt_probe_alloc \
  kt_probe_frame_site kt_probe_counter_site kt_probe_message_site; do
  body=$("$objdump" -d --no-show-raw-insn "$obj" | sed -n "/<$fn>:/,/^\$/p" |
    awk -f "$(dirname "$0")/fastpath_hot.awk")
  if [[ -z $body ]]; then
    echo "FAIL $fn: not found in $obj"; fail=1; continue
  fi
  echo "$body"
  if grep -qE '\scall' <<<"$body"; then echo "FAIL $fn: the fast path makes a call"; fail=1; fi
  if grep -qE '\slock\b' <<<"$body"; then echo "FAIL $fn: the fast path has a lock prefix"; fail=1; fi
  if ! grep -qE '\srdtsc' <<<"$body"; then echo "FAIL $fn: no rdtsc in the hot part"; fail=1; fi
  if ! grep -qE '\sret' <<<"$body"; then echo "FAIL $fn: no ret in the hot part"; fail=1; fi
  [[ $fail == 0 ]] && echo "ok $fn: no call, no lock"
done
if [[ $fail == 0 ]]; then echo "fastpath: 1 passed, 0 failed"; else echo "fastpath: 0 passed, 1 failed"; fi
exit "$fail"
