#!/usr/bin/env python3
"""section-of.py TOOL NAME...: for each NAME, the output section of TOOL
(a tool on PATH, or a path) that holds a function named NAME (demangled, the
parameter list left out; not a `[clone ...]`), as `NAME: SECTION`
(`NAME: missing` if there is none); for the NAME `--sections`, the
sections TOOL loads, in address order, on one line.
Reads the binary with binutils' nm and readelf."""
import shutil
import subprocess
import sys

tool = shutil.which(sys.argv[1]) or sys.argv[1]
sections = []
for line in subprocess.run(["readelf", "-SW", tool], check=True, capture_output=True,
                           text=True).stdout.splitlines():
    fields = line.replace("[ ", "[").split()
    if len(fields) > 5 and fields[0].startswith("[") and fields[2] == "PROGBITS":
        if int(fields[3], 16):  # loaded (debug sections are not)
            sections.append((int(fields[3], 16), int(fields[5], 16), fields[1]))
functions = []
for line in subprocess.run(["nm", "--demangle", "--defined-only", tool], check=True,
                           capture_output=True, text=True).stdout.splitlines():
    address, kind, name = line.split(" ", 2)
    if kind in "tTwW" and "[clone " not in name:
        functions.append((name.split("(")[0], int(address, 16)))
for wanted in sys.argv[2:]:
    if wanted == "--sections":
        print("sections:", " ".join(name for _, _, name in sorted(sections)))
        continue
    address = next((a for name, a in functions if name == wanted), None)
    where = "missing" if address is None else next(
        (name for start, size, name in sections if start <= address < start + size), "none")
    print(f"{wanted}: {where}")
