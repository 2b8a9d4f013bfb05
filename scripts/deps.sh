#!/usr/bin/env bash
# deps.sh - install the Debian 12 packages katra's build, tests, sanitizer
# and fuzz builds need, and those Tracy's tools build against
# (scripts/viewers.sh; zstd is katra's own too).  Idempotent: when everything is already installed it
# prints nothing and exits 0.
set -euo pipefail

pkgs=(
  build-essential      # gcc, make, libc headers
  cmake
  pkg-config
  clang                # sanitizer and libFuzzer builds
  libclang-rt-14-dev   # compiler-rt for clang 14: libclang_rt.fuzzer, asan, ubsan
  llvm-14              # llvm-symbolizer, for readable sanitizer stack traces
  liburing-dev
  liblz4-dev
  libxxhash-dev
  libjansson-dev
  libcriterion-dev
  nettle-dev           # SHA-256
  libzstd-dev          # the archival chunk codec (compact, then zstd)
  libprotobuf-c-dev    # export --perfetto: the protobuf runtime
  protobuf-c-compiler  # protoc-c: tools/perfetto_trace.proto to C at build time
  protobuf-compiler    # protoc: the tests decode the Perfetto export with it
  zlib1g-dev           # export --perfetto --deflate: Perfetto's compressed_packets
  libcapstone-dev      # scripts/viewers.sh: Tracy's tools (its loader links capstone)
  nlohmann-json3-dev   # scripts/viewers.sh: Tracy's import-chrome reads JSON with it
  universal-ctags      # scripts/check-layering.sh, check-size.sh: prototypes, function lengths
  clang-format         # scripts/check-format.sh, with .clang-format
)

missing=()
for p in "${pkgs[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi

echo "deps.sh: installing ${missing[*]}" >&2
log=$(mktemp "${TMPDIR:-/tmp}/katra-deps.XXXXXX.log")
export DEBIAN_FRONTEND=noninteractive
if ! { "${sudo[@]}" apt-get update -qq &&
       "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
         --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "deps.sh: apt-get failed; its output:" >&2
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
