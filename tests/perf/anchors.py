#!/usr/bin/python3
"""anchors.py - one row of `make bench`'s three-client table (tests/perf/anchors.sh): the
figures of latscope, the bare C floor client (tests/perf/floor_client.c) and the Python aiohttp
client (tests/clients/aiohttp_client.py), each run against its own fresh `latscope sim`, read
from their own files and the simulator's truth.

usage: anchors.py CASE CLIENT RESULT TRUTH [REPORT] [--rusage FILE] [--watch FILE]; anchors.py --table ROWS.jsonl
(the table on stdout, the comparisons per case as one JSON list on stderr)
  CLIENT  latscope (RESULT: its --record JSONL, REPORT: its text report), floor (RESULT: its
          --out JSONL) or python (RESULT: its --save-result JSON)
Prints one JSON object (numbers, null where not measured), all times in ms:
  sent_p50/sent_max: request sent after its start. start = when it could start: the run's
    start for a burst's first wave, its deadline under a rate, the slot's freeing in a closed
    loop (latscope: admitted_ns; floor: start_ns). sent = latscope's sent_ns (libcurl's
    PRETRANSFER), the floor's stamp of its write(); for python (which stamps no send) the
    simulator's truth "received" (a server-side stamp: it includes the server's own lag).
  ttft_mean: first token frame after that start (python: after its own st, as vLLM).
  reported_ttft_mean: the client's own mean TTFT (latscope: its report's, under its profile).
  truth_ttft_mean: the truth's mean of first token frame written - request received.
  excess: reported_ttft_mean - truth_ttft_mean.
  connect_minus_established: latscope's report line (libcurl CONNECT_TIME P50 - kernel
    connect()->ESTABLISHED P50), null without the probes.
  frame_delay_p50/p99: latscope's client delay per frame (harness stamp - kernel arrival, every
    frame of the run), null without the probes; the floor's from --watch FILE (the report of
    `latscope watch` on a second run of it: kernel arrival of the oldest byte -> its read, per
    read; the floor stamps a frame as its read returns), null without root.
  cpu_us_per_frame (user_us_per_frame + sys_us_per_frame), peak_rss_mib, rss_kib_per_stream
    (bursts: peak RSS over the streams held at once): from --rusage (tests/perf/rusage.py, the
    same outside measure for every client) over the token frames the simulator wrote (its truth).
"""
import json
import os
import re
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from numpy_pct import pct as numpy_pct  # noqa: E402  (tests/lib: the one percentile rule)


def pct(values, q):
    return numpy_pct(values, q, empty=None)


def mean(values):
    return sum(values) / len(values) if values else None


