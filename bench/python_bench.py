#!/usr/bin/env python3
"""Cost of the Python layer on a large module (docs/performance.md, "Python").

Generates the 300k-instruction module (hilo-gen -n 300000) and, in one process,
in interleaved rounds:
  cpp      hilo._hilo._time_cpp_parse(text): ParseHloModule in C++, no Python in the timed part
  python   hilo.parse(text, verify=False): the same parse through the binding
  python+v hilo.parse(text): with the verifier, as parse() runs by default
then the time to iterate over every instruction from Python (module.instructions, and
computation by computation) reading opcode, name and shape.

Module teardown is outside every timed part. Each part is timed in wall time and in
the calling thread's CPU time (the parse runs on the calling thread, the GIL released):
on a shared machine the wall time follows the other sessions' load, the CPU time much
less. The rounds interleave the variants; medians, minimums and the quartiles of the
per-round ratios are printed, with the load average.

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
    """(wall seconds, this thread's CPU seconds, result) of function()."""
    start, cpu_start = time.perf_counter(), time.thread_time()
    result = function()
    return time.perf_counter() - start, time.thread_time() - cpu_start, result


def summary(label, values):
    return f"{label} median {statistics.median(values) * 1e3:.0f} ms (min {min(values) * 1e3:.0f})"


def ratio_summary(ratios):
    ratios = sorted(ratios)
    n = len(ratios)
    return (f"per-round ratio median {statistics.median(ratios):.3f} "
            f"(quartiles {ratios[n // 4]:.3f}-{ratios[(3 * n) // 4]:.3f})")


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
    walls = {"cpp": [], "python": [], "python+verify": []}
    cpus = {"cpp": [], "python": [], "python+verify": []}
    for _ in range(args.rounds):
        wall, cpu = _hilo._time_cpp_parse(text)
        walls["cpp"].append(wall)
        cpus["cpp"].append(cpu)
        for name, verify in (("python", False), ("python+verify", True)):
            wall, cpu, module = timed(lambda: hilo.parse(text, verify=verify))
            del module
            walls[name].append(wall)
            cpus[name].append(cpu)
    for name in walls:
        line = f"parse {name:14s} {summary('wall', walls[name])}, {summary('cpu', cpus[name])}"
        if name != "cpp":
            line += ("; wall " + ratio_summary([a / b for a, b in zip(walls[name], walls["cpp"])]) +
                     "; cpu " + ratio_summary([a / b for a, b in zip(cpus[name], cpus["cpp"])]))
        print(line)

    module = hilo.parse(text)
    count = module.instruction_count
    loops = {
        "iterate module.instructions reading opcode":
            lambda: sum(1 for i in module.instructions if i.opcode),
        "each computation's instructions": lambda: sum(len(c.instructions) for c in module.computations),
        "read name, opcode and shape of each":
            lambda: len([(i.name, i.opcode, i.shape) for i in module.instructions]),
    }
    walls = {name: [] for name in loops}
    cpus = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, loop in loops.items():
            wall, cpu, n = timed(loop)
            assert n == count
            walls[name].append(wall)
            cpus[name].append(cpu)
    for name in loops:
        print(f"{name} ({count} instructions): {summary('wall', walls[name])}, "
              f"{summary('cpu', cpus[name])}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
