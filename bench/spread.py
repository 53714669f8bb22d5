#!/usr/bin/env python3
"""min / median / max over several runs of galerkin-bench-gpu (its "all"
lines: whole hierarchies) or spgemm-bench (its product rows), as
BENCHMARKS.md tabulates them:

    bench/spread.py run1/bench_bench.log run2/bench_bench.log run3/bench_bench.log
    bench/spread.py --spgemm run1/spgemm.log run2/spgemm.log run3/spgemm.log
    bench/spread.py --hypre run1/hypre.log run2/hypre.log run3/hypre.log   (hypre-device-bench)
    bench/spread.py --resetup run1/r.log run2/r.log run3/r.log            (hypre-resetup-bench)
    bench/spread.py --lowprec run1/l.log run2/l.log run3/l.log            (bench/lowprec.sh)
    bench/spread.py --gamg call1/gamg.md call2/gamg.md call3/gamg.md      (bench/petsc_gamg.sh tables of
                    one run each, e.g. one per device call: min / median / max over them, the
                    iterations seen, the median peak memory)
    bench/spread.py --cpu run1.log run2.log run3.log                       (galerkin-bench on the CPU,
                    with PETSc: first and re-run times, PETSc / tilerap per run)
    bench/spread.py --levels old1.log old2.log --vs new1.log new2.log
                    (galerkin-bench-gpu logs of two libraries, e.g. alternated in
                    one call: each level's first time and re-run, the minimum
                    over each side's logs, and new / old)
    bench/spread.py --tc run1/tc.log run2/tc.log run3/tc.log [--fills bench.log]
                    (galerkin-bench-gpu --tc: each level's re-run without tensor
                    cores and at each threshold; --fills: a galerkin-bench-gpu log
                    of the same cases, for the mean pair fill(A) fill(P) / 16)

Ratios are reference / tilerap of the medians (above 1: tilerap faster);
the first call's spread is over the runs, the later calls' over runs and
repetitions (each run's min, median and max)."""
import re
import statistics
import sys


def mmm(xs, fmt="%.3f"):
    return " / ".join(fmt % v for v in (min(xs), statistics.median(xs), max(xs)))


def galerkin(files):
    pat = re.compile(r"^(\S+)\s+all\s+tilerap first ([\d.]+) ms, numeric ([\d.]+) ms \| cuSPARSE first ([\d.]+) ms, "
                     r"reuse ([\d.]+) ms .*?peak MB tilerap ([\d.]+) cuSPARSE ([\d.]+)"
                     r"(?: \| re-run peak MB tilerap ([\d.]+) cuSPARSE ([\d.]+))? (\S+)$")
    rows = {}
    for f in files:
        for line in open(f):
            m = pat.match(line)
            if m:
                g = m.groups()
                rows.setdefault(g[0], []).append([float(x) if x else -1.0 for x in g[1:9]] + [g[9]])
    print("| case | runs | tilerap first | cuSPARSE first | ratio | tilerap re-run | cuSPARSE re-run | ratio "
          "| peak MB first, tilerap / cuSPARSE | peak MB re-runs, tilerap / cuSPARSE | check |")
    print("|---|---:|---|---|---:|---|---|---:|---|---|---|")
    for name, rs in rows.items():
        col = list(zip(*rs))
        tf, tn, cf, cn = (statistics.median(col[i]) for i in range(4))
        rerun = "%.0f / %.0f" % (max(col[6]), max(col[7])) if min(col[6]) >= 0 else "n/a"
        print("| %s | %d | %s | %s | %.2f× | %s | %s | %.2f× | %.0f / %.0f | %s | %s |" % (
            name, len(rs), mmm(col[0]), mmm(col[2]), cf / tf, mmm(col[1]), mmm(col[3]), cn / tn,
            max(col[4]), max(col[5]), rerun, "ok" if all(c == "ok" for c in col[8]) else "FAIL"))