def load_truth(path):
    """id -> (received, first token frame written) for streams that had one."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                try:
                    t = json.loads(line)
                except ValueError:
                    continue
                first = next((fr["t"] for fr in t.get("frames", []) if fr.get("kind") == "tokens"), 0)
                if t.get("received") and first:
                    out[t["id"]] = (t["received"], first)
    except OSError:
        pass
    return out


def latscope(result, report):
    sent, ttft, ids = [], [], []
    tag = ""
    with open(result) as f:
        for line in f:
            r = json.loads(line)
            if "run_tag" in r:
                tag = r["run_tag"]
            if "started_ns" not in r or r.get("warmup") or r.get("fail") != "ok":
                continue
            start = r["admitted_ns"]
            ids.append(f"{tag}-{r['id']}")
            if r["sent_ns"]:
                sent.append((r["sent_ns"] - start) / 1e6)
            # The first frame with choices (LS_FRAME_CHOICES), vLLM's first token.
            first = next((fr[0] for fr in r["frames"] if fr[6] & 1), 0)
            if first:
                ttft.append((first - start) / 1e6)
    reported = conn = None
    with open(report) as f:
        text = f.read()
    m = re.search(r"^Mean TTFT \(ms\):\s+([0-9.]+)", text, re.M)
    if m:
        reported = float(m.group(1))
    m = re.search(r"kernel connect\(\)->ESTABLISHED ([0-9.]+) ms, curl CONNECT_TIME ([0-9.]+) ms", text)
    if m:
        conn = float(m.group(2)) - float(m.group(1))
    m = re.search(r"^client delay per frame .*: P50 ([0-9.]+) ms, P99 ([0-9.]+) ms", text, re.M)
    delay = (float(m.group(1)), float(m.group(2))) if m else (None, None)
    return sent, ttft, reported, ids, (conn, delay)


def watched_delay(path):
    """P50 and P99 of `latscope watch`'s held-bytes line (kernel arrival -> the client's read)."""
    with open(path) as f:
        m = re.search(r"^\s*per read \(oldest byte it delivered\)\s+\d+\s+[0-9.]+\s+([0-9.]+)\s+[0-9.]+\s+([0-9.]+)",
                      f.read(), re.M)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def floor(result):
    sent, ttft, ids = [], [], []
    with open(result) as f:
        next(f)
        for line in f:
            r = json.loads(line)
            if r["error"]:
                continue
            ids.append(r["id"])
            sent.append((r["sent_ns"] - r["start_ns"]) / 1e6)
            ttft.append((r["first_ns"] - r["start_ns"]) / 1e6)
    return sent, ttft, mean(ttft), ids


def python(result, truth):
    with open(result) as f:
        res = json.load(f)
    sent, ttft, ids = [], [], []
    for r in res["requests"]:
        if r["error"]:
            continue
        ids.append(r["id"])
        ttft.append(r["ttft_s"] * 1e3)
        if r["id"] in truth:
            sent.append((truth[r["id"]][0] - r["start_ns"]) / 1e6)
    return sent, ttft, res.get("mean_ttft_ms"), ids


def truth_frames(path):
    """Token frames the simulator wrote in this run (one client per simulator)."""
    n = 0
    try:
        with open(path) as f:
            for line in f:
                try:
                    n += sum(1 for fr in json.loads(line).get("frames", []) if fr.get("kind") == "tokens")
                except ValueError:
                    continue
    except OSError:
        pass
    return n


def cost(case, rusage_path, frames, n_ok):
    """CPU per frame and peak RSS from rusage.py's file; {} when there is none."""
    try:
        with open(rusage_path) as f:
            ru = json.load(f)
    except (OSError, ValueError, TypeError):
        return {}
    out = {"frames": frames}
    if frames:
        out["user_us_per_frame"] = ru["user_s"] * 1e6 / frames
        out["sys_us_per_frame"] = ru["sys_s"] * 1e6 / frames
        out["cpu_us_per_frame"] = out["user_us_per_frame"] + out["sys_us_per_frame"]
    if ru.get("peak_rss_kib"):
        out["peak_rss_mib"] = ru["peak_rss_kib"] / 1024
        if case.startswith("burst-") and n_ok:
            out["rss_kib_per_stream"] = ru["peak_rss_kib"] / n_ok
    return out


def fmt(v, width=7):
    return f"{v:{width}.2f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"


def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None


