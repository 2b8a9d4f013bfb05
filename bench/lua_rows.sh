#!/usr/bin/env bash
# lua_rows.sh [ROUNDS [SCALE]] - a real Lua 5.4 program with every call
# traced (issue #28 must-show 2): examples/lua_trace runs
# examples/lua/workload.lua (SCALE, default its own 4000) five ways,
# alternated ROUNDS times (default 5):
#   plain   no hook;
#   empty   a hook that returns at once: Lua's own hook machinery;
#   walk    the tracer's hook emitting nothing (--hook-only): its frames,
#           names and lua_getinfo() calls;
#   clock   walk reading katra's clock where traced emits (--hook-clock);
#   traced  the same hook with katra's zones into a session's file.
# Prints each run's wall and user+sys CPU seconds, then medians and the
# median of each round's ratio to its plain run, and the traced run's
# split: (empty - plain), (walk - empty), (clock - walk), (traced - clock)
# over plain.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-5} scale=${2:-4000}
lt=${LUA_TRACE:-build/examples/lua_trace} script=examples/lua/workload.lua
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-luarows.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '%-5s %-7s %8s %8s %10s %8s\n' round mode wall cpu events dropped
for r in $(seq 1 "$rounds"); do
  for mode in plain empty walk clock traced; do
    case $mode in
      plain) args=(--plain) ;;
      empty) args=(--hook-empty) ;;
      walk) args=(--hook-only) ;;
      clock) args=(--hook-clock) ;;
      traced) args=(--out "$tmp/w.katra") ;;
    esac
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$lt" "${args[@]}" "$script" "$scale" \
      >/dev/null 2>"$tmp/err"
    t1=$(date +%s%N)
    read -r u s <"$tmp/cpu"
    ev=$(awk '/^lua_trace:/ { print $13, $15 }' "$tmp/err")
    set -- ${ev:-0 0}
    printf '%-5s %-7s %8.3f %8.2f %10s %8s\n' "$r" "$mode" \
      "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')" \
      "$(awk -v a="$u" -v b="$s" 'BEGIN { print a + b }')" "$1" "$2"
    rm -f "$tmp/w.katra"
  done
done | tee "$tmp/rows"
awk "$(cat bench/medians.awk)"'
  { m = $2; w[m, $1] = $3; c[m, $1] = $4; if ($1 > n) n = $1 }
  END {
    split("plain empty walk clock traced", ms, " ")
    for (k = 1; k <= 5; k++) {
      m = ms[k]
      for (i = 1; i <= n; i++) {
        a[i] = w[m, i]; b[i] = c[m, i]
        rw[i] = w[m, i] / w["plain", i]; rc[i] = c[m, i] / c["plain", i]
      }
      mw = med(a, n); mc = med(b, n)
      printf "%-7s wall %.3f s (%.3f-%.3f) cpu %.2f s   paired/plain: wall %.2fx (%.2f-%.2f) cpu %.2fx (%.2f-%.2f)\n",
        m, mw, lo(a, n), hi(a, n), mc, med(rw, n), lo(rw, n), hi(rw, n), med(rc, n), lo(rc, n), hi(rc, n)
      W[m] = mw; C[m] = mc
    }
    p = W["plain"]; q = C["plain"]
    printf "of plain (medians), wall / cpu: Lua hook machinery (empty - plain) %.2f / %.2f, tracer bookkeeping (walk - empty) %.2f / %.2f, clock reads (clock - walk) %.2f / %.2f, katra emit and flusher (traced - clock) %.2f / %.2f\n",
      (W["empty"] - p) / p, (C["empty"] - q) / q, (W["walk"] - W["empty"]) / p, (C["walk"] - C["empty"]) / q,
      (W["clock"] - W["walk"]) / p, (C["clock"] - C["walk"]) / q, (W["traced"] - W["clock"]) / p, (C["traced"] - C["clock"]) / q
  }' "$tmp/rows"