def cpu(files):
    # "CASE all csr2tile tr_first tr_num1 tr_num petsc_1st petsc_re x1st xnum1 xnum"
    rows = {}
    for f in files:
        for line in open(f):
            w = line.split()
            if len(w) == 11 and w[1] == "all":
                rows.setdefault(w[0], []).append([float(x) for x in w[2:]])
    print("| case | runs | tilerap first | PETSc first | ratio | tilerap re-run | PETSc re-run | ratio |")
    print("|---|---:|---|---|---:|---|---|---:|")
    for name, rs in rows.items():
        col = list(zip(*rs))
        print("| %s | %d | %s | %s | %.2f–%.2f | %s | %s | %.2f–%.2f |" % (
            name, len(rs), mmm(col[1], "%.1f"), mmm(col[4], "%.1f"), min(col[6]), max(col[6]), mmm(col[3], "%.1f"),
            mmm(col[5], "%.1f"), min(col[8]), max(col[8])))


def spgemm(files):
    rows = {}
    for f in files:
        for line in open(f):
            p = line.split()
            if len(p) >= 16 and p[1] in ("AA", "AAt", "AAd") and p[-1] in ("ok", "WRONG"):
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
            name, {"AA": "A·A", "AAt": "A·Aᵀ", "AAd": "A·A, device CSR"}[op], r["nnz"][0], r["nnz"][1], len(r["v"]), mmm(col[0]), mmm(col[1]),
            mmm(col[2]), mmm(col[3]), med[2] / med[0], med[3] / med[1],
            "ok" if all(c == "ok" for c in r["ok"]) else "WRONG"))


def hypre(files):
    rap = re.compile(r"^rap (\S+)\s+(hypre|cusparse|tilerap)\s.*C nnz\s+(\d+)\s+first\s+([\d.]+) ms\s+min\s+([\d.]+)\s+"
                     r"med\s+([\d.]+)\s+max\s+([\d.]+) ms(.*)$")
    amg = re.compile(r"^amg (\S+)\s+(hypre|cusparse|tilerap)\s+setup\s+([\d.]+) s \(Galerkin products\s+([\d.]+) s.*"
                     r"solve\s+([\d.]+) s\s+iterations\s+(\d+)\s+levels\s+(\d+)\s+operator complexity ([\d.]+)"
                     r"(?:\s+other products ([\d.]+) s)?")
    prod, setup = {}, {}
    for f in files:
        for line in open(f):
            m = rap.match(line)
            if m:
                r = prod.setdefault(m.group(1), {}).setdefault(m.group(2), {"first": [], "rest": [], "peak": [], "ok": True})
                r["first"].append(float(m.group(4)))
                r["rest"] += [float(m.group(i)) for i in (5, 6, 7)]
                tail = m.group(8)
                pk = re.search(r"pool peak ([\d.]+) MB", tail)
                if pk:
                    r["peak"].append(float(pk.group(1)))
                e = re.search(r"relerr ([\d.e+-]+), rows of other structure (\d+)", tail)
                if e and (float(e.group(1)) > 1e-14 or int(e.group(2)) != 0):
                    r["ok"] = False
            m = amg.match(line)
            if m:
                a = setup.setdefault(m.group(1), {}).setdefault(m.group(2), {"setup": [], "gp": [], "it": set(), "oc": set(), "other": []})
                a["setup"].append(float(m.group(3)))
                a["gp"].append(float(m.group(4)))
                a["it"].add(int(m.group(6)))
                a["oc"].add(m.group(8))
                if m.group(9):
                    a["other"].append(float(m.group(9)))
    med = statistics.median
    print("| case | runs | hypre first | cuSPARSE first | tilerap first | hypre later | cuSPARSE later | tilerap later "
          "| hypre / tilerap (first) | cuSPARSE / tilerap (first) | tilerap pool peak MB | C equal |")
    print("|---|---:|---|---|---|---|---|---|---:|---:|---:|---|")
    for name, r in prod.items():
        h, c, t = r["hypre"], r["cusparse"], r["tilerap"]
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %.2f× | %.2f× | %.0f | %s |" % (
            name, len(t["first"]), mmm(h["first"], "%.2f"), mmm(c["first"], "%.2f"), mmm(t["first"], "%.2f"),
            mmm(h["rest"], "%.2f"), mmm(c["rest"], "%.2f"), mmm(t["rest"], "%.2f"), med(h["first"]) / med(t["first"]),
            med(c["first"]) / med(t["first"]), max(t["peak"]), "yes" if c["ok"] and t["ok"] else "NO"))
    print()
    print("| case | hypre setup s (Galerkin s) | cuSPARSE setup s (Galerkin s) | tilerap setup s (Galerkin s) | hypre's other products s (hypre) | iterations hypre / cuSPARSE / tilerap | operator complexity hypre / cuSPARSE / tilerap |")
    print("|---|---|---|---|---|---|---|")
    for name, a in setup.items():
        cells = ["%s (%.4f)" % (mmm(a[k]["setup"], "%.4f"), med(a[k]["gp"])) for k in ("hypre", "cusparse", "tilerap")]
        its = " / ".join(",".join(str(i) for i in sorted(a[k]["it"])) for k in ("hypre", "cusparse", "tilerap"))
        ocs = " / ".join(",".join(sorted(a[k]["oc"])) for k in ("hypre", "cusparse", "tilerap"))
        other = "%.4f" % med(a["hypre"]["other"]) if a["hypre"]["other"] else "n/a"
        print("| %s | %s | %s | %s | %s | %s | %s |" % (name, cells[0], cells[1], cells[2], other, its, ocs))


