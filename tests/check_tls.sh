#!/usr/bin/env bash
# check_tls.sh READELF LIBRARY - the library's static TLS (its PT_TLS
# segment's MemSiz) stays under 4 KiB.  glibc places a library's static
# TLS inside every thread's stack, traced or not, and refuses to dlopen()
# a library whose block does not fit the surplus: the emit path needs only
# a few pointers per thread.
set -euo pipefail
readelf=$1 lib=$2
max=4096
headers=$("$readelf" -lW "$lib")
# The TLS line: Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align.
memsz=$(awk '$1 == "TLS" { print $6 }' <<<"$headers")
if [[ -z $memsz ]]; then
  echo "tls: $lib has no TLS segment"; echo "tls: 1 passed, 0 failed"; exit 0
fi
size=$((memsz))
if (( size > max )); then
  echo "FAIL tls: $lib has $size bytes of static TLS (at most $max)"
  echo "tls: 0 passed, 1 failed"
  exit 1
fi
echo "ok tls: $lib has $size bytes of static TLS (at most $max)"
echo "tls: 1 passed, 0 failed"
