#!/usr/bin/env python3
"""What the passes add to hilo-opt's round trip, whole process (issue 18, goal 1).

Usage: bench/pass_cost.py [--rounds N] [--module FILE] [--opt NAME=BINARY ...] [--only X,Y]

Each round runs, for every binary (default build/bin/hilo-opt), back to back:
  rt     hilo-opt M -o /dev/null                    (parse + verify + print)
  all    hilo-opt M --passes=neuron-collective-pipeline,dce -o /dev/null
  <pass> hilo-opt M --passes=<pass> -o /dev/null    (each pass of the pipeline, and dce)
under `/usr/bin/time -f '%U %S %M'`, and prints per command the minimum over
the rounds of user + sys CPU seconds (the figure to trust on a shared
machine), the minimum wall time, the largest peak RSS, and the extra cost
over the same binary's round trip: min CPU / min round-trip CPU - 1, and the
median over rounds of the per-round ratio - 1. M defaults to the module
scripts/bench.sh times (`hilo-gen --layers 17000`, 374,006 instructions),
generated into /tmp once. The load average is printed before and after.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time

PASSES = [
    "collective-stream-id-checker",
    "neuron_looped_einsum_replacer",
    "neuron_looped_einsum_token_replacer",
    "aws_neuron_collective_stream_id_injector",
    "neuron_unique_channel_id_enforcer",
    "dce",
]


def run(argv):
    """(user + sys CPU s, wall s, peak RSS KiB) of one run of argv."""
    start = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%U %S %M"] + argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"pass_cost: failed ({out.returncode}): {shlex.join(argv)}\n{out.stderr}")
    user, system, rss = out.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), wall, int(rss)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--module", default="/tmp/hilo-pass-cost-L17000.hlo")
    parser.add_argument("--opt", action="append", default=[],
                        help="NAME=BINARY (repeatable; default new=build/bin/hilo-opt); BINARY may "
                             "start with `env VAR=1`")
    parser.add_argument("--only", default="", help="comma-separated commands (rt, all, passes)")
    parser.add_argument("--extra", default="", help="more hilo-opt flags for every command")
    args = parser.parse_args()
    opts = [o.partition("=")[::2] for o in args.opt] or [("new", f"{root}/build/bin/hilo-opt")]
    if not os.path.exists(args.module):
        gen = f"{root}/build/bin/hilo-gen"
        subprocess.run([gen, "--layers", "17000", "-o", args.module], check=True)
    commands = {"rt": [], "all": ["--passes=neuron-collective-pipeline,dce"]}
    commands.update({p: [f"--passes={p}"] for p in PASSES})
    if args.only:
        keep = args.only.split(",")
        commands = {k: v for k, v in commands.items() if k in keep or k == "rt"}
    extra = shlex.split(args.extra)
    print(f"load average before: {os.getloadavg()}", flush=True)
    results = {}  # (opt, command) -> list of (cpu, wall, rss)
    for _ in range(args.rounds):
        for opt, binary in opts:
            for name, flags in commands.items():
                argv = [*shlex.split(binary), args.module, *flags, *extra, "-o", "/dev/null"]
                results.setdefault((opt, name), []).append(run(argv))
    print(f"load average after: {os.getloadavg()}")
    print(f"{'binary':8s} {'command':42s} {'min cpu':>8s} {'min wall':>8s} {'max rss':>9s}"
          f" {'+cpu (min/min)':>14s} {'+cpu (median of rounds)':>23s}")
    for opt, _ in opts:
        rt = results[(opt, "rt")]
        for name in commands:
            runs = results[(opt, name)]
            cpu = min(r[0] for r in runs)
            line = (f"{opt:8s} {name:42s} {cpu:8.3f} {min(r[1] for r in runs):8.3f}"
                    f" {max(r[2] for r in runs):9d}")
            if name != "rt":
                extra_min = cpu / min(r[0] for r in rt) - 1
                extra_med = statistics.median(a[0] / b[0] for a, b in zip(runs, rt)) - 1
                line += f" {extra_min * 100:13.1f}% {extra_med * 100:22.1f}%"
            print(line)


if __name__ == "__main__":
    main()
