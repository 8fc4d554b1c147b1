#!/usr/bin/env python3
"""Writes tools/link-order.txt: the functions a typical hilo-opt run executes.

    scripts/gen-link-order.py [--build build] [--out tools/link-order.txt]

The static tools are linked by ld.lld with this file as its
--symbol-ordering-file (HILO_LINK_ORDER, cmake/LinkOrder.cmake): the listed
functions and data come first in their output sections, in the order listed,
so the code a run executes is contiguous. The kernel maps a 64 KB window around every page
fault on the binary, so code spread over the whole text keeps most of the
text resident (docs/performance.md, "eleventh session: start-up memory").

The list is made from whole-process callgrind runs (valgrind, deterministic;
needs valgrind) of the build directory's tools on inputs the script writes:
  1. hilo-opt, a one-instruction module, round trip (start-up, smallest run);
  2. every CPU variant of the glibc string functions (1) ran
     (`__memcpy_avx_unaligned_erms` -> `__memcpy_evex_unaligned_erms`, ...):
     glibc picks one per CPU at start-up, and valgrind's CPU is not the
     machine's; grouped by variant;
  3. hilo-opt, a `hilo-gen -L 50` module (198 KB: past the parser's first
     140 KB progress step, which every module above that size takes), round
     trip;
  4. the same module through --passes=neuron-collective-pipeline,dce;
  5. `hilo-gen -L 50` itself (the tools share the list; a name a tool does
     not define is ignored);
  5b. the corpus's mixtral module, round trip, when ../shared is there;
  5c. the `hilo-gen -L 50` module as a binary HloModuleProto, read and
      written (`gen.pb -o out.pb`): a proto run's code, after every text
      group, so that its pages are dense too;
  6. the data symbols (1) reads (valgrind's lackey): data pages are mapped
     64 KB at a time too.
Each group lists what earlier groups did not, sorted by name: the list
depends only on which code runs, not on the current layout, and two runs
give the same file. A local name defined in several objects (a
`[clone .isra.0]` of a std::string member) moves all of them: with
-ffunction-sections each is a small section, but in an archive built without
it (libprotobuf, libc) the object's whole .text. libprotobuf's are therefore
laid out after all other code (cmake/resident-layout.ld; docs/performance.md,
"twenty-ninth session: the binary's resident windows").

A stale or missing entry only costs memory and speed, never the build: lld
ignores names it does not find (--no-warn-symbol-ordering). Rerun after large
changes to what a round trip executes; the output is sorted and diffable.
"""
import argparse
import bisect
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = "HloModule t\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n"
# The largest corpus module (issue 18's 4x), when ../shared is there: the
# code it runs beyond (3) and (4) (more opcodes' verifier and printer paths)
# is then contiguous too (docs/performance.md, "twelfth session"; llama,
# the next largest, runs nothing mixtral does not).
CORPUS = ["xla__tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_1x8.hlo"]
# Listed with the one-instruction module although a profile may not show them:
# where a thread blocks or wakes the other (runs only when the main thread has
# to wait for the verifier thread, a race, so one profile may show it and the
# next not: std::future's futex calls and glibc's `syscall`), the printer's
# buffer filling up exactly at a one-character append (Writer::Flush: the
# output's bytes decide; `hilo-gen -L 300` takes it, -L 50 not), and
# glibc's set-up of the vDSO in a static program (_dl_non_dynamic_init:
# setup_vdso, dl_vdso_vsym), which runs natively but not under valgrind (it
# gives the program no vDSO); unlisted, it kept a 64 KB window of its own
# resident near the end of the text (docs/performance.md, "nineteenth
# session: the small modules' resident code").
ALWAYS = ["__futex_abstimed_wait_cancelable64", "__futex_abstimed_wait_common",
          "_ZNSt28__atomic_futex_unsigned_base19_M_futex_notify_allEPj",
          "_ZNSt28__atomic_futex_unsigned_base19_M_futex_wait_untilEPjjbNSt6chrono8durationIlSt5"
          "ratioILl1ELl1EEEENS2_IlS3_ILl1ELl1000000000EEEE", "syscall",
          "_ZN4hilo12_GLOBAL__N_16Writer5FlushEv",
          "_dl_new_object", "_dl_add_to_namespace_list", "_dl_setup_hash",
          "_dl_lookup_symbol_x", "do_lookup_x", "check_match"]
# Profiles per run, their union listed: what runs differs from one profile
# to the next where the verifier thread and the printer race (which of them
# waits, which std::string copy the waiting side makes), and a function one
# profile missed and a run executes costs a 64 KB window of its own.
PROFILES = 3
# glibc's multiarch variants: __<function>_<instruction set>[_...]
VARIANT = re.compile(r"^(__[a-z0-9]+)_(sse2|ssse3|sse4_1|sse4_2|sse42|avx|avx2|avx512|evex|erms)(?=_|$)")


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs).stdout


def symbols_of(binary, types):
    """(start, size, name, nm type) of every symbol of an nm type in `types`, by address.
    A symbol without a size (crtbegin.o's functions) extends to the next one."""
    out = []
    for line in run(["nm", "--numeric-sort", "--print-size", "--defined-only", binary]).splitlines():
        parts = line.split()
        if len(parts) == 3:
            parts.insert(1, "")
        if len(parts) == 4 and parts[2] in types:
            out.append([int(parts[0], 16), parts[1], parts[3], parts[2]])
    for symbol, following in zip(out, out[1:] + [[out[-1][0] + 1]]):
        symbol[1] = int(symbol[1], 16) if symbol[1] else max(following[0] - symbol[0], 1)
    return [tuple(s) for s in out]


