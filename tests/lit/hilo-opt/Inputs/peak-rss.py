#!/usr/bin/env python3
"""peak-rss.py LIMIT_KIB RUNS COMMAND...: runs COMMAND RUNS times under GNU
time (/usr/bin/time, scripts/setup.sh installs it) and fails unless every run
exited 0 with a peak RSS under LIMIT_KIB. Prints each run's peak.

Measured by /usr/bin/time, not by this script's own wait4: a child forked
from Python starts with Python's memory, and the kernel's peak of a process
counts what it had before exec."""
import subprocess
import sys
import tempfile

limit, runs, command = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
peaks = []
with tempfile.NamedTemporaryFile("r") as out:
    for _ in range(runs):
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name] + command, check=True)
        out.seek(0)
        peaks.append(int(out.read().split()[-1]))
print("peak RSS (KiB):", " ".join(map(str, peaks)))
if max(peaks) >= limit:
    sys.exit(f"peak RSS {max(peaks)} KiB in a run, the limit is {limit}")
