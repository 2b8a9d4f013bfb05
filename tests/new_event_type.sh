#!/usr/bin/env bash
# new_event_type.sh SRC_DIR CC [--full] - adding an event type is one row
# of KT_EVENT_TYPES (include/katra/record.h) and nothing else (issue #29).
#
# In a scratch copy of the tree at SRC_DIR, one row is appended to the
# table: type 22, "scratch_gauge", an i64 payload shown as a value.  Then:
#   - the files that differ from an untouched copy are counted: exactly one
#     (record.h), so nothing else had to change;
#   - the accessor (format/value.c), the names (format/names.c) and a probe
#     compile against the new table under -Wall -Wextra -Werror, and the
#     probe checks what the row says: the name, the producer's and the
#     reader's check (kt__record_ok), and the value kt_event_get_value()
#     decodes;
#   - with --full (minutes: the library and the command line tool): the
#     scratch tree builds with warnings as errors, a program writes a trace
#     holding a type-22 record through kt_emit(), and `katra dump` shows it
#     as "scratch_gauge" with its value, text and JSON, and the Chrome
#     export as an instant with it (valid JSON), from the row alone.
# What a reader shows by type rather than by value kind (a Chrome phase, a
# viewer's record) takes a line more where that reader is (ARCHITECTURE.md,
# "Adding an event type"); a type of a known kind needs none.
set -euo pipefail

src=${1:?usage: new_event_type.sh SRC_DIR CC [--full]}
cc=${2:?usage: new_event_type.sh SRC_DIR CC [--full]}
full=${3:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-newtype.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/orig"
tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$tmp/orig" -xf -
cp -a "$tmp/orig" "$tmp/new"

# The one row, appended after the table's last.
rec=$tmp/new/include/katra/record.h
awk '
  /^#define KT_EVENT_TYPES\(X\)/ { intable = 1 }
  intable && !/\\[[:space:]]*$/ {
    print $0 " \\"
    print "\tX(22, KT_EV_SCRATCH_GAUGE, \"scratch_gauge\", KT_PAYLOAD_I64, KT_REC_FLAGS_ZERO, KT_VALUE_I64)"
    intable = 0
    next
  }
  { print }
' "$rec" >"$rec.new"
mv "$rec.new" "$rec"
grep -q 'KT_EV_SCRATCH_GAUGE' "$rec" || { echo "FAIL: the row was not added"; exit 1; }

changed=$( (diff -rq "$tmp/orig" "$tmp/new" || true) | wc -l)
echo "files changed to add an event type: $changed"
diff -rq "$tmp/orig" "$tmp/new" || true
if [ "$changed" -ne 1 ]; then
  echo "FAIL: adding an event type changed $changed files, not 1"
  exit 1
fi

cat >"$tmp/probe.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <katra/reader.h>

int main(void)
{
	const unsigned char p[8] = { 0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	kt_event ev = { .type = KT_EV_SCRATCH_GAUGE, .payload_len = 8, .payload = p };
	kt_value v;
	int ok = kt_event_get_value(&ev, &v) == 1 && v.kind == KT_VALUE_I64 && v.i64 == -7 &&
		 !strcmp(kt_event_type_name(22), "scratch_gauge") &&
		 kt__record_ok(22, 0, 8) && !kt__record_ok(22, 0, 16) && !kt__record_ok(22, 1, 8);
	printf("type 22: %s, value kind %d, i64 %lld\n", kt_event_type_name(22), (int)v.kind,
	       (long long)v.i64);
	return !ok;
}
EOF
"$cc" -std=c11 -Wall -Wextra -Werror -I"$tmp/new/include" -I"$tmp/new" -o "$tmp/probe" \
  "$tmp/probe.c" "$tmp/new/format/value.c" "$tmp/new/format/names.c"
"$tmp/probe" || { echo "FAIL: the new row's value or checks"; exit 1; }

if [ "$full" = --full ]; then
  cmake -S "$tmp/new" -B "$tmp/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKATRA_WERROR=ON \
    -DBUILD_TESTING=OFF >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
  cmake --build "$tmp/build" -j"${KATRA_JOBS:-2}" --target katra_cli katra_static >"$tmp/build.log" 2>&1 ||
    { tail -50 "$tmp/build.log"; echo "FAIL: the scratch tree does not build"; exit 1; }
  cat >"$tmp/writer.c" <<'EOF'
#include <stdint.h>
#include <katra/katra.h>

int main(int argc, char **argv)
{
	kt_session *s = NULL;
	if (argc < 2 || kt_session_start(argv[1], NULL, &s))
		return 1;
	int64_t v = -7;
	kt_emit(KT_EV_SCRATCH_GAUGE, kt_name("gauge"), 0, &v, sizeof(v));
	return kt_session_stop(s, NULL) ? 1 : 0;
}
EOF
  lib=$(find "$tmp/build" -name 'libkatra.a' | head -1)
  "$cc" -std=c11 -Wall -Wextra -Werror -I"$tmp/new/include" -o "$tmp/writer" "$tmp/writer.c" \
    "$lib" $(pkg-config --libs liblz4 libxxhash liburing libzstd) -lpthread
  "$tmp/writer" "$tmp/t.katra" || { echo "FAIL: writing a type-22 record"; exit 1; }
  "$tmp/build/katra" dump "$tmp/t.katra" | tee "$tmp/dump.txt"
  "$tmp/build/katra" dump --format jsonl "$tmp/t.katra" | tee "$tmp/dump.jsonl"
  grep -Eq ' scratch_gauge gauge -7$' "$tmp/dump.txt" &&
    grep -q '"type":"scratch_gauge","name":"gauge","value":-7}' "$tmp/dump.jsonl" ||
    { echo "FAIL: dump does not show the new type's value"; exit 1; }
  # The exports and stats take it too, from the row alone: Chrome shows it
  # as an argument-like instant with its value (tools/pipeline/fmt_mid.c's
  # other_mid()), valid JSON; Perfetto, Fuchsia and stats accept it.
  "$tmp/build/katra" export --chrome "$tmp/t.katra" "$tmp/t.json"
  jq -c '.traceEvents[] | select(.name == "gauge")' "$tmp/t.json" | tee "$tmp/chrome.txt"
  grep -q '"args":{"gauge":-7}' "$tmp/chrome.txt" ||
    { echo "FAIL: Chrome does not show the new type's value"; exit 1; }
  "$tmp/build/katra" export --perfetto "$tmp/t.katra" "$tmp/t.pb"
  "$tmp/build/katra" export --fxt "$tmp/t.katra" "$tmp/t.fxt"
  "$tmp/build/katra" stats --json "$tmp/t.katra" | jq -e . >/dev/null
fi
echo "ok: one row added event type 22; its value read by kt_event_get_value()"
