#!/bin/sh
# Writes the inputs docs/performance.md measures with, into DIR (default /tmp):
#   L300.hlo L600.hlo L1700.hlo L17000.hlo L20000.hlo L40000.hlo  hilo-gen -L N (N layers;
#              L300, 1.2 MB, is where issue 18 goal 2's 3x starts)
#   L170.hlo   the small generated module of the identity set (scripts/identity.py)
#   many.hlo   100,000 small computations, each called once from the entry
#   tiny.hlo   one instruction
#   m.pb       the -L 17000 module as a binary HloModuleProto (m.hlo its text)
# Usage: scripts/perf-inputs.sh [BUILD_DIR] [DIR]
set -eu
build=${1:-build}
dir=${2:-/tmp}
for n in 170 300 600 1700 17000 20000 40000; do
  [ -s "$dir/L$n.hlo" ] || "$build/bin/hilo-gen" -L $n -o "$dir/L$n.hlo"
done
[ -s "$dir/m.hlo" ] || cp "$dir/L17000.hlo" "$dir/m.hlo"
[ -s "$dir/m.pb" ] || "$build/bin/hilo-opt" "$dir/m.hlo" --no-verify -o "$dir/m.pb"
printf 'HloModule t\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n' > "$dir/tiny.hlo"
[ -s "$dir/many.hlo" ] || python3 - 100000 > "$dir/many.hlo" <<'PY'
import sys
n = int(sys.argv[1]); out = sys.stdout
out.write("HloModule many_computations\n\n")
for i in range(n):
    out.write(f"c{i} {{\n  p0 = f32[] parameter(0)\n  p1 = f32[] parameter(1)\n  ROOT a = f32[] add(p0, p1)\n}}\n\n")
out.write("ENTRY main {\n  x = f32[] parameter(0)\n")
for i in range(n):
    out.write(f"  k{i} = f32[] call(x, x), to_apply=c{i}\n")
out.write("  ROOT t = () tuple()\n}\n")
PY
ls -l "$dir"/L*.hlo "$dir/many.hlo" "$dir/tiny.hlo" "$dir/m.pb"
