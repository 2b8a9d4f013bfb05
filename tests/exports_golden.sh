#!/usr/bin/env bash
# exports_golden.sh KATRA [--write] - every fixture of tests/data/*.katra in
# every output katra makes of a trace, byte for byte: its exports (Chrome,
# Chrome --complete, collapsed stacks, Perfetto plain, --zstd and
# --deflate, FXT), dump (text and jsonl), stats (text and --json), info,
# verify --json, the HTML report, and its rewrites (decompress, compress,
# slice).  Each output's SHA-256 is compared with tests/data/exports.sha256;
# --write writes that file instead.
#
# Why: issue #29's refactors (the API in one shape, one value accessor,
# tools/ in sub-rooms, the options' given bits) changed no output byte, and
# the next refactor must not either: the 170 outputs of the 10 fixtures
# then were the same from a build of 4768230, main before the first of
# them, and from h35-house at fc9aba7.  Format version 4 (processes) then
# renamed the v3 fixtures and writes version 4 in every rewrite, so the
# file was written again after that merge (the exports and dumps of the
# renamed fixtures kept their hashes; bench/RESULTS.md, session 4b).  A
# change of any byte fails here with the output named (its diff is then
# yours to read: run both katra binaries on the fixture); a change meant
# (a new fixture, a format version) writes the file again with --write,
# in the commit that makes it.
#
# The outputs are made in a scratch directory from copies of the fixtures,
# so that the paths they print are the same in every checkout.
set -euo pipefail
usage='usage: exports_golden.sh KATRA [--write]'
case ${1:-} in
  -h|--help) echo "$usage"; exit 0 ;;
  '' | -*) echo "$usage" >&2; exit 2 ;;
esac
katra=$1
[[ -x $katra && -f $katra ]] || { echo "exports_golden.sh: $katra is not an executable file" >&2; exit 2; }
katra=$(cd "$(dirname "$katra")" && pwd)/$(basename "$katra")
data=$(cd "$(dirname "${BASH_SOURCE[0]}")/data" && pwd)
want=$data/exports.sha256
tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# One output: "NAME.KIND" made by CMD (which writes OUT, or stdout when
# OUT is "-"); its exit status is kept in the list, so a command that
# starts failing shows too.
out() { # $1 kind, $2 out file or -, rest: the command
  local kind=$1 o=$2 rc=0
  shift 2
  if [[ $o == - ]]; then
    "$@" >"$f.$kind" 2>/dev/null || rc=$?
  else
    rm -f "$o"
    "$@" >/dev/null 2>&1 || rc=$?
    [[ -f $o ]] && mv "$o" "$f.$kind" || : >"$f.$kind"
  fi
  printf '%s  %s.%s rc=%d\n' "$(sha256sum <"$f.$kind" | cut -d' ' -f1)" "$f" "$kind" "$rc"
  rm -f "$f.$kind"
}

list() {
  local f
  for src in "$data"/*.katra; do
    f=$(basename "$src" .katra)
    cp "$src" "$f.katra"
    out chrome.json x.json "$katra" export --chrome "$f.katra" x.json
    out complete.json x.json "$katra" export --chrome --complete "$f.katra" x.json
    out folded x.folded "$katra" export --collapsed "$f.katra" x.folded
    out pftrace x.pftrace "$katra" export --perfetto "$f.katra" x.pftrace
    out zstd.pftrace x.pftrace "$katra" export --perfetto --zstd "$f.katra" x.pftrace
    out deflate.pftrace x.pftrace "$katra" export --perfetto --deflate "$f.katra" x.pftrace
    out fxt x.fxt "$katra" export --fxt "$f.katra" x.fxt
    out dump.txt - "$katra" dump "$f.katra"
    out dump.jsonl - "$katra" dump --format jsonl "$f.katra"
    out stats.txt - "$katra" stats "$f.katra"
    out stats.json - "$katra" stats --json "$f.katra"
    out info.txt - "$katra" info "$f.katra"
    out verify.json - "$katra" verify --json "$f.katra"
    out report.html x.html "$katra" report "$f.katra" -o x.html
    out decompressed.katra x.katra "$katra" decompress "$f.katra" x.katra
    out compressed.katra x.katra "$katra" compress "$f.katra" x.katra
    out slice.katra x.katra "$katra" slice "$f.katra" x.katra
    rm -f "$f.katra"
  done
}

if [[ ${2:-} == --write ]]; then
  list >"$want"
  echo "exports_golden: $(wc -l <"$want") outputs written to $want"
  exit 0
fi
list >got
if ! diff -u "$want" got; then
  echo "exports_golden: the outputs above differ from $want" >&2
  exit 1
fi
echo "exports_golden: $(wc -l <got) outputs of $(ls "$data"/*.katra | wc -l) fixtures byte-identical"
