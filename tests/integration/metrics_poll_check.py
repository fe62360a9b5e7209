#!/usr/bin/env python3
"""tests/integration/metrics_poll_check.py — what tests/integration/metrics_poll.sh checks.

  truth RECORD TRUTH ENGINE MAX_BATCH   each /metrics sample against the simulator's own account
  faults RECORD KIND                    a bad /metrics: its misses counted by the right reason
  same A.json B.json A.txt B.txt        bench's and report's series and text block are the same
  off RECORD A.json                     no --server-metrics-ms: no series anywhere
"""
import json
import sys

TOL_NS = 500_000  # the sim answers inside [start, arrived]; stamps of one host, 0.5 ms of slack


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run_end(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    header = lines[0]
    end = [o for o in lines if "latscope_run_end" in o]
    if not end:
        fail(f"{path}: no run_end line")
    return int(header["base_ns"]), end[-1]


def truth_counts(path):
    """Per request: waiting [received, admitted), running [admitted, last step's end)."""
    waiting, running = [], []
    with open(path) as f:
        for line in f:
            t = json.loads(line)
            if not t.get("admitted") or not t["steps"]:
                continue
            waiting.append((t["received"], t["admitted"]))
            running.append((t["admitted"], max(s["end"] for s in t["steps"])))
    return waiting, running


def count_range(intervals, lo, hi):
    """Min and max of the number of intervals [a, b) holding t, over t in [lo, hi]."""
    points = {lo, hi}
    for a, b in intervals:
        if lo <= a <= hi:
            points.add(a)
        if lo <= b <= hi:
            points.add(b)
    counts = [sum(1 for a, b in intervals if a <= t < b) for t in points]
    return min(counts), max(counts)


def truth(record, truth_path, engine, max_batch):
    base, end = run_end(record)
    sm = end.get("server_metrics")
    if not sm:
        fail(f"{record}: no server_metrics in the run_end line")
    if sm["engine"] != engine:
        fail(f"the samples were read as {sm['engine']!r} names, the sim spoke {engine!r}")
    samples = sm["samples"]
    if len(samples) < 10:
        fail(f"only {len(samples)} samples ({sm['polls']} polls, missed {sm['missed']}, {sm['first_miss']})")
    waiting, running = truth_counts(truth_path)
    bad, peak_run, peak_wait = [], 0, 0
    for s in samples:
        lo, hi = base + s[0] - TOL_NS, base + s[1] + TOL_NS
        r, w, kv = s[2], s[3], s[4]
        rlo, rhi = count_range(running, lo, hi)
        wlo, whi = count_range(waiting, lo, hi)
        if not rlo <= r <= rhi:
            bad.append(f"running {r} at [{s[0]}, {s[1]}] ns: truth {rlo}..{rhi}")
        if not wlo <= w <= whi:
            bad.append(f"waiting {w} at [{s[0]}, {s[1]}] ns: truth {wlo}..{whi}")
        if r > max_batch:
            bad.append(f"running {r} > --max-batch {max_batch}")
        if engine == "tgi":
            if kv is not None:
                bad.append(f"TGI has no KV gauge, read {kv}")
        elif kv is None or not 0 <= kv <= 1 or (r == 0 and kv != 0):
            bad.append(f"KV use {kv} with {r} running")  # a request in its first step holds none yet
        peak_run, peak_wait = max(peak_run, r), max(peak_wait, w)
    if bad:
        fail(f"{len(bad)} of {len(samples)} samples disagree with the truth: " + "; ".join(bad[:5]))
    if peak_run != max_batch or peak_wait == 0:
        fail(f"peak running {peak_run} (the batch holds {max_batch}), peak waiting {peak_wait}: the run "
             "never filled the batch, so the test did not test")
    print(f"ok: {engine}: {len(samples)} samples, each within the truth at its instant "
          f"(peak running {peak_run}, peak waiting {peak_wait})")


def faults(record, kind):
    _, end = run_end(record)
    sm = end.get("server_metrics")
    if not sm:
        fail(f"{kind}: no server_metrics in the run_end line")
    reason = {"hang": "timeout", "huge": "too_big", "garbage": "no_gauges"}[kind]
    missed = sm["missed"]
    samples = sm["samples"]
    if kind == "hang":
        # The sim hangs /metrics only while it has work: a poll that found it idle (before the
        # first request, or in a gap of the arrivals) is answered, and says nothing runs or waits.
        # A poll answered with work in the gauges is a hang that did not hang.
        busy = [s for s in samples if (s[2] or 0) > 0 or (s[3] or 0) > 0]
        if busy:
            fail(f"hang: {len(busy)} polls answered while the sim had work: {busy[:3]}")
        samples = []  # the idle ones are accounted above
        if missed[reason] < 1 or missed[reason] + len(sm["samples"]) != sm["polls"]:
            fail(f"hang: {len(sm['samples'])} samples, {sm['polls']} polls, missed {missed}: want every poll "
                 f"in the run missed as {reason}")
    if samples or missed[reason] < 1 or (kind != "hang" and missed[reason] != sm["polls"]):
        fail(f"{kind}: {len(sm['samples'])} samples, {sm['polls']} polls, missed {missed}: want every poll "
             f"missed as {reason}")
    if not sm["first_miss"]:
        fail(f"{kind}: no note of the first miss")
    print(f"ok: {kind}: {sm['polls']} polls, all missed as {reason} ({sm['first_miss']})")


def block(path):
    with open(path) as f:
        text = f.read().splitlines()
    for i, line in enumerate(text):
        if "Server /metrics" in line:
            out = [line]
            for more in text[i + 1:]:
                if not more.strip() or more.startswith("=") or more.startswith("-"):
                    break
                out.append(more)
            return out
    fail(f"{path}: no Server /metrics block")


def same(a_json, b_json, a_txt, b_txt):
    a = json.load(open(a_json))["latscope"]["server_metrics"]
    b = json.load(open(b_json))["latscope"]["server_metrics"]
    if a != b:
        diff = [k for k in a if a.get(k) != b.get(k)]
        fail(f"result JSON server_metrics differs after the record: keys {diff}")
    ta, tb = block(a_txt), block(b_txt)
    if ta != tb:
        fail("the text block differs:\nbench:\n" + "\n".join(ta) + "\nreport:\n" + "\n".join(tb))
    print(f"ok: report of the record = bench: {len(a['samples'])} samples, block of {len(ta)} lines")


def off(record, a_json):
    _, end = run_end(record)
    if "server_metrics" in end or "server_metrics" in json.load(open(a_json))["latscope"]:
        fail("no --server-metrics-ms, yet a series was written")
    print("ok: off by default: no series in the record or the result")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "truth":
        truth(args[0], args[1], args[2], int(args[3]))
    elif cmd == "faults":
        faults(args[0], args[1])
    elif cmd == "same":
        same(*args)
    elif cmd == "off":
        off(*args)
    else:
        fail("unknown check " + cmd)
