#!/usr/bin/env bash
# memory_bound.sh KATRA ADVERSARY - every katra command on every kind of
# adversarial valid trace (bench/adversary.c) under `ulimit -v 524288`
# (512 MiB of address space).  Each run must succeed (exit 0) or fail with
# one clear message that is not "corrupt" (the files are valid): never a
# crash, never silence.  Prints a table of what each run did.
#
# Registered in ctest only for builds without sanitizers, which reserve
# more address space than the limit.
set -euo pipefail

katra=${1:?usage: memory_bound.sh KATRA ADVERSARY}
adversary=${2:?usage: memory_bound.sh KATRA ADVERSARY}
limit_kb=${KATRA_MEMORY_LIMIT_KB:-524288}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-membound.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Sizes that once took gigabytes: a name id used as a table size, ids near
# 2^32, 8300 records of 64 KiB in batches of 8192 with their payloads (user
# records: hex is quick to print; messages go through JSON escaping), and
# the orders that made the reader's tables grow by insertion.
kinds=(
  "far-ids 2000"
  "huge-ids 20000"
  "large-payloads 531200"
  "large-messages 64000"
  "names-desc 100000"
  "threads-desc 4000"
  "many-threads 4000"
  "unmatched-ends 200000"
  "deep-nesting 200000"
  "escapes 8000"
)

commands=(
  "verify" "info" "stats" "stats --json" "dump" "dump --format jsonl" "replay --max"
  "export --chrome" "export --collapsed" "export --perfetto" "export --fxt" "slice" "compress"
  "decompress" "report" "diff"
)

bad=0
printf '%-16s %-20s %5s  %s\n' "file" "command" "exit" "result"
for entry in "${kinds[@]}"; do
  read -r kind n <<<"$entry"
  file=$tmp/$kind.katra
  "$adversary" "$kind" "$n" "$file"
  for cmd in "${commands[@]}"; do
    read -ra words <<<"$cmd"
    case ${words[0]} in
      export) args=("${words[@]}" "$file" "$tmp/out") ;;
      slice|compress|decompress) args=("${words[@]}" "$file" "$tmp/out") ;;
      report) args=(report "$file" -o "$tmp/out") ;;
      diff) args=(diff "$file" "$file") ;;
      *) args=("${words[@]}" "$file") ;;
    esac
    rc=0
    (ulimit -v "$limit_kb"; exec "$katra" "${args[@]}") >/dev/null 2>"$tmp/err" || rc=$?
    rm -f "$tmp/out"
    msg=$(head -c 200 "$tmp/err" | tr '\n' ' ')
    if ((rc == 0)); then
      result=ok
    elif ((rc == 1)) && [[ -n $msg && $msg != *corrupt* ]]; then
      result="failed clearly: $msg"
    else
      result="BAD: $msg"
      bad=$((bad + 1))
    fi
    printf '%-16s %-20s %5s  %s\n' "$kind" "$cmd" "$rc" "$result"
  done
  rm -f "$file"
done

if ((bad > 0)); then
  echo "memory_bound.sh: $bad run(s) crashed, were silent, or called a valid file corrupt" >&2
  exit 1
fi
echo "memory_bound.sh: every command on every file ran under ulimit -v $limit_kb"
