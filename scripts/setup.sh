#!/usr/bin/env bash
# Sets up a Debian 12 machine for hilo and builds it.
#
#   scripts/setup.sh            install what is missing, configure and build build/
#   scripts/setup.sh --no-build install what is missing only
#
# Idempotent: a package already installed is left alone, apt-get runs only
# when something is missing (then as root, or through sudo), and the build is
# incremental. Environment: HILO_BUILD_DIR (default build/),
# HILO_BUILD_TYPE (default RelWithDebInfo), HILO_JOBS (default: ninja's).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${HILO_BUILD_DIR:-$ROOT/build}
BUILD_TYPE=${HILO_BUILD_TYPE:-RelWithDebInfo}

build=1
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

# What each package is for:
#   cmake ninja-build g++        the build (C++20, GCC 12)
#   libabsl-dev                  Status/StatusOr, hash maps, StrCat, Span
#   libcli11-dev                 command lines of the tools
#   nlohmann-json3-dev           --report JSON
#   libgtest-dev libgmock-dev    unit tests
#   libbenchmark-dev             bench/
#   llvm-14-tools                FileCheck, not, lit (tests/lit)
#   clang-14 libclang-rt-14-dev  libFuzzer and sanitizer runtimes (fuzz/)
#   python3                      lit
#   time                         /usr/bin/time -v for peak memory (bench/)
#   pybind11-dev python3-dev     the Python package `import hilo` (python/)
#   python3-numpy python3-pytest its arrays (hilo.run) and its tests
#   libprotobuf-dev protobuf-compiler  XLA's HLO protos (src/hilo/proto): runtime and protoc
#   libeigen3-dev                the interpreter's dot kernel (src/hilo/eval/ops.cc)
#   lld                          links the static tools in tools/link-order.txt's order
#                                (HILO_LINK_ORDER, cmake/LinkOrder.cmake)
PACKAGES=(cmake ninja-build g++ libabsl-dev libcli11-dev nlohmann-json3-dev libgtest-dev
          libgmock-dev libbenchmark-dev llvm-14-tools clang-14 libclang-rt-14-dev python3 time
          pybind11-dev python3-dev python3-numpy python3-pytest libprotobuf-dev protobuf-compiler
          libeigen3-dev lld)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "setup.sh: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then
      sudo=(sudo)
    else
      echo "setup.sh: missing packages (${missing[*]}) and not root: run as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all packages present"
fi

if ((build)); then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
  ninja -C "$BUILD_DIR" ${HILO_JOBS:+-j "$HILO_JOBS"}
fi
