"""Prints the function each .init_array entry of an executable points at.

    python3 init-array.py PROGRAM   (a path, or a name found on PATH)

One name per line, in the array's order; `?` for an address no symbol
starts at. Used by lazy-registration.test (readelf and nm from binutils).
"""
import shutil
import struct
import subprocess
import sys

path = shutil.which(sys.argv[1]) or sys.argv[1]
sections = subprocess.run(["readelf", "-W", "-S", path], check=True, capture_output=True,
                          text=True).stdout
entries = []
for line in sections.splitlines():
    fields = line.replace("[ ", "[").split()
    if len(fields) > 5 and fields[1] == ".init_array":
        offset, size = int(fields[4], 16), int(fields[5], 16)
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(size)
        entries = [struct.unpack_from("<Q", data, i)[0] for i in range(0, size, 8)]
names = {}
for line in subprocess.run(["nm", "--defined-only", path], check=True, capture_output=True,
                           text=True).stdout.splitlines():
    fields = line.split()
    if len(fields) == 3 and fields[1] in "tT":
        names.setdefault(int(fields[0], 16), fields[2])
for address in entries:
    print(names.get(address, "?"))
