#!/usr/bin/env python3
"""Equivalence-check coverage on the real dumps of the shared corpus (issue 17).

Runs `hilo-opt FILE --passes=PIPELINE --check-equivalence [EXTRA...]` on every
real dump of ../shared/corpus/valid (MANIFEST.tsv categories `real-dump:*`,
`neuron-docs` and `xla:benchmark/real-model file`) and tabulates how each run
ends: EQUIVALENT, NOT EQUIVALENT, UNDECIDED (the time budget ran out), or
"cannot decide because ..." with the reason (instruction names and numbers
masked, so equal reasons group together).

  scripts/equivalence_coverage.py [--hilo-opt build/bin/hilo-opt]
      [--corpus ../shared/corpus/valid] [--timeout 60] [--jobs 1]
      [--filter REGEX] [--tsv OUT.tsv] [-- EXTRA hilo-opt flags]

Prints a Markdown table (the one in docs/interpreter.md) and, with --tsv, one
line per file: file, category, outcome, seconds, detail. The outer --timeout
is a safety net only: hilo-opt's own --check-time-budget should end a check
first (it is set to the same value unless EXTRA flags give one).
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import time

VERDICTS = ("EQUIVALENT", "EQUIVALENT (structural)", "EQUIVALENT (cone)", "NOT EQUIVALENT",
            "NOT EQUIVALENT (cone)")
FOLD_TARGET = "AwsNeuronCollectiveMatmul"
REAL_CATEGORIES = ("real-dump:", "neuron-docs", "xla:benchmark/real-model file")


def real_dumps(corpus):
    rows = []
    with open(os.path.join(corpus, "MANIFEST.tsv"), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        cat = header.index("category")
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) <= cat:
                continue
            if fields[cat].startswith(REAL_CATEGORIES):
                rows.append((fields[0], fields[cat]))
    return rows


def mask(text):
    text = re.sub(r"%[\w.\-]+", "%_", text)
    text = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b", "N", text)
    return text


def classify(rc, err):
    lines = [l for l in err.splitlines() if l.strip()]
    if rc == 0 and any(l.startswith("EQUIVALENT") for l in lines):
        verdict = next(l for l in lines if l.startswith("EQUIVALENT"))
        if any("structurally identical" in l for l in lines):
            return "EQUIVALENT (structural)", verdict
        if "(local:" in verdict:
            return "EQUIVALENT (cone)", verdict
        return "EQUIVALENT", verdict
    if rc == 3:
        local = any(l.startswith("NOT EQUIVALENT (local:") for l in lines)
        return ("NOT EQUIVALENT (cone)" if local else "NOT EQUIVALENT",
                next((l for l in lines if "MISMATCH" in l or "failed" in l), ""))
    if rc == 4:
        return "UNDECIDED", next((l for l in lines if "UNDECIDED" in l or "cannot decide" in l),
                                 lines[-1] if lines else "")
    detail = lines[-1] if lines else f"exit {rc}, no message"
    for l in lines:
        if "cannot decide because" in l or "--check-equivalence" in l:
            detail = l
            break
    return f"exit {rc}", detail


def reason_key(outcome, detail):
    if outcome in ("EQUIVALENT", "NOT EQUIVALENT", "EQUIVALENT (cone)", "NOT EQUIVALENT (cone)"):
        m = re.search(r"modulo (.*)", detail)
        return outcome + (" modulo uninterpreted parts" if m else "")
    if outcome == "EQUIVALENT (structural)":
        return outcome
    d = detail
    for cut in ("cannot decide because ", "--check-equivalence: "):
        if cut in d:
            d = d[d.index(cut) + len(cut):]
    d = re.sub(r"^.*?device N \(replica N, partition N\): ", "", mask(d))
    return f"{outcome}: {d[:140]}"


def count_folds(args, extra, path):
    """AwsNeuronCollectiveMatmul calls the passes add to `path` (no check)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        before = f.read().count(FOLD_TARGET)
    p = subprocess.run([args.hilo_opt, path, f"--passes={args.passes}", "-o", "-"] + extra,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    return p.stdout.count(FOLD_TARGET) - before if p.returncode == 0 else 0


def run_one(args, extra, path):
    cmd = [args.hilo_opt, path, f"--passes={args.passes}", "--check-equivalence", "-o", os.devnull]
    if args.has_budget_flag and not any(e.startswith("--check-time-budget") for e in extra):
        cmd.append(f"--check-time-budget={args.timeout}")
    cmd += extra
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=args.timeout + 30)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        rc, err = -1, "killed: outer timeout"
    secs = time.monotonic() - start
    if rc < 0 and rc != -1:
        err += f"\nkilled by signal {-rc}"
    folds = count_folds(args, extra, path) if args.count_folds else 0
    return rc, err, secs, folds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.dirname(here)
    ap.add_argument("--hilo-opt", default=os.path.join(src, "build", "bin", "hilo-opt"))
    ap.add_argument("--corpus", default=os.path.join(src, "..", "shared", "corpus", "valid"))
    ap.add_argument("--passes", default="neuron-collective-pipeline")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--filter", default="")
    ap.add_argument("--tsv", default="")
    ap.add_argument("--from-tsv", default="", help="tabulate a --tsv file of an earlier run")
    ap.add_argument("--count-folds", action="store_true",
                    help=f"also run the passes alone and count the {FOLD_TARGET} calls they add")
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()

    help_text = subprocess.run([args.hilo_opt, "--help"], capture_output=True, text=True).stdout
    args.has_budget_flag = "--check-time-budget" in help_text
    rows = [r for r in real_dumps(args.corpus) if re.search(args.filter, r[0])]
    results = {}
    if args.from_tsv:
        with open(args.from_tsv, encoding="utf-8") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) == 5:  # before the folds column
                    fields.insert(4, "0")
                name, cat, outcome, secs, folds, detail = fields[:5] + ["\t".join(fields[5:])]
                results[name] = (cat, outcome, float(secs), int(folds), detail)
        rows = [r for r in rows if r[0] in results]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_one, args, args.extra, os.path.join(args.corpus, f)): (f, c)
                   for f, c in rows if f not in results}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            f, c = futures[fut]
            rc, err, secs, folds = fut.result()
            outcome, detail = classify(rc, err)
            results[f] = (c, outcome, secs, folds, detail)
            print(f"[{n}/{len(rows)}] {secs:6.1f}s {outcome:15} folds={folds} {f}: {detail[:160]}",
                  file=sys.stderr, flush=True)

    if args.tsv:
        with open(args.tsv, "w", encoding="utf-8") as out:
            for f, _ in rows:
                c, outcome, secs, folds, detail = results[f]
                out.write(f"{f}\t{c}\t{outcome}\t{secs:.1f}\t{folds}\t{detail}\n")

    by_cat = collections.defaultdict(collections.Counter)
    reasons = collections.Counter()
    in_time = 0
    folded = collections.Counter()
    for f, (c, outcome, secs, folds, detail) in results.items():
        group = "Neuron" if "Neuron" in c or "neuron" in c else ("ROCm JAX" if "ROCm" in c else "XLA benchmark")
        verdict = outcome in VERDICTS
        by_cat[group]["files"] += 1
        by_cat[group][outcome if verdict else "no verdict"] += 1
        if verdict and secs <= args.timeout:
            in_time += 1
        reasons[reason_key(outcome, detail)] += 1
        if folds > 0:
            folded[f"{outcome}, {folds} fold{'s' if folds != 1 else ''}: {os.path.basename(f)}"] += 1
    print(f"pipeline `{args.passes}` {' '.join(args.extra)}, budget {args.timeout} s\n")
    print("| dumps | files | EQUIVALENT by running the module | EQUIVALENT by running the changed cone | "
          "EQUIVALENT structurally (no run) | NOT EQUIVALENT | no verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    total = collections.Counter()

    def row(name, c):
        print(f"| {name} | {c['files']} | {c['EQUIVALENT']} | {c['EQUIVALENT (cone)']} | "
              f"{c['EQUIVALENT (structural)']} | {c['NOT EQUIVALENT'] + c['NOT EQUIVALENT (cone)']} | "
              f"{c['no verdict']} |")

    for group in sorted(by_cat):
        total.update(by_cat[group])
        row(group, by_cat[group])
    row("all", total)
    share = 100.0 * in_time / max(1, len(results))
    print(f"\nverdicts within {args.timeout} s: {in_time}/{len(results)} ({share:.0f}%)\n")
    print("| how the check ends | files |")
    print("| --- | --- |")
    for key, n in reasons.most_common():
        print(f"| {key.replace('|', '/')} | {n} |")
    if args.count_folds:
        print(f"\nfiles where the passes add {FOLD_TARGET} calls: {len(folded)}\n")
        for key in sorted(folded):
            print(f"- {key}")


if __name__ == "__main__":
    main()
