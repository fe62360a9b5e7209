#!/usr/bin/env python3
"""mpi_hosts_check.py — the checks of tests/integration/mpi_hosts.sh (ranks in their own network
and time namespaces, RTT_US from the server through the lab's delay line) over the merged record,
the rank files and the simulator's truth. Prints what it measured; exit 1 when a check fails.

  mpi_hosts_check.py MERGED.jsonl TRUTH.jsonl REPORT.txt RANK0.stderr RTT_US "OFFSET_S..." RANKFILE...
  mpi_hosts_check.py cut REPORT.txt MERGED.jsonl TRUTH.jsonl RANKFILE...   (Ctrl-C of mpirun)
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from numpy_pct import pct  # noqa: E402  (tests/lib: the one percentile rule)
from mpi_check import check, failures, load, run_start, truth_of, ttft_itl


def progress(stderr_path, measured, start, n):
    """Rank 0's plain progress lines against the merged records' finish times (rank 0's clock)."""
    lines = re.findall(r"^latscope: progress: (\d+)/(\d+) requests done, (\d+) failed, ([\d.]+) s elapsed$",
                       open(stderr_path).read(), re.M)
    num = len(measured)
    fin = sorted((r["finished_ns"] - start) / 1e9 for r in measured)
    fin0 = sorted((r["finished_ns"] - start) / 1e9 for r in measured if r["id"] % n == 0)
    upto = lambda v, t: sum(1 for x in v if x <= t)
    check(len(lines) >= 4, f"rank 0 printed {len(lines)} progress lines (>= 4)")
    beyond, bad = 0, []
    for done, jobs, _, t in lines:
        done, jobs, t = int(done), int(jobs), float(t)
        lo, hi = upto(fin, t - 1.0), upto(fin, t + 0.1)
        if jobs != num or not lo <= done <= hi:
            bad.append(f"{done}/{jobs} at {t} s (finished by then: {lo}..{hi})")
        beyond += done > upto(fin0, t + 0.1)
    check(not bad, f"every progress line counts all {num} requests and what every rank finished: {bad[:3]}")
    check(beyond > 0, f"{beyond} progress lines count more than rank 0's own finished requests")


def main(merged_path, truth_path, report, stderr_path, rtt_us, offsets, rank_files):
    rtt_ms = float(rtt_us) / 1e3
    offs = [float(x) for x in offsets.split()]
    n = len(offs)
    head, reqs, end = load(merged_path)
    measured = [r for r in reqs if not r["warmup"]]
    num = len(measured)
    ids = sorted(r["id"] for r in measured)
    check(ids == list(range(num)) and num > 0, f"every request id exactly once in the merged record ({num})")
    check(all(r["fail"] == "ok" for r in measured), "every request ok")
    start = run_start(head, end)

    # Per rank: realised rate against its own share of the schedule, and its schedule lag.
    lag99 = []
    for k in range(n):
        mine = [r for r in measured if r["id"] % n == k]
        sched = len(mine) / ((max(r["scheduled_ns"] for r in mine) - start) / 1e9)
        real = len(mine) / ((max(r["started_ns"] for r in mine) - start) / 1e9)
        check(abs(real / sched - 1) <= 0.01, f"rank {k} ({offs[k]:+g} s): realised {real:.3f} req/s, its "
              f"schedule's {sched:.3f} (1 %)")
        lag99.append(pct([(r["started_ns"] - r["scheduled_ns"]) / 1e6 for r in mine], 99))
    # Within 50 ms of rank 0's (on the host's clock): this 2-core VM's scheduler stalls a rank
    # for tens of ms under load (27 ms seen at load 8), while a rank that waits in another clock
    # than its own is late by its offset, seconds to a day here.
    for k in range(1, n):
        check(lag99[k] <= lag99[0] + 50, f"rank {k}: schedule lag P99 {lag99[k]:.3f} ms, rank 0's (the host's "
              f"clock) {lag99[0]:.3f} ms (+50 ms)")

    # The offsets: clock_k - clock_0 is exactly the namespaces' difference.
    for k, path in enumerate(rank_files):
        h, _, e = load(path)
        want = round((offs[k] - offs[0]) * 1e9)
        samples = [("before", h["clock"])] + ([("after", (e or {}).get("clock_after"))] if k else [])
        for name, c in samples:  # rank 0 is the reference: one zero sample
            if c is None:
                check(False, f"rank {k}: no clock sample {name} the run")
                continue
            check(abs(int(c["offset_ns"]) - want) <= int(c["unc_ns"]),
                  f"rank {k}: offset {name} the run {int(c['offset_ns']) - want:+d} ns from the known "
                  f"{want} ns, within +-{c['unc_ns']} ns")

    # TTFT and ITL against the truth (the sim's clock is the host's, rank 0's): a token reaches the
    # client one way of the RTT after the sim wrote it.
    tc, tt, ic, it = ttft_itl(measured, truth_of(truth_path, head["run_tag"]))
    check(len(tc) == num, f"a truth line for each of the {num} requests ({len(tc)})")
    for k in range(n):
        d = [a - b for a, b, r in zip(tc, tt, measured) if r["id"] % n == k]
        med = statistics.median(d)
        check(rtt_ms / 2 - 0.1 <= med <= rtt_ms / 2 + 0.5,
              f"rank {k}: TTFT - the truth's, median {med:.3f} ms; one way of the RTT {rtt_ms / 2:.3f} ms "
              f"(-0.1/+0.5)")
    mic, mit = statistics.median(ic), statistics.median(it)
    check(abs(mic - mit) / mit < 0.02, f"median ITL {mic:.3f} ms vs truth {mit:.3f} ms (< 2 %)")

    progress(stderr_path, measured, start, n)

    # Probes on in every rank: a client delay from its own probes, no "probes off" line.
    text = open(report).read()
    rows = {int(l.split()[0]): l.split() for l in text.splitlines()
            if l.startswith("  ") and l.split()[0].isdigit() and "/" in l}
    for k in range(n):
        row = rows.get(k, [])
        check(len(row) > 6 and row[6] != "n/a" and f"rank {k}: probes off" not in text,
              f"rank {k}: probes on, client delay P99 {row[6] if len(row) > 6 else '?'} ms from its own probes")


def whole_lines(path):
    """The requests of a record file, lines cut by a kill left out."""
    out = []
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        out.append(r)
    return out


def cut(report, merged_path, truth_path, rank_files):
    """Ctrl-C of mpirun: rank 0's merge is exactly the arrived ranks' files, each request once."""
    text = open(report).read()
    m = re.search(r"^stopped \(SIGINT/SIGTERM\): what finished, from (\d+) of (\d+) ranks", text, re.M)
    check(m is not None, "rank 0 printed a merged report after the stop")
    if not m:
        return
    n = len(rank_files)
    missing = {int(k) for k in re.findall(r"^  rank (\d+): its records did not arrive", text, re.M)}
    check(int(m.group(1)) == n - len(missing) and 0 not in missing,
          f"{m.group(1)} of {m.group(2)} ranks merged; named missing: {sorted(missing)}")
    got = {}
    for key in ("Successful requests:", "Failed requests:"):
        mm = re.search("^" + key + r"\s+(\d+)", text, re.M)
        got[key] = int(mm.group(1)) if mm else 0
    recs = whole_lines(merged_path)
    tag = recs[0]["run_tag"]
    merged = [r for r in recs if "id" in r and not r["warmup"]]
    ids = [r["id"] for r in merged]
    disk = [r["id"] for k, p in enumerate(rank_files) if k not in missing
            for r in whole_lines(p) if "id" in r and not r["warmup"]]
    seen = {int(o["id"].rsplit("-", 1)[1]) for o in map(json.loads, open(truth_path))
            if o.get("id", "").startswith(tag + "-")}
    check(len(set(ids)) == len(ids) and sorted(ids) == sorted(disk),
          f"the merged record is the arrived ranks' files: {len(ids)} ids ({len(set(ids))} distinct), "
          f"files {len(disk)}")
    check(got["Successful requests:"] + got["Failed requests:"] == len(ids),
          f"the report counts {got['Successful requests:']} ok + {got['Failed requests:']} failed = the merged "
          f"{len(ids)}")
    ok_ids = {r["id"] for r in merged if r["fail"] == "ok"}
    check(ok_ids <= seen, f"every ok request ({len(ok_ids)}) was seen by the sim")
    check(got["Failed requests:"] > 0 and 10 < len(ids) < 600,
          f"cut mid-run with streams in flight ({got['Failed requests:']} cut)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["cut"]:
        cut(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
        sys.exit(1 if failures else 0)
    if len(sys.argv) < 8:
        raise SystemExit(__doc__)
    main(*sys.argv[1:7], sys.argv[7:])
    sys.exit(1 if failures else 0)
