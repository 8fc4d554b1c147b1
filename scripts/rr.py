#!/usr/bin/env python3
"""Round-robin timing of whole commands on a noisy machine (docs/performance.md).

Usage: scripts/rr.py ROUNDS FILE NAME=COMMAND [NAME=COMMAND ...]

Each round runs every COMMAND once, back to back, in the order given (FILE
replaces the word FILE in a command; leading VAR=value words set environment
variables). Prints, per command, the median and quartiles of its wall time,
and the median and quartiles of its per-round ratio to the last command (the
reference, usually `wc -w FILE`). Ratios taken within one round cancel most
of a shared machine's drift, which varies the same binary by +-20%. The same
figures follow for CPU time (user + sys of each command), which a loaded
machine disturbs much less than wall time, and for user time alone (a VM's
system time can jump by a second in one run: page faults under hypervisor
steal).

GNU `wc -w` is about twice as fast in the C.UTF-8 locale as in the C locale:
name the locale (`LC_ALL=C.UTF-8 wc -w FILE`, and `wcC=LC_ALL=C wc -w FILE` beside
it) rather than inherit the shell's.

Example:
  scripts/rr.py 30 mixtral.hlo "new=build/bin/hilo-opt FILE -o /dev/null" \
    "wcC=LC_ALL=C wc -w FILE" "wc=LC_ALL=C.UTF-8 wc -w FILE"
"""
import os
import shlex
import statistics
import subprocess
import sys
import time


def quartiles(values):
    values = sorted(values)
    n = len(values)
    return values[n // 4], statistics.median(values), values[(3 * n) // 4]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    path = sys.argv[2]
    commands = []
    for spec in sys.argv[3:]:
        name, _, command = spec.partition("=")
        words = shlex.split(command)
        env = dict(os.environ)
        while words and "=" in words[0] and not words[0].startswith("/"):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        commands.append((name, [path if w == "FILE" else w for w in words], env))
    times = {name: [] for name, _, _ in commands}
    cpu = {name: [] for name, _, _ in commands}  # user + sys of the command
    user = {name: [] for name, _, _ in commands}  # user time alone
    for _ in range(rounds):
        for name, argv, env in commands:
            start = time.perf_counter()
            process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
            _, status, usage = os.wait4(process.pid, 0)
            times[name].append(time.perf_counter() - start)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"rr: {name} failed: {shlex.join(argv)}")
            cpu[name].append(usage.ru_utime + usage.ru_stime)
            user[name].append(usage.ru_utime)
    reference = commands[-1][0]
    for label, values in (("wall", times), ("cpu", cpu), ("user", user)):
        for name, _, _ in commands:
            low, mid, high = quartiles(values[name])
            line = (f"{label:4s} {name:12s} median {mid * 1000:8.1f} ms  "
                    f"quartiles {low * 1000:.1f}-{high * 1000:.1f}")
            if name != reference:
                ratios = [a / b for a, b in zip(values[name], values[reference])]
                low, mid, high = quartiles(ratios)
                line += f"  ratio to {reference}: median {mid:.2f}, quartiles {low:.2f}-{high:.2f}"
            print(line)


if __name__ == "__main__":
    main()
