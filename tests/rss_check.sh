#!/usr/bin/env bash
# rss_check.sh ON OFF - the peak resident set (VmHWM) of tests/rss_probe.c
# built against katra (ON: threads named, zones, counters and memory
# events, no session) and with KATRA_DISABLE (OFF: no library) must be
# within 1 MiB: a program that ships with katra linked and tracing off
# costs what it costs untraced (issue 25, item 5).  Before kt_thread_name()
# kept names without a ring, ON peaked at 46.7 MB against OFF's 5.5 MB.
# The median of three runs of each; no time is measured.
set -euo pipefail

on=${1:?usage: rss_check.sh ON OFF}
off=${2:?usage: rss_check.sh ON OFF}
limit_kb=1024

# median_hwm PROG - the median VmHWM in kB of three runs.
median_hwm() {
  for _ in 1 2 3; do "$1" | awk '{ print $4 }'; done | sort -n | sed -n 2p
}

a=$(median_hwm "$on")
b=$(median_hwm "$off")
echo "peak RSS, 4 named threads, no session: katra linked $a kB, compiled out $b kB," \
     "difference $((a - b)) kB (limit $limit_kb)"
if [ $((a - b)) -gt $limit_kb ]; then
  echo "FAIL: katra linked and tracing off costs $((a - b)) kB more than compiled out"
  exit 1
fi
