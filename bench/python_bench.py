#!/usr/bin/env python3
"""Cost of the Python layer on a large module (docs/performance.md, "Python").

Generates the 300k-instruction module (hilo-gen -n 300000) and, in one process,
in interleaved rounds:
  cpp      hilo._hilo._time_cpp_parse(text): ParseHloModule in C++, no Python in the timed part
  python   hilo.parse(text, verify=False): the same parse through the binding
  python+v hilo.parse(text): with the verifier, as parse() runs by default
then the time to iterate over every instruction from Python (module.instructions, and
computation by computation) reading opcode, name and shape.

Module teardown is outside every timed part. The machine may be shared: the rounds
interleave the variants so that a busy period hits them alike; medians and the median
of per-round ratios are printed, with the load average.

    PYTHONPATH=build/python python3 bench/python_bench.py [--rounds N] [--hilo-gen PATH] [-n N]
"""

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time

import hilo
from hilo import _hilo


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hilo-gen", default=os.path.join(root, "build", "bin", "hilo-gen"))
    parser.add_argument("-n", "--instructions", type=int, default=300000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "generated.hlo")
        subprocess.run([args.hilo_gen, "-n", str(args.instructions), "-o", path], check=True,
                       stderr=subprocess.DEVNULL)
        with open(path) as f:
            text = f.read()
    print(f"python bench: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()}")
    print(f"module: hilo-gen -n {args.instructions}, {len(text) / 1e6:.1f} MB")

    gc.disable()  # a collection inside a timed part would be noise
    cpp, py, pyv, ratios, ratios_v = [], [], [], [], []
    for _ in range(args.rounds):
        t_cpp = _hilo._time_cpp_parse(text)
        t_py, module = timed(lambda: hilo.parse(text, verify=False))
        del module
        t_pyv, module = timed(lambda: hilo.parse(text))
        del module
        cpp.append(t_cpp)
        py.append(t_py)
        pyv.append(t_pyv)
        ratios.append(t_py / t_cpp)
        ratios_v.append(t_pyv / t_cpp)
    print(f"parse: cpp median {statistics.median(cpp) * 1e3:.1f} ms, "
          f"python median {statistics.median(py) * 1e3:.1f} ms, "
          f"per-round ratio median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    print(f"parse + verify (hilo.parse default): median {statistics.median(pyv) * 1e3:.1f} ms "
          f"({statistics.median(ratios_v):.2f}x the C++ parse alone)")

    module = hilo.parse(text)
    count = module.instruction_count
    flat, nested, fields = [], [], []
    for _ in range(args.rounds):
        t, n = timed(lambda: sum(1 for i in module.instructions if i.opcode))
        assert n == count
        flat.append(t)
        t, n = timed(lambda: sum(len(c.instructions) for c in module.computations))
        assert n == count
        nested.append(t)
        t, _ = timed(lambda: [(i.name, i.opcode, i.shape) for i in module.instructions])
        fields.append(t)
    print(f"iterate {count} instructions reading opcode: median {statistics.median(flat) * 1e3:.0f} ms"
          f" (max {max(flat) * 1e3:.0f})")
    print(f"list every computation's instructions: median {statistics.median(nested) * 1e3:.0f} ms")
    print(f"read name, opcode and shape of each: median {statistics.median(fields) * 1e3:.0f} ms"
          f" (max {max(fields) * 1e3:.0f})")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
