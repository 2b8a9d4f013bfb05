# sql_common.sh - sourced by the sql_*.sh tests: $tmp (removed at exit
# unless KEEP_TMP is set), fail(), and sql_need_duckdb KATRA, which exits
# 77 (ctest's SKIP_RETURN_CODE) saying why when DuckDB's libduckdb.so is
# not installed.
tmp=$(mktemp -d)
trap '[[ -n ${KEEP_TMP:-} ]] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sql_need_duckdb() { # $1 katra
  if ! "$1" sql 'SELECT 42' >"$tmp/probe" 2>&1; then
    echo "SKIP: DuckDB's libduckdb.so is not installed (scripts/deps.sh installs it):"
    sed 's/^/  /' "$tmp/probe"
    exit 77
  fi
}