def resetup(files):
    """hypre-resetup-bench: per sequence (problem, n, ranks), each way's
    setup times (median full setup, median re-setup, the sequence's total),
    iterations and solve time, spread over the runs; the speed-ups are of
    the medians against the "full" way."""
    pat = re.compile(r"^(\S+)\s+n=(\d+) np=(\d+) (\S+)\s+setups\s+([\d.]+) s \(full\s+(\d+) x median ([\d.]+) s, "
                     r"re-setup\s+(\d+) x median ([\d.]+) s\) solve\s+([\d.]+) s\s+iterations min/mean/max "
                     r"(\d+)/([\d.]+)/(\d+)")
    rows = {}
    for f in files:
        for line in open(f):
            m = pat.match(line)
            if m:
                key = (m.group(1), m.group(2), m.group(3))
                rows.setdefault(key, {}).setdefault(m.group(4), []).append(m.groups()[4:])
    print("| sequence | way | runs | full setup (median of its steps) s | re-setup s | speed-up | "
          "setups of the sequence s | speed-up | iterations mean (max) | solve s |")
    print("|---|---|---:|---|---|---:|---|---:|---|---|")
    for (prob, n, np_), ways in rows.items():
        base = ways.get("full")
        bfull = statistics.median(float(r[2]) for r in base) if base else None
        btot = statistics.median(float(r[0]) for r in base) if base else None
        for way, rs in ways.items():
            tot = [float(r[0]) for r in rs]
            full = [float(r[2]) for r in rs if int(r[1]) > 0]
            re_ = [float(r[4]) for r in rs if int(r[3]) > 0]
            sp1 = "%.1f×" % (bfull / statistics.median(re_)) if re_ and bfull else ""
            sp2 = "%.1f×" % (btot / statistics.median(tot)) if btot and way != "full" else ""
            its = "%s (%s)" % ("/".join(sorted(set(r[7] for r in rs))), "/".join(sorted(set(r[8] for r in rs))))
            print("| %s %s³, %s rank%s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                prob, n, np_, "" if np_ == "1" else "s", way, len(rs), mmm(full, "%.4f") if full else "",
                mmm(re_, "%.4f") if re_ else "", sp1, mmm(tot), sp2, its, mmm([float(r[5]) for r in rs])))