def table(path):
    """The three-client table from anchors.sh's JSON lines, and the comparisons per case."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    cases = []
    for r in rows:
        if r["case"] not in cases:
            cases.append(r["case"])
    print(f"{'case':<11} {'client':<9} {'ok':>5} | {'sent after start':^15} | {'TTFT mean':^15} | "
          f"{'truth':>6} {'excess':>7} | {'CPU':>6} {'RSS':>6} {'RSS':>6} | latscope vs floor, vs python")
    print(f"{'':<11} {'':<9} {'':>5} | {'P50':>7} {'max':>7} | {'1st frm':>7} {'reportd':>7} | "
          f"{'mean':>6} {'':>7} | {'us/frm':>6} {'MiB':>6} {'KiB/st':>6} |")
    out = []
    for c in cases:
        by = {r["client"]: r for r in rows if r["case"] == c}
        ls, fl, py = by.get("latscope", {}), by.get("floor", {}), by.get("python", {})
        cmp = {
            "case": c,
            "ttft_minus_floor": (ls["ttft_mean"] - fl["ttft_mean"]) if ls.get("ttft_mean") is not None and fl.get("ttft_mean") is not None else None,
            "excess_minus_floor": (ls["excess"] - fl["excess"]) if ls.get("excess") is not None and fl.get("excess") is not None else None,
            "sent_p50_ratio_to_floor": ratio(ls.get("sent_p50"), fl.get("sent_p50")),
            "sent_max_ratio_to_floor": ratio(ls.get("sent_max"), fl.get("sent_max")),
            "python_excess_ratio": ratio(py.get("excess"), ls.get("excess")),
            "cpu_per_frame_ratio_to_floor": ratio(ls.get("cpu_us_per_frame"), fl.get("cpu_us_per_frame")),
            "peak_rss_ratio_to_floor": ratio(ls.get("peak_rss_mib"), fl.get("peak_rss_mib")),
            "frame_delay_p50_ratio_to_floor": ratio(ls.get("frame_delay_p50"), fl.get("frame_delay_p50")),
            "frame_delay_p99_ratio_to_floor": ratio(ls.get("frame_delay_p99"), fl.get("frame_delay_p99")),
        }
        out.append(cmp)
        for name in ("floor", "latscope", "python"):
            r = by.get(name)
            if not r:
                print(f"{c:<11} {name:<9} {'-':>5} | not run")
                continue
            if "error" in r:
                print(f"{c:<11} {name:<9} {'-':>5} | {r['error']}")
                continue
            note = ""
            if name == "latscope":
                note = (f"| TTFT {fmt(cmp['ttft_minus_floor'], 0)} ms, excess {fmt(cmp['excess_minus_floor'], 0)} ms "
                        f"from the floor; sent x{fmt(cmp['sent_p50_ratio_to_floor'], 0)}/x{fmt(cmp['sent_max_ratio_to_floor'], 0)}; "
                        f"CPU x{fmt(cmp['cpu_per_frame_ratio_to_floor'], 0)}, RSS x{fmt(cmp['peak_rss_ratio_to_floor'], 0)}")
                if r.get("connect_minus_established") is not None:
                    note += f"; CONNECT-ESTAB {r['connect_minus_established']:.3f}"
                if r.get("frame_delay_p50") is not None:
                    note += f"; frame delay {r['frame_delay_p50']:.3f}/{r['frame_delay_p99']:.3f}"
                    if cmp["frame_delay_p50_ratio_to_floor"] is not None:
                        note += (f" (x{fmt(cmp['frame_delay_p50_ratio_to_floor'], 0)}/"
                                 f"x{fmt(cmp['frame_delay_p99_ratio_to_floor'], 0)})")
            elif name == "floor" and r.get("frame_delay_p50") is not None:
                note = f"| frame delay {r['frame_delay_p50']:.3f}/{r['frame_delay_p99']:.3f} (latscope watch)"
            elif name == "python":
                note = f"| python excess / latscope's: x{fmt(cmp['python_excess_ratio'], 0)}"
            print(f"{c:<11} {name:<9} {r['ok']:>5} | {fmt(r['sent_p50'])} {fmt(r['sent_max'])} | "
                  f"{fmt(r['ttft_mean'])} {fmt(r['reported_ttft_mean'])} | {fmt(r['truth_ttft_mean'], 6)} "
                  f"{fmt(r['excess'])} | {fmt(r.get('cpu_us_per_frame'), 6)} {fmt(r.get('peak_rss_mib'), 6)} "
                  f"{fmt(r.get('rss_kib_per_stream'), 6)} {note}")
    print("ms. floor: tests/perf/floor_client.c (no library); python: tests/clients/aiohttp_client.py "
          "(aiohttp, as vLLM's client); latscope: bench --profile vllm. sent: latscope libcurl PRETRANSFER, "
          "floor its write(), python the simulator's receive (truth, server-side); start: the request's slot "
          "or deadline. TTFT 1st frm: first token frame after that start (python: after its own st); "
          "reportd: the client's own mean TTFT; excess: reportd - truth (first token frame written - received). "
          "CPU us/frm: user + kernel CPU (tests/perf/rusage.py, the same for every client) over the token frames "
          "the simulator wrote; RSS: peak (VmHWM), per stream held in a burst. frame delay P50/P99: kernel "
          "arrival -> latscope's stamp (its probes), -> the floor's read (latscope watch, a second run).")
    targets_1400(rows)
    return out


def targets_1400(rows):
    """Where the 1,400-stream targets (issue 32) stand in this run, the floor's figure beside each."""
    by = {r["client"]: r for r in rows if r["case"] == "burst-1400" and "error" not in r}
    ls, fl = by.get("latscope"), by.get("floor", {})
    if not ls:
        return

    def line(what, value, bound, floor_value, unit):
        if value is None:
            print(f"  {what:<44} not measured")
            return
        fv = f"; the floor {floor_value:.2f} {unit}" if floor_value is not None else ""
        print(f"  {what:<44} {value:.2f} {unit} (<= {bound:g}): {'met' if value <= bound else 'missed'}{fv}")
    cpu, fcpu = ls.get("cpu_us_per_frame"), fl.get("cpu_us_per_frame")
    print("where the 1,400-stream targets stand (this run):")
    line("CPU per frame", cpu, 6, fcpu, "us")
    line("CPU per frame / the floor's", ratio(cpu, fcpu), 2, None, "x")
    line("peak RSS", ls.get("peak_rss_mib"), 64, fl.get("peak_rss_mib"), "MiB")
    line("client delay per frame P50", ls.get("frame_delay_p50"), 0.2, fl.get("frame_delay_p50"), "ms")
    line("client delay per frame P99", ls.get("frame_delay_p99"), 2, fl.get("frame_delay_p99"), "ms")


