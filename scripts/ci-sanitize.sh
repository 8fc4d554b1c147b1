#!/usr/bin/env bash
# Builds hilo with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DHILO_SANITIZE=ON, GCC) in build-asan/ and runs every CTest test (unit
# tests, the corpus tests, the adversarial inputs). Exits non-zero on any
# build failure, test failure or sanitizer report (UBSan is built with
# -fno-sanitize-recover=all, so a report aborts the test).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HILO_ASAN_BUILD_DIR:-$ROOT/build-asan}
JOBS=${HILO_JOBS:-2}

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHILO_SANITIZE=ON -DHILO_BENCH=OFF -DHILO_FUZZ=OFF \
  -DHILO_WERROR="${HILO_WERROR:-ON}" >"$BUILD.configure.log" 2>&1 \
  || { cat "$BUILD.configure.log" >&2; echo "ci-sanitize: configure failed" >&2; exit 1; }
ninja -C "$BUILD" -j "$JOBS"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" --timeout 1800
echo "ci-sanitize: OK"
