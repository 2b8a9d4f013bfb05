#!/usr/bin/env bash
# run.sh BUILD_DIR CC [CMAKE] [SANITIZE] - the install_consumer test.
#
# Installs BUILD_DIR into a fresh temporary prefix, then builds consumer.c
# against it three ways and runs each result:
#   (a) cc $(pkg-config --cflags --libs katra), run with LD_LIBRARY_PATH;
#   (b) a CMake project: find_package(katra REQUIRED), katra::katra;
#   (c) the same project's second executable, katra::katra_static;
#   (d) consumer.cpp (katra.hpp) with g++ and clang++, C++17 and C++20,
#       -pedantic, through pkg-config;
#   (e) consumer.cpp through find_package(katra), katra::katra_static.
# SANITIZE (e.g. address,undefined) is passed on as -fsanitize= when the
# build tree was instrumented.  Any failure fails the test.
set -euo pipefail

if (($# < 2)); then
  echo "usage: $0 BUILD_DIR CC [CMAKE] [SANITIZE]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
cc=$2
cmake=${3:-cmake}
sanitize=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/katra-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

step() { printf '\n== install_consumer: %s\n' "$*"; }
fail() { printf 'install_consumer: FAIL: %s\n' "$*" >&2; exit 1; }

cflags=()
if [[ -n $sanitize ]]; then
  cflags=("-fsanitize=$sanitize" -fno-omit-frame-pointer)
fi

step "cmake --install $build_dir --prefix $prefix"
"$cmake" --install "$build_dir" --prefix "$prefix"

for f in include/katra/katra.h include/katra/reader.h include/katra/error.h; do
  [[ -f $prefix/$f ]] || fail "$f not installed"
done
[[ -x $prefix/bin/katra ]] || fail "bin/katra not installed"
pc=$(find "$prefix" -name katra.pc -path '*/pkgconfig/*' | head -n1)
[[ -n $pc ]] || fail "katra.pc not installed"
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
[[ -e $libdir/libkatra.so ]] || fail "libkatra.so not in $libdir"
# Before 1.0 the soname names the minor version: each may change the ABI.
ver=$("$prefix/bin/katra" --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*' | head -n1)
want_so=libkatra.so.${ver%%.*}
[[ ${ver%%.*} == 0 ]] && want_so=libkatra.so.${ver%.*}
soname=$(objdump -p "$libdir/libkatra.so" | awk '$1 == "SONAME" { print $2 }')
[[ $soname == "$want_so" ]] || fail "soname $soname, not $want_so (version $ver)"
[[ -f $libdir/libkatra.a ]] || fail "libkatra.a not in $libdir"
[[ -f $libdir/cmake/katra/katraConfig.cmake ]] || fail "katraConfig.cmake not in $libdir/cmake/katra"

step "(a) pkg-config: $cc \$(pkg-config --cflags --libs katra)"
export PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pc_cflags=$(pkg-config --cflags katra)
pc_libs=$(pkg-config --libs katra)
[[ $(pkg-config --variable=libdir katra) -ef $libdir ]] ||
  fail "katra.pc libdir $(pkg-config --variable=libdir katra) is not $libdir"
echo "cflags: $pc_cflags"
echo "libs:   $pc_libs"
# shellcheck disable=SC2086  # pkg-config output is a list of words
"$cc" -std=c11 -Wall -Wextra -Werror "${cflags[@]}" "$here/consumer.c" \
  -o "$tmp/consumer_pc" $pc_cflags $pc_libs
# As README says: it runs as built, no LD_LIBRARY_PATH (katra.pc's rpath).
env -u LD_LIBRARY_PATH "$tmp/consumer_pc" || fail "pkg-config consumer exited $?"

step "(b, c) find_package(katra): katra::katra and katra::katra_static"
mkdir -p "$tmp/proj"
cp "$here/consumer.c" "$tmp/proj/"
cat >"$tmp/proj/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(katra_consumer LANGUAGES C)
find_package(katra 0.4 REQUIRED COMPONENTS shared static)
add_executable(consumer_shared consumer.c)
target_link_libraries(consumer_shared PRIVATE katra::katra)
add_executable(consumer_static consumer.c)
target_link_libraries(consumer_static PRIVATE katra::katra_static)
CMAKE
"$cmake" -S "$tmp/proj" -B "$tmp/proj/build" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="-Wall -Wextra -Werror ${cflags[*]}" \
  -DCMAKE_EXE_LINKER_FLAGS="${cflags[*]}"
"$cmake" --build "$tmp/proj/build"
# The shared consumer finds libkatra.so through the build RPATH CMake sets.
"$tmp/proj/build/consumer_shared" || fail "find_package shared consumer exited $?"
"$tmp/proj/build/consumer_static" || fail "find_package static consumer exited $?"
# ldd's output is taken whole first: `ldd | grep -q` under pipefail fails
# when grep exits at its first match and ldd gets SIGPIPE.
libs_static=$(ldd "$tmp/proj/build/consumer_static")
libs_shared=$(ldd "$tmp/proj/build/consumer_shared")
[[ $libs_static != *libkatra* ]] || fail "consumer_static is linked to libkatra.so"
[[ $libs_shared == *libkatra.so* ]] || fail "consumer_shared is not linked to libkatra.so"

# C++: katra.hpp over katra.h, every standard and compiler there is.  The
# same flags a careful C++ project builds with, warnings as errors.
cxxs=()
for c in g++ clang++; do command -v "$c" >/dev/null && cxxs+=("$c"); done
((${#cxxs[@]} > 0)) || fail "no C++ compiler (g++ or clang++)"
for cxx in "${cxxs[@]}"; do
  for std in c++17 c++20; do
    step "(d) C++: $cxx -std=$std -pedantic \$(pkg-config --cflags --libs katra)"
    # shellcheck disable=SC2086  # pkg-config output is a list of words
    "$cxx" -std=$std -Wall -Wextra -Werror -pedantic "${cflags[@]}" "$here/consumer.cpp" \
      -o "$tmp/consumer_cxx" $pc_cflags $pc_libs
    env -u LD_LIBRARY_PATH "$tmp/consumer_cxx" || fail "$cxx -std=$std consumer exited $?"
  done
done

step "(e) C++ through find_package(katra): katra::katra_static, C++20"
mkdir -p "$tmp/projxx"
cp "$here/consumer.cpp" "$tmp/projxx/"
cat >"$tmp/projxx/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(katra_consumer_cxx LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
find_package(katra 0.4 REQUIRED COMPONENTS static)
add_executable(consumer_cxx consumer.cpp)
target_link_libraries(consumer_cxx PRIVATE katra::katra_static)
CMAKE
"$cmake" -S "$tmp/projxx" -B "$tmp/projxx/build" -DCMAKE_CXX_COMPILER="${cxxs[0]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror -pedantic ${cflags[*]}" \
  -DCMAKE_EXE_LINKER_FLAGS="${cflags[*]}"
"$cmake" --build "$tmp/projxx/build"
"$tmp/projxx/build/consumer_cxx" || fail "find_package C++ consumer exited $?"

step "PASS"