def main(argv):
    if len(argv) == 3 and argv[1] == "--table":
        print(json.dumps(table(argv[2])), file=sys.stderr)
        return 0
    rusage_path = watch_path = None
    if "--rusage" in argv:
        i = argv.index("--rusage")
        rusage_path = argv[i + 1] if i + 1 < len(argv) else None
        argv = argv[:i] + argv[i + 2:]
    if "--watch" in argv:
        i = argv.index("--watch")
        watch_path = argv[i + 1] if i + 1 < len(argv) else None
        argv = argv[:i] + argv[i + 2:]
    case, client, result, truth_path = argv[1:5]
    truth = load_truth(truth_path)
    conn, delay = None, (None, None)
    try:
        if client == "latscope":
            sent, ttft, reported, ids, (conn, delay) = latscope(result, argv[5])
        elif client == "floor":
            sent, ttft, reported, ids = floor(result)
            if watch_path:
                delay = watched_delay(watch_path)
        else:
            sent, ttft, reported, ids = python(result, truth)
    except (OSError, ValueError, KeyError, StopIteration, IndexError) as e:
        print(json.dumps({"case": case, "client": client, "error": f"{type(e).__name__}: {e}"}))
        return 0
    tt = [(truth[i][1] - truth[i][0]) / 1e6 for i in ids if i in truth]
    truth_mean = mean(tt)
    row = {
        "case": case, "client": client, "ok": len(ids),
        "sent_p50": pct(sent, 50), "sent_max": max(sent) if sent else None,
        "ttft_mean": mean(ttft), "reported_ttft_mean": reported,
        "truth_ttft_mean": truth_mean, "truth_matched": len(tt),
        "excess": reported - truth_mean if reported is not None and truth_mean is not None else None,
        "connect_minus_established": conn,
        "frame_delay_p50": delay[0], "frame_delay_p99": delay[1],
    }
    row.update(cost(case, rusage_path, truth_frames(truth_path), len(ids)))
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
