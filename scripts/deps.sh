#!/usr/bin/env bash
# deps.sh - install the Debian 12 packages katra's build, tests, sanitizer
# and fuzz builds need, those Tracy's tools build against (scripts/viewers.sh;
# zstd is katra's own too), and (optional, attempted) DuckDB's libduckdb.so
# for `katra sql`.  Idempotent: when everything is already installed it
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
  libncurses-dev       # katra top: the live screen (curses)
  tmux                 # tests/top_tmux.sh drives katra top in a pane
  libcriterion-dev
  nettle-dev           # SHA-256
  libzstd-dev          # the archival chunk codec (compact, then zstd)
  libdw-dev            # katra's sampled stacks: function names through libdwfl
  liblua5.4-dev        # examples/lua_trace: a Lua host with every call traced (test_lua)
  libelf-dev           # and the mapped files' program headers
  libprotobuf-c-dev    # export --perfetto: the protobuf runtime
  protobuf-c-compiler  # protoc-c: tools/export/perfetto_trace.proto to C at build time
  protobuf-compiler    # protoc: the tests decode the Perfetto export with it
  zlib1g-dev           # export --perfetto --deflate: Perfetto's compressed_packets
  libcapstone-dev      # scripts/viewers.sh: Tracy's tools (its loader links capstone)
  nlohmann-json3-dev   # scripts/viewers.sh: Tracy's import-chrome reads JSON with it
  fuse3                # test_listener: a file whose writes never return (fusermount3)
  libfuse3-dev         # test_listener's one-file filesystem (tests/fuse_stall.c)
  universal-ctags      # scripts/check-layering.sh, check-size.sh: prototypes, function lengths
  clang-format         # scripts/check-format.sh, with .clang-format
)

# DuckDB's library, from npm (install_duckdb below).
duckdb_pkg=@duckdb/node-bindings-linux-x64@1.5.6-r.1
duckdb_dir=/opt/katra-duckdb
duckdb_so=$duckdb_dir/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so

missing=()
for p in "${pkgs[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done
sudo=()
if [[ $(id -u) -ne 0 ]] && { ((${#missing[@]})) || [[ ! -f $duckdb_so ]]; }; then
  command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]} $duckdb_pkg" >&2; exit 1; }
  sudo=(sudo)
fi

apt_install() { # packages...
  local log
  log=$(mktemp "${TMPDIR:-/tmp}/katra-deps.XXXXXX.log")
  export DEBIAN_FRONTEND=noninteractive
  if ! { "${sudo[@]}" apt-get update -qq &&
         "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
           --no-install-recommends "$@"; } >"$log" 2>&1; then
    echo "deps.sh: apt-get failed; its output:" >&2
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

if ((${#missing[@]})); then
  echo "deps.sh: installing ${missing[*]}" >&2
  apt_install "${missing[@]}" || exit 1
fi

# DuckDB, for `katra sql` and `katra export --parquet` (issue 33): optional
# but attempted.  katra builds without it and dlopen()s libduckdb.so at run
# time (tools/cmd/sql_duck.h looks here first); when it cannot be installed,
# its tests skip saying so.  npm's package ships the library as is.
install_duckdb() {
  [[ -f $duckdb_so ]] && return 0
  if [[ $(uname -m) != x86_64 ]]; then
    echo "deps.sh: no $duckdb_pkg for $(uname -m): katra sql's tests will skip" >&2
    return 0
  fi
  echo "deps.sh: installing $duckdb_pkg into $duckdb_dir (npm)" >&2
  command -v npm >/dev/null || apt_install npm || return 1
  "${sudo[@]}" mkdir -p "$duckdb_dir" &&
    "${sudo[@]}" npm install --no-save --no-audit --no-fund --loglevel=error \
      --prefix "$duckdb_dir" "$duckdb_pkg" >&2 && [[ -f $duckdb_so ]]
}
install_duckdb ||
  echo "deps.sh: $duckdb_pkg not installed: katra builds, katra sql's tests will skip" >&2
