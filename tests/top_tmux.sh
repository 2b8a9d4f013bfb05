#!/usr/bin/env bash
# top_tmux.sh KATRA PARTICLES MULTIPROC - `katra top` on a terminal: a tmux pane
# (120x45) runs it against examples/particles with --window all (the
# whole session, which `katra stats` of the trace covers); keys go in with
# send-keys, the screen comes out with capture-pane.  Checks: 's' sorts by
# total (the header says so and the rows are in that order), '/plot'
# leaves only zones named like it, '/' alone clears it; when the process
# exits the screen says so and keeps the figures: its zone names are the
# trace's and its frame count and zone counts are stats' within 5%; a key
# then ends katra top and the shell's screen is back (no line of top's
# left, the exit status 0, "exited" said); a second run shrunk to 50x10
# shows the reduced layout, and Ctrl-C gives the screen back too; `katra
# record --top -- multiproc --until-signal` shows its zone as its trace
# has it and gives the shell back after a key; `katra record --flight
# --top`: the S key writes the flight session's newest 10 s into
# snapshot-PID-1.katra (the status line says so), which verifies and holds
# the program's zone; on a recording session S says why there is none.
# TOP_TMUX_KEEP=FILE keeps the screen of the ended session there.
set -euo pipefail
export KATRA_LIVE=1 # the live page is opt-in

katra=${1:?usage: top_tmux.sh KATRA PARTICLES MULTIPROC}
particles=${2:?usage: top_tmux.sh KATRA PARTICLES MULTIPROC}
multiproc=${3:?usage: top_tmux.sh KATRA PARTICLES MULTIPROC}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-toptmux.XXXXXX")
sock="$tmp/tmux.sock"
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; tmux -S "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "top_tmux: $*" >&2; [[ -f $tmp/screen ]] && cat "$tmp/screen" >&2; exit 1; }
tm() { tmux -S "$sock" "$@"; }
screen() { tm capture-pane -p -t top >"$tmp/screen"; }
# Wait (at most 20 s) until the screen holds $1.
wait_for() {
  for _ in $(seq 1 200); do
    screen
    grep -q -- "$1" "$tmp/screen" && return 0
    sleep 0.1
  done
  fail "the screen never showed '$1'"
}
# Wait (at most 10 s) until process $pid publishes its live page; say
# what katra top last answered when it never does.
wait_page() {
  for _ in $(seq 1 200); do
    "$katra" top "$pid" --once --json >/dev/null 2>"$tmp/page.err" && return 0
    kill -0 "$pid" 2>/dev/null || fail "process $pid ended before its live page was seen"
    sleep 0.05
  done
  fail "process $pid never published its live page: $(cat "$tmp/page.err")"
}
# The zone rows: from the ZONE header to the THREAD header.
zone_rows() { awk '/^ZONE /{z=1; next} /^THREAD /{z=0} z && NF' "$tmp/screen"; }

"$particles" --frames 8000 --out "$tmp/p.katra" >/dev/null &
pid=$!
wait_page
tm -f /dev/null new-session -d -s top -x 120 -y 45 "PS1='$ ' bash --norc --noprofile"
tm send-keys -t top "$katra top $pid --window all; echo top-exit-\$?" Enter
wait_for "^ZONE "

tm send-keys -t top s
wait_for "sort total"
zone_rows | awk '{ v = $(NF - 3); u = (v ~ /ms$/) ? 1e6 : (v ~ /us$/) ? 1e3 : (v ~ /ns$/) ? 1 : 1e9
                   sub(/[a-z]+$/, "", v); t = v * u
                   if (NR > 1 && t > last * 1.0001) bad = 1; last = t } END { exit bad }' ||
  fail "rows not sorted by total after 's'"

tm send-keys -t top / plot Enter
wait_for "filter 'plot'"
sleep 0.5
screen
[[ $(zone_rows | awk '{ print $1 }' | sort -u | tr '\n' ' ') == "plot " ]] ||
  fail "filter 'plot' shows other zones: $(zone_rows | awk '{ print $1 }' | tr '\n' ' ')"
tm send-keys -t top / Enter
wait_for "filter ''"

wait "$pid"
pid=
wait_for "the session ended (the process exited or stopped it): press any key"
wait_for "  ENDED"
sleep 0.3
screen
[[ -n ${TOP_TMUX_KEEP:-} ]] && cp "$tmp/screen" "$TOP_TMUX_KEEP"
"$katra" stats "$tmp/p.katra" --json >"$tmp/stats.json"
frames=$(sed -n 's/^frames \([0-9]*\) .*/\1/p' "$tmp/screen")
want=$(jq '.frames.count' "$tmp/stats.json")
awk -v a="$frames" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 0.05 * b) }' ||
  fail "frames on screen '$frames', stats $want"
