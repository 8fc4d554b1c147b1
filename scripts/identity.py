#!/usr/bin/env python3
"""Byte-identity set: the output of BINARY on a seventh of the corpus plus a generated module,
under 12 configurations (passes, flags, text and binary proto output). One line per file and
configuration: sha1 of stdout and of stderr, and the exit status. Run it for two binaries and
`cmp` the two files: a change that should not change any output must leave them equal.

Usage: scripts/identity.py BINARY OUT [SHARED_DIR]   (default: $HILO_SHARED_DIR, else ../shared)
Needs /tmp/L170.hlo (scripts/perf-inputs.sh). 324 files x 12 = 3,888 lines; about 5 min.
"""
import glob
import hashlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

binary, out = sys.argv[1], sys.argv[2]
# Resolved, so that the paths in error messages are the same from any checkout.
shared = os.path.realpath(sys.argv[3] if len(sys.argv) > 3 else
                          os.environ.get('HILO_SHARED_DIR') or
                          os.path.join(os.path.dirname(__file__), '..', '..', 'shared'))
if not os.path.isdir(os.path.join(shared, 'corpus', 'valid')):
    # Without the corpus the set would shrink to the generated module's 12 lines, and two
    # binaries would compare equal on almost nothing.
    sys.exit(f'identity.py: no corpus at {shared}/corpus/valid: pass SHARED_DIR or set HILO_SHARED_DIR')
files = sorted(glob.glob(os.path.join(shared, 'corpus/valid/**/*.hlo'), recursive=True))[::7]
files.append('/tmp/L170.hlo')
pipeline = '--passes=neuron-collective-pipeline,dce'
configs = [[], [pipeline], ['--passes=neuron_looped_einsum_replacer'],
           ['--passes=neuron_looped_einsum_token_replacer'],
           ['--passes=neuron_looped_einsum_token_replacer', '--collective-matmul-nxd'],
           ['--passes=aws_neuron_collective_stream_id_injector'],
           ['--passes=collective-stream-id-checker'],
           ['--passes=neuron_unique_channel_id_enforcer'], ['--passes=dce'],
           [pipeline, '--collective-matmul-nxd', '--explain', '--report=-', '-o', '/dev/null'],
           ['--emit=pb'], [pipeline, '--emit=pbtxt']]


def sha(b):
    return hashlib.sha1(b).hexdigest()[:16]


def run(job):
    path, i = job
    p = subprocess.run([binary, path] + configs[i], capture_output=True)
    return f'{os.path.relpath(path, shared) if path.startswith(shared) else path}\t{i}\t{sha(p.stdout)}\t{sha(p.stderr)}\t{p.returncode}\n'


jobs = [(f, i) for f in files for i in range(len(configs))]
with ThreadPoolExecutor(2) as pool, open(out, 'w') as f:
    f.writelines(pool.map(run, jobs))
print(f'{len(jobs)} lines in {out}')