class Symbols:
    """Address -> names of the symbols there."""

    def __init__(self, binary, types):
        self.symbols = symbols_of(binary, types)
        self.starts = [s[0] for s in self.symbols]
        self.names = {s[2] for s in self.symbols}

    def names_of_type(self, types):
        return {s[2] for s in self.symbols if s[3] in types}

    def names_at(self, addresses):
        found = set()
        for address in addresses:
            i = bisect.bisect_right(self.starts, address) - 1
            j = i  # every symbol (aliases included) starting where symbol i does
            while j >= 0 and self.symbols[j][0] == self.symbols[i][0]:
                start, size, name, _ = self.symbols[j]
                if start <= address < start + max(size, 1):
                    found.add(name)
                j -= 1
        return found


def read_addresses(binary, args, workdir):
    """Addresses of the data one whole-process run read or modified (valgrind's lackey)."""
    trace = os.path.join(workdir, "lackey.out")
    subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", binary]
                   + args, check=True, capture_output=True, cwd=workdir)
    with open(trace) as f:  # " L 0400a0c8,8" / " M ...": data; "I  ...": instructions
        return {int(line[3:].split(",")[0], 16) for line in f if line.startswith((" L", " M"))}


def executed_addresses(binary, args, workdir):
    """Addresses of the instructions one whole-process callgrind run executed."""
    profile = os.path.join(workdir, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--compress-pos=no",
                    "--compress-strings=no", f"--callgrind-out-file={profile}", binary] + args,
                   check=True, capture_output=True, cwd=workdir)
    with open(profile) as f:
        return {int(line.split()[0], 16) for line in f if line.startswith("0x")}


def cpu_variants(code, names):
    """The group of every CPU variant of the glibc functions in `names` not in it."""
    families = {m.group(1) for m in map(VARIANT.match, names) if m}
    variants = {name for name in code.names
                if (m := VARIANT.match(name)) and m.group(1) in families} - names
    return ("CPU variants of the glibc functions above",
            sorted(variants, key=lambda n: (VARIANT.match(n).group(2), n)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "tools", "link-order.txt"))
    options = parser.parse_args()
    build = os.path.abspath(options.build)  # the runs below work in a scratch folder
    opt = os.path.join(build, "bin", "hilo-opt")
    gen = os.path.join(build, "bin", "hilo-gen")

    code = {tool: Symbols(tool, "tTwWiI") for tool in (opt, gen)}
    # A static program runs the resolver of every IFUNC (glibc's string and
    # math functions pick a CPU variant) when it starts (apply_irel), before
    # main. The profiles under valgrind missed `strcat`'s once, and a native
    # run then kept a 64 KB window for it: they are listed by type.
    resolvers = code[opt].names_of_type("iI")
    data = Symbols(opt, "rRdDbBvV")

    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "tiny.hlo"), "w") as f:
            f.write(TINY)
        run([gen, "-L", "50", "-o", os.path.join(work, "gen.hlo")])
        runs = [("one-instruction module, round trip", opt, ["tiny.hlo", "-o", "out.hlo"]),
                ("hilo-gen -L 50, round trip", opt, ["gen.hlo", "-o", "out.hlo"]),
                ("hilo-gen -L 50, --passes=neuron-collective-pipeline,dce", opt,
                 ["gen.hlo", "--passes=neuron-collective-pipeline,dce", "-o", "out.hlo"]),
                ("hilo-gen -L 50 itself", gen, ["-L", "50", "-o", "gen2.hlo"])]
        for name in CORPUS:
            path = os.path.join(ROOT, "..", "shared", "corpus", "valid", "openxla-xla", name)
            if os.path.exists(path):
                runs.append((f"{name}, round trip", opt, [path, "-o", "out.hlo"]))
        run([opt, os.path.join(work, "gen.hlo"), "-o", os.path.join(work, "gen.pb")])
        runs.append(("hilo-gen -L 50 as a binary proto, read and written", opt,
                     ["gen.pb", "-o", "out.pb"]))
        listed = set()
        groups = []
        for title, binary, args in runs:
            names = set()
            for _ in range(PROFILES):
                names |= code[binary].names_at(executed_addresses(binary, args, work))
            if not groups:
                names |= set(ALWAYS) & code[opt].names
                names |= resolvers
            names -= listed
            listed |= names
            groups.append((title, sorted(names)))
            if len(groups) == 1:
                groups.append(cpu_variants(code[opt], names))
                listed |= set(groups[-1][1])

        groups.append(("data the one-instruction module reads",
                        sorted(data.names_at(read_addresses(opt, runs[0][2], work)))))

    with open(options.out, "w") as f:
        f.write("# Generated by scripts/gen-link-order.py: do not edit. The functions a typical\n"
                "# hilo-opt run executes and reads, laid out first by ld.lld in the static tools\n"
                "# (HILO_LINK_ORDER, cmake/LinkOrder.cmake). A stale entry costs only memory.\n")
        for title, names in groups:
            f.write(f"# {title}: {len(names)}\n")
            f.writelines(name + "\n" for name in names)
    print(f"{options.out}: " + ", ".join(f"{len(n)} ({t})" for t, n in groups), file=sys.stderr)


if __name__ == "__main__":
    main()