def lowprec(files):
    """galerkin-bench-gpu --tc rows: fp64 and each low precision at the same
    threshold, per section of bench/lowprec.sh (## headers)"""
    row = re.compile(r"^(\S+?)\s+(\d+)\s+(\d+)\s.*fp64@(\d+) ([\d.]+)(.*)$")
    prec = re.compile(r"(tf32|bf16|fp16) ([\d.e+-]+) ([\d.]+)\([\d.]+x\) lp (\d+)/(\d+) tiles (\d+) fb (\d+)")
    secs, order = {}, []
    for f in files:
        sec = ""
        for line in open(f):
            if line.startswith("## "):
                sec = line[3:].strip()
                continue
            m = row.match(line)
            if not m:
                continue
            key = (sec, m.group(1), m.group(2))
            if key not in secs:
                secs[key] = []
                order.append(key)
            ps = {x[0]: (float(x[1]), float(x[2]), int(x[3]), int(x[4]), int(x[5]), int(x[6])) for x in prec.findall(m.group(6))}
            secs[key].append((float(m.group(5)), ps, line.rstrip().endswith("ok")))
    last = None
    for key in order:
        sec, name, lvl = key
        if sec != last:
            print("\n**%s**\n" % sec)
            print("| case | lvl | fp64 ms | tf32: ms (×), relerr | bf16: ms (×), relerr | fp16: ms (×), relerr | "
                  "pairs in low precision / tensor-core pairs, tiles | fp64 fallbacks tf32 / bf16 / fp16 | check |")
            print("|---|---:|---|---|---|---|---|---|---|")
            last = sec
        rs = secs[key]
        f64 = [r[0] for r in rs]
        cells, fb = [], []
        for p in ("tf32", "bf16", "fp16"):
            xs = [r[1][p] for r in rs if p in r[1]]
            if not xs:
                cells.append("")
                fb.append("")
                continue
            ms = [x[1] for x in xs]
            cells.append("%s (%.2f×), %.1e" % (mmm(ms), statistics.median(f64) / statistics.median(ms), max(x[0] for x in xs)))
            fb.append(str(max(x[5] for x in xs)))
        x0 = rs[0][1].get("fp16") or rs[0][1].get("tf32")
        lp = "%d / %d, %d" % (x0[2], x0[3], x0[4]) if x0 else ""
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (name, lvl, mmm(f64), cells[0], cells[1], cells[2], lp,
                                                             " / ".join(fb), "ok" if all(r[2] for r in rs) else "FAIL"))


def tc(files):
    fills = {}
    if "--fills" in files:
        i = files.index("--fills")
        for line in open(files[i + 1]):
            p = line.split()
            # case lvl n nnzA nnzP nnzC (5 times) (speed-ups, num/floor) (4 errors) check path fill(A) fill(P) MB ...
            if len(p) > 22 and p[1].isdigit() and p[18] in ("ok", "FAIL"):
                name = p[0].replace("/sfc", "") + ":sfc" if "/sfc" in p[0] else p[0]
                fills[(name, p[1])] = float(p[20]) * float(p[21]) / 16.0
        files = files[:i] + files[i + 2:]
    rows, thr = {}, None
    for f in files:
        for line in open(f):
            if line.startswith("# case") and "tc=" in line:
                thr = line.split("tc=")[1].split()[0].split(",")
                continue
            p = line.split()
            if line.startswith("#") or len(p) < 8 or not p[1].isdigit():
                continue
            try:
                v = [float(p[6])] + [float(x.split("(")[0]) for x in p[7:7 + len(thr)]]
            except (ValueError, TypeError):
                continue
            rows.setdefault((p[0], p[1]), []).append(v)
    print("| case | lvl | fill(A)·fill(P)/16 | off | " + " | ".join(thr) + " |")
    print("|---|---:|---:|---|" + "---|" * len(thr))
    for (name, lvl), rs in rows.items():
        col = list(zip(*rs))
        off = statistics.median(col[0])
        mp = "%.0f" % fills[(name, lvl)] if (name, lvl) in fills else "—"
        cells = ["%.3f (%.2f×)" % (statistics.median(c), off / statistics.median(c)) for c in col[1:]]
        print("| %s | %s | %s | %.3f–%.3f | %s |" % (name, lvl, mp, min(col[0]), max(col[0]), " | ".join(cells)))


