#!/usr/bin/env python3
"""min / median / max over several runs of galerkin-bench-gpu (its "all"
lines: whole hierarchies) or spgemm-bench (its product rows), as
BENCHMARKS.md tabulates them:

    bench/spread.py run1/bench_bench.log run2/bench_bench.log run3/bench_bench.log
    bench/spread.py --spgemm run1/spgemm.log run2/spgemm.log run3/spgemm.log

Ratios are reference / tilerap of the medians (above 1: tilerap faster)."""
import re
import statistics
import sys


def mmm(xs, fmt="%.3f"):
    return " / ".join(fmt % v for v in (min(xs), statistics.median(xs), max(xs)))


def galerkin(files):
    pat = re.compile(r"^(\S+)\s+all\s+tilerap first ([\d.]+) ms, numeric ([\d.]+) ms \| cuSPARSE first ([\d.]+) ms, "
                     r"reuse ([\d.]+) ms .*peak MB tilerap ([\d.]+) cuSPARSE ([\d.]+) (\S+)")
    rows = {}
    for f in files:
        for line in open(f):
            m = pat.match(line)
            if m:
                rows.setdefault(m.group(1), []).append([float(x) for x in m.groups()[1:7]] + [m.group(8)])
    print("| case | runs | tilerap first | cuSPARSE first | ratio | tilerap re-run | cuSPARSE re-run | ratio | peak MB tilerap / cuSPARSE | check |")
    print("|---|---:|---|---|---:|---|---|---:|---|---|")
    for name, rs in rows.items():
        col = list(zip(*rs))
        tf, tn, cf, cn = (statistics.median(col[i]) for i in range(4))
        print("| %s | %d | %s | %s | %.2f× | %s | %s | %.2f× | %.0f / %.0f | %s |" % (
            name, len(rs), mmm(col[0]), mmm(col[2]), cf / tf, mmm(col[1]), mmm(col[3]), cn / tn,
            max(col[4]), max(col[5]), "ok" if all(c == "ok" for c in col[6]) else "FAIL"))


def spgemm(files):
    rows = {}
    for f in files:
        for line in open(f):
            p = line.split()
            if len(p) >= 16 and p[1] in ("AA", "AAt") and p[-1] in ("ok", "WRONG"):
                try:
                    v = [float(x) for x in p[7:11]]
                except ValueError:
                    continue
                rows.setdefault((p[0], p[1]), {"nnz": (p[4], p[5]), "v": [], "ok": []})
                rows[(p[0], p[1])]["v"].append(v)
                rows[(p[0], p[1])]["ok"].append(p[-1])
    print("| matrix | op | nnz A | nnz C | runs | tilerap first | tilerap numeric | cuSPARSE first | cuSPARSE reuse | first ratio | numeric ratio | check |")
    print("|---|---|---:|---:|---:|---|---|---|---|---:|---:|---|")
    for (name, op), r in rows.items():
        col = list(zip(*r["v"]))
        med = [statistics.median(c) for c in col]
        print("| %s | %s | %s | %s | %d | %s | %s | %s | %s | %.2f× | %.2f× | %s |" % (
            name, "A·A" if op == "AA" else "A·Aᵀ", r["nnz"][0], r["nnz"][1], len(r["v"]), mmm(col[0]), mmm(col[1]),
            mmm(col[2]), mmm(col[3]), med[2] / med[0], med[3] / med[1],
            "ok" if all(c == "ok" for c in r["ok"]) else "WRONG"))


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    if args[0] == "--spgemm":
        spgemm(args[1:])
    else:
        galerkin(args)