# Zone names and counts on screen: stats' within 5%.  Names with a space
# (none in particles' zones) would need more than awk's fields.
zone_rows | awk '{ print $1 "\t" $2 }' | sort >"$tmp/shown.tsv"
jq -r '.names[] | select(.zone) | [.name, .zone.count] | @tsv' "$tmp/stats.json" | sort >"$tmp/stats.tsv"
[[ $(cut -f1 "$tmp/shown.tsv") == "$(cut -f1 "$tmp/stats.tsv")" ]] ||
  fail "zone names on screen: $(cut -f1 "$tmp/shown.tsv" | tr '\n' ' '); stats: $(cut -f1 "$tmp/stats.tsv" | tr '\n' ' ')"
paste "$tmp/shown.tsv" "$tmp/stats.tsv" |
  awk -F'\t' '{ d = $2 - $4; if (d < 0) d = -d; if (d > 0.05 * $4) { print; bad = 1 } } END { exit bad }' ||
  fail "zone counts on screen off stats by more than 5%"

tm send-keys -t top x
wait_for "^top-exit-0"
grep -q "^katra top: process [0-9]*: exited" "$tmp/screen" || fail "katra top did not say the process exited"
grep -qE "^(ZONE |THREAD |katra top  pid)" "$tmp/screen" && fail "top's screen is still there after it ended"

# Ctrl-C: the terminal given back as well.
"$particles" --frames 1000000 --out "$tmp/q.katra" >/dev/null &
pid=$!
wait_page
tm send-keys -t top clear Enter "$katra top $pid; echo top2-exit-\$?" Enter
wait_for "^ZONE "
# A recording session has no snapshot to give: the status line says why.
tm send-keys -t top S
wait_for "no snapshot: process $pid has no flight session listening"
tm send-keys -t top C-c
wait_for "^top2-exit-0"
grep -qE "^(ZONE |THREAD |katra top  pid)" "$tmp/screen" && fail "top's screen is still there after Ctrl-C"

# katra record --top: the screen on the program it runs (multiproc's
# parent, which has no session code, ticking a zone until SIGTERM), its
# output in OUT.log; the zone and its count on screen are the trace's
# (within 5%); a key after the end gives the shell back, and katra record
# exits as the program did.
tm send-keys -t top clear Enter \
  "$katra record --top -o $tmp/r.katra -- $multiproc --until-signal; echo rec-exit-\$?" Enter
wait_for "^parent_tick "
rpid=$(sed -n 's/^katra top  pid \([0-9]*\).*/\1/p' "$tmp/screen")
[[ -n $rpid ]] || fail "record --top: no pid on screen"
tm send-keys -t top w w
wait_for "window all"
kill -TERM "$rpid"
wait_for "press any key"
screen
shown=$(zone_rows | awk '{ print $1 "\t" $2 }')
tm send-keys -t top x
wait_for "^rec-exit-0"
grep -q "^katra top: process $rpid: exited" "$tmp/screen" || fail "record --top did not say the process exited"
grep -qE "^(ZONE |THREAD |katra top  pid)" "$tmp/screen" && fail "record --top's screen is still there"
rwant=$("$katra" stats "$tmp/r.katra" --json | jq -r '.names[] | select(.zone) | [.name, .zone.count] | @tsv')
awk -F'\t' -v w="$rwant" 'BEGIN { split(w, a, "\t") } { d = $2 - a[2]; if (d < 0) d = -d
     exit !($1 == a[1] && $1 == "parent_tick" && a[2] > 0 && d <= 0.05 * a[2]) }' <<<"$shown" ||
  fail "record --top: on screen '$shown', the trace's '$rwant'"
[[ -f $tmp/r.katra.log ]] || fail "record --top: no OUT.log"
# The snapshot key: on a flight session, the newest window into a file
# in top's directory; on a recording session (above: particles) a reason.
tm send-keys -t top clear Enter "cd $tmp && $katra record --flight --top -o $tmp/f.katra -- \
  $multiproc --until-signal; echo fl-exit-\$?" Enter
wait_for "^parent_tick "
fpid=$(sed -n 's/^katra top  pid \([0-9]*\).*/\1/p' "$tmp/screen")
[[ -n $fpid ]] || fail "record --flight --top: no pid on screen"
tm send-keys -t top w
wait_for "window 10 s"
tm send-keys -t top S
wait_for "^snapshot-$fpid-1.katra: [0-9]* events"
"$katra" verify "$tmp/snapshot-$fpid-1.katra" >/dev/null || fail "the snapshot does not verify"
"$katra" stats "$tmp/snapshot-$fpid-1.katra" --json |
  jq -e '[.names[] | select(.zone and .name == "parent_tick")] | length == 1' >/dev/null ||
  fail "the snapshot has no parent_tick zone"
tm send-keys -t top S
wait_for "^snapshot-$fpid-2.katra: "
kill -TERM "$fpid"
wait_for "press any key"
tm send-keys -t top x
wait_for "^fl-exit-0"
echo "top_tmux: sort, filter, exit, Ctrl-C, record --top and the snapshot key checked; $frames frames on screen, stats $want"
