#!/usr/bin/env python3
"""Runs a command with its standard error on a pseudo-terminal (standard
output and input are left alone) and copies what it wrote there to standard
output, `\\r` and escape sequences kept; then prints `exit=N`.

  run_in_pty.py COMMAND [ARGS...]

For tests of what a tool draws only on a terminal (hilo-opt's progress line).
"""
import os
import pty
import subprocess
import sys


def main():
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(sys.argv[1:], stderr=terminal, stdin=subprocess.DEVNULL)
    os.close(terminal)
    chunks = []
    while True:
        try:
            data = os.read(controller, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            break
        if not data:
            break
        chunks.append(data)
    rc = proc.wait()
    os.close(controller)
    sys.stdout.write(b"".join(chunks).decode("utf-8", "replace"))
    sys.stdout.write(f"\nexit={rc}\n")


if __name__ == "__main__":
    main()
