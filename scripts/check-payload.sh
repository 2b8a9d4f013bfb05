#!/usr/bin/env bash
# check-payload.sh - an event's payload is read in one place.
#
# kt_event_get_value() (format/value.c) is the one reader of an event's
# payload bytes: it decodes them as the type's row of KT_EVENT_TYPES
# (include/katra/record.h) says, and every tool shows the kt_value it
# hands over.  This check fails on any other read of a kt_event's payload
# (".payload" or "->payload", its length too) or of a record's payload by
# offset (KT_REC_HEAD) in the library's rooms, the commands (tools/, every
# sub-folder) and the examples.  Allowed, each for a reason:
#   format/value.c              the accessor itself
#   format/reader_internal.h    the reader points an event at its payload
#   format/encode.c             a record written back, its payload copied whole
#   format/compact*.c, .h       the codec packs a payload's words, unread
#   tools/pipeline/pipe.c       the output pipeline copies payloads, unread
# Tests and benchmarks build events and are not checked.
#
#   check-payload.sh [ROOT]     check the tree at ROOT (default: this checkout)
#   check-payload.sh --self-test
#                               plant a payload read of each kind in a copy
#                               and fail unless every one is caught
set -euo pipefail

ALLOWED='^(format/value\.c|format/reader_internal\.h|format/encode\.c|format/compact[a-z_]*\.[ch]|tools/pipeline/pipe\.c)$'
# A kt_event's payload or its length (not "payloads", a pipe client's flag).
FIELD='(\.|->)[[:space:]]*payload(_len)?\b'
# A record's payload reached by offset: the commands see events, not records.
OFFSET='KT_REC_HEAD'

# Print one line per payload read outside the accessor in the tree at $1;
# return how many.
check_tree() {
  local root=$1 bad=0 file line dirs=()
  for d in ring format recover flush capture tools examples; do
    [[ -d $root/$d ]] && dirs+=("$d")
  done
  while IFS=: read -r file line; do
    [[ $file =~ $ALLOWED ]] && continue
    echo "$file:$line: reads an event's payload; use kt_event_get_value()"
    bad=$((bad + 1))
  done < <(cd "$root" && grep -rnoE --include='*.c' --include='*.h' --include='*.cpp' \
             --include='*.hpp' "$FIELD" "${dirs[@]}" | cut -d: -f1,2 | sort -u)
  while IFS=: read -r file line; do
    [[ $file =~ $ALLOWED ]] && continue
    echo "$file:$line: reads a record's payload by offset; use kt_event_get_value()"
    bad=$((bad + 1))
  done < <(cd "$root" && grep -rnoE --include='*.c' --include='*.h' --include='*.cpp' \
             --include='*.hpp' "$OFFSET" tools examples 2>/dev/null | cut -d: -f1,2 | sort -u)
  return $((bad > 255 ? 255 : bad))
}

self_test() {
  local here tmp n=0 got
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  for d in ring format recover flush capture tools examples; do
    [[ -d $here/$d ]] && cp -r "$here/$d" "$tmp/"
  done
  check_tree "$tmp" >/dev/null || { echo "self-test: the clean tree fails"; return 1; }
  # One planted read of each kind, in a command, a sub-folder, the library
  # and an example.
  printf 'static unsigned long long v(const kt_event *ev)\n{\n\tunsigned long long x;\n\tmemcpy(&x, ev->payload, 8);\n\treturn x;\n}\n' \
    >>"$tmp/tools/analysis/report.c"; n=$((n + 1))
  mkdir -p "$tmp/tools/planted"
  printf 'static int n(kt_event e) { return e.payload_len; }\n' >"$tmp/tools/planted/x.c"
  n=$((n + 1))
  printf 'static int b(const unsigned char *r) { return r[KT_REC_HEAD]; }\n' \
    >>"$tmp/tools/cmd/when.c"; n=$((n + 1))
  printf 'static int c(const kt_event *ev) { return ev -> payload[0]; }\n' \
    >>"$tmp/format/names.c"; n=$((n + 1))
  printf 'static int d(const kt_event &ev) { return ev.payload[0]; }\n' \
    >>"$tmp/examples/particles.cpp"; n=$((n + 1))
  got=0
  check_tree "$tmp" >/dev/null || got=$?
  if ((got != n)); then
    echo "self-test: $n planted payload reads, $got caught"
    return 1
  fi
  echo "check-payload self-test: $n of $n planted payload reads caught"
}

if [[ ${1:-} == --self-test ]]; then
  self_test
  exit
fi
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
bad=0
check_tree "$root" || bad=$?
if ((bad)); then
  echo "check-payload: $bad payload read(s) outside kt_event_get_value()"
  exit 1
fi
echo "check-payload: no payload read outside kt_event_get_value()"