def gamg(files):
    """bench/petsc_gamg.sh tables (its "| case | type | ..." rows): each
    column's first number (a table of one run: that run) over the files"""
    rows, order = {}, []
    head = None
    for f in files:
        for line in open(f):
            if not line.startswith("| ") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "case":
                head = line.strip()
                continue
            key = (cells[0], cells[1])
            if key not in rows:
                rows[key] = []
                order.append(key)
            rows[key].append(cells[2:])
    if head is None:
        sys.exit("--gamg: no bench/petsc_gamg.sh table in " + " ".join(files))
    print(head.replace("| iterations |", "| runs | iterations |"))
    print("|" + "---|" * (len(head.strip("|").split("|")) + 1))
    for key in order:
        runs = rows[key]
        out = []
        for j in range(len(runs[0])):
            cells = [r[j] for r in runs]
            if j == 6:  # iterations, as the runs gave them
                its = sorted({i.strip() for c in cells for i in c.split(",") if i.strip()}, key=int)
                out.append("%d | %s" % (len(runs), ", ".join(its)))
                continue
            vals = [float(c.split("/")[0]) for c in cells]
            if j == 7:  # peak memory: the median
                out.append("%.0f" % statistics.median(vals))
            elif all(v == 0 for v in vals):
                out.append("—")
            else:
                out.append(mmm(vals))
        print("| %s | %s | %s |" % (key[0], key[1], " | ".join(out)))


def levels(args):
    """per level of galerkin-bench-gpu logs: old (before --vs) against new"""
    if "--vs" not in args:
        sys.exit("--levels OLD.log ... --vs NEW.log ...")
    i = args.index("--vs")
    sides = (args[:i], args[i + 1:])
    best = [{}, {}]
    order = []
    for s, files in enumerate(sides):
        for f in files:
            for line in open(f):
                w = line.split()
                if len(w) < 12 or line.startswith("#") or not w[1].isdigit():
                    continue
                key = (w[0], int(w[1]))
                if key not in order:
                    order.append(key)
                first, num, cs = float(w[6]), float(w[7]), float(w[9])
                path = w[-6] if len(w) >= 6 and w[-3] == "MB" else ""
                b = best[s].get(key)
                best[s][key] = (first, num, cs, path) if b is None else (min(b[0], first), min(b[1], num),
                                                                         min(b[2], cs), path)
    print("| case | level | path | first old | first new | re-run old | re-run new | new / old | cuSPARSE re-run |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for key in order:
        if key not in best[0] or key not in best[1]:
            continue
        o, n = best[0][key], best[1][key]
        print("| %s | %d | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |" % (key[0], key[1], n[3], o[0], n[0], o[1], n[1],
                                                                            n[1] / o[1] if o[1] else 0, min(o[2], n[2])))


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    if args[0] == "--spgemm":
        spgemm(args[1:])
    elif args[0] == "--hypre":
        hypre(args[1:])
    elif args[0] == "--resetup":
        resetup(args[1:])
    elif args[0] == "--cpu":
        cpu(args[1:])
    elif args[0] == "--gamg":
        gamg(args[1:])
    elif args[0] == "--lowprec":
        lowprec(args[1:])
    elif args[0] == "--tc":
        tc(args[1:])
    elif args[0] == "--levels":
        levels(args[1:])
    else:
        galerkin(args)
