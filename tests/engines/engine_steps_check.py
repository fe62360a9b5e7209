#!/usr/bin/python3
"""engine_steps_check.py DIR NAME --slots S --concurrency C: checks latscope's engine steps
(uprobes on llama_decode) of run NAME (DIR/NAME.jsonl, its .attribution.jsonl, NAME.progs from
bpftool) against the engine's own timings of each request and the client's own stamps.
Exit 1 on a miss; prints the figures either way (tests/engines/engine_steps.sh)."""
import argparse, json, os, re, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from numpy_pct import pct  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("name")
ap.add_argument("--slots", type=int, required=True)
ap.add_argument("--concurrency", type=int, required=True)
ap.add_argument("--cpu-pressure", type=float, default=0.0,
                help="the run's CPU pressure (/proc/pressure/cpu some, %%): see FREE and QUIET below")
ap.add_argument("--joins-only", action="store_true",
                help="prompts of a few tokens (cached prefixes): the tolerances are reported, not asserted")
ap.add_argument("--text", action="store_true", help="text prompts (chat): the server tokenizes each")
args = ap.parse_args()
text = args.text
base = f"{args.dir}/{args.name}"

recs = {}
for line in open(f"{base}.jsonl"):
    r = json.loads(line)
    if "id" in r and not r["warmup"] and r["fail"] == "ok":
        recs[r["id"]] = r
attr, head = {}, {}
for line in open(f"{base}.attribution.jsonl"):
    a = json.loads(line)
    if "id" in a:
        attr[a["id"]] = a
    elif "latscope_attribution" in a:
        head = a

# The server's own log: each request's slot, from the print_timing block whose numbers are its
# timings (as tests/engines/engine_timings.sh joins them).
timing = re.compile(r"print_timing: id +(\d+) \| task (\d+) \| +(prompt eval|eval) time = +([\d.]+) ms / +(\d+) tokens")
blocks = {}
for line in open(f"{args.dir}/server.log", errors="replace"):
    m = timing.search(line)
    if m:
        b = blocks.setdefault(m.group(2), {"slot": int(m.group(1))})
        b[m.group(3)] = (float(m.group(4)), int(m.group(5)))
def slot_of(r):
    for task, b in blocks.items():
        p, g = b.get("prompt eval"), b.get("eval")
        if p and g and p[1] == r["engine_prompt_n"] and g[1] == r["engine_predicted_n"] and \
           abs(p[0] - r["engine_prompt_ns"] / 1e6) < 0.006 and abs(g[0] - r["engine_predicted_ns"] / 1e6) < 0.006:
            del blocks[task]
            return b["slot"]
    return None

bad = []
def miss(what):
    bad.append(what)

# Every window's parts add up exactly to its total.
for i, a in attr.items():
    for w in [a.get("ttft"), a.get("e2el")] + a.get("itl", []):
        if w and sum(v for k, v in w.items() if k.endswith("_ns") and k != "total_ns") != w["total_ns"]:
            miss(f"request {i}: parts do not add up to {w['total_ns']}: {w}")

# Who had no slot when it arrived, from the client's stamps alone: requests sent before it and
# still streaming then (its last frame after it was sent).
def last_frame(r):
    return max(f[0] for f in r["frames"]) if r["frames"] else r["finished_ns"]
ahead = {i: sum(1 for j, q in recs.items() if j != i and q["sent_ns"] < r["sent_ns"] < last_frame(q))
         for i, r in recs.items()}

# One step at most: the longest step a request that found a free slot can wait for is the step
# running when it arrived (a prefill step is the longest; the engine's prompt_ms bounds it).
# On a contended CPU (other tasks ran while the server had work: /proc/pressure/cpu) the engine's
# account holds preemption around its steps and its HTTP threads post requests late or out of
# order: the tolerances below are then reported, not asserted; the one-sided checks still hold.
# Two tiers: the CPU free (pressure <= 5 %): every request but one within the tolerances; quiet (<= 25 %):
# the median request within them and queue against who waited. Prompts of a few tokens (--joins-only)
# are mostly the engine's host work around the step: their tolerances are reported only.
free = args.cpu_pressure <= 5.0 and not args.joins_only
quiet = args.cpu_pressure <= 25.0 and not args.joins_only
step_max_ns = max(r["engine_prompt_ns"] for r in recs.values()) + 1_000_000
pre_err, dec_err, rows, n_unc, waited_n, n_pre_ok, n_dec_ok, n_moved = [], [], [], 0, 0, 0, 0, 0
# With the CPU free, one request of a run may still be hit by a preemption between its step and
# the engine's own clock reads (seen once at 6 % pressure: one request 8 % off): one outlier is
# shown, two or more fail. A wrong offset, join or split moves every request, not one.
free_out, free_out_ids = [], set()  # each outlier's lines, and the step runs they are about
queued_n = 0
frontends = []
def a_read(i):
    return attr[i]["kernel"]["server_read_ns"]
for i, r in sorted(recs.items()):
    e = attr.get(i, {}).get("engine")
    if not e:
        miss(f"request {i}: no engine session joined")
        continue
    n_unc += "uncertain" in e["flags"]
    slot = slot_of(r)
    # Two prompts computed in one step, of the same lengths, make twin sessions (the same steps
    # from start to end): either join gives the same parts, and the join says it was uncertain.
    twin = "uncertain" in e["flags"] and any(
        j != i and a.get("engine") and a["engine"]["seq"] != e["seq"] and
        all(a["engine"][k] == e[k] for k in ("first_step_ns", "prefill_ns", "decode_ns"))
        for j, a in attr.items())
    if slot is None or (slot != e["seq"] and not twin):
        miss(f"request {i}: joined to a session of seq {e['seq']}, the server's log ran it on slot {slot}")
    if e["prompt_tokens"] != r["engine_prompt_n"]:
        miss(f"request {i}: {e['prompt_tokens']} prompt tokens in its steps, the engine says {r['engine_prompt_n']}")
    p, q = e["prefill_ns"], r["engine_prompt_ns"]
    pre_err.append(abs(p - q) / q)
    pre_ok = abs(p - q) <= max(0.05 * q, 300_000)
    # The steps' compute lies inside the engine's prompt time (it adds its batch building before
    # and its sampling after): never longer.
    if p > q + 50_000:
        miss(f"request {i}: prefill {p / 1e6:.3f} ms from the steps > the engine's prompt_ms {q / 1e6:.3f}")
    n = r["engine_predicted_n"]
    d, g = e["decode_ns"] / n, r["engine_predicted_ns"] / n
    dec_err.append(abs(d - g) / g)
    dec_ok = abs(d - g) <= 0.05 * g
    # The engine's prompt ends at its first sample, after the step: a preemption there moves time
    # from its generation to its prompt (the two still add up to the steps' total). That is the
    # engine's boundary moving, not the steps' error: counted apart.
    total_ok = abs((p + e["decode_ns"]) - (q + r["engine_predicted_ns"])) <= \
        max(0.03 * (q + r["engine_predicted_ns"]), 1_000_000)
    moved = not (pre_ok and dec_ok) and q - p > 300_000 and total_ok
    n_moved += moved
    n_pre_ok += pre_ok or moved
    n_dec_ok += dec_ok or moved
    # Prompt + generation together: the host time between the prompt's step and the engine's first
    # sample moves between the two, not out of them.
    mine, eng = p + e["decode_ns"], q + r["engine_predicted_ns"]
    if mine > eng + 50_000:
        miss(f"request {i}: prefill + decode {mine / 1e6:.3f} ms from the steps > the engine's {eng / 1e6:.3f}")
    if free and eng - mine > max(0.03 * eng, 1_000_000):
        free_out.append(f"request {i}: prefill + decode {mine / 1e6:.3f} ms from the steps, the engine's {eng / 1e6:.3f}")
        free_out_ids.add(e["first_step_ns"])
    if free and not (pre_ok and dec_ok) and not moved:
        free_out_ids.add(e["first_step_ns"])
        free_out.append(f"request {i}: prefill {p / 1e6:.3f} ms vs prompt_ms {q / 1e6:.3f}, decode per token "
                        f"{d / 1e6:.3f} ms vs {g / 1e6:.3f}")
    waited = ahead[i] >= args.slots
    waited_n += waited
    queued = e["queue_ns"] > step_max_ns
    queued_n += queued
    # Which of requests sent within a few ms of each other the server takes first is its HTTP
    # threads' race, not the client's send order (seen: the first sent of a burst of 16 queued
    # 62 ms while the seventh took a slot): per request only where its send stands apart.
    apart = all(abs(q["sent_ns"] - r["sent_ns"]) > 5_000_000 for j, q in recs.items() if j != i)
    if quiet and apart and waited != queued:
        miss(f"request {i}: queue {e['queue_ns'] / 1e6:.3f} ms (one step: {step_max_ns / 1e6:.3f}), but "
             f"{ahead[i]} requests were ahead of it on {args.slots} slots")
    if args.concurrency <= args.slots and waited:
        miss(f"request {i}: {ahead[i]} requests ahead at concurrency {args.concurrency}")
    # The frontend (the server's read -> its HTTP thread's hand-off, post_tasks) is the front of
    # the old queue: the two add up to the kernel's read -> the first step, to the ns; it is in
    # the TTFT window whole; it is never longer than the time to the first step. Every request
    # has one (llama-server posts each request's tasks; the prompts are token ids: no tokenize).
    f = e.get("frontend_ns", 0)
    to_step = e["first_step_ns"] - a_read(i)
    frontends.append(f)
    if "no_frontend" in e["flags"] or not f or e.get("posted") != 1:
        miss(f"request {i}: no frontend found ({e['flags']}, posted {e.get('posted')})")
    elif text and not e.get("tokenize_calls"):
        miss(f"request {i}: a text prompt, but no llama_tokenize call joined to it")
    elif abs(f + e["queue_ns"] - to_step) > 1000 or f > to_step:
        miss(f"request {i}: frontend {f} + queue {e['queue_ns']} ns, the kernel's read -> first step {to_step}")
    elif attr[i]["ttft"].get("frontend_ns") != f:
        miss(f"request {i}: TTFT's frontend {attr[i]['ttft'].get('frontend_ns')} ns, the request's {f}")
    rows.append((i, e["seq"], f / 1e6, e["queue_ns"] / 1e6, p / 1e6, q / 1e6, d / 1e6, g / 1e6, ahead[i]))

# As many queued (longer than a step before their first step) as had no slot when they came.
# One apart: a request whose HTTP thread handed it over only after a slot had freed (the server
# loaded) waited in its frontend, not in the queue, though it had no free slot when it came.
if quiet and abs(queued_n - waited_n) > 1:
    miss(f"{queued_n} requests queued longer than a step, {waited_n} had no free slot when they came")
elif queued_n != waited_n:
    print(f"  note: {queued_n} requests queued longer than a step, {waited_n} had no free slot when they came "
          f"(one may have waited in its frontend)")
eh = head.get("engine_steps", {})
if eh.get("joined") != sum(1 for a in attr.values() if a.get("engine")) or eh.get("source") != "uprobe":
    miss(f"the attribution file's header says {eh}")
if eh.get("frontend_found") != sum(1 for a in attr.values() if a.get("engine", {}).get("frontend_ns")) or \
        eh.get("post_calls", 0) < len(recs):
    miss(f"the attribution file's header counts frontends {eh.get('frontend_found')} and post_tasks calls "
         f"{eh.get('post_calls')} for {len(recs)} requests")
if len(attr) < len(recs) or not recs:
    miss(f"{len(recs)} ok requests, {len(attr)} attribution lines")

# The engine's own account (timings.prompt_ms; llama.cpp gives no queue) against the server's
# kernel stamps: per request, the server's parts of its TTFT window (its read -> the first
# token's write) less prompt_ms is what the engine does not count; the header's P50 is that of
# these, every request is compared, none has a prompt_ms longer than the interval, and the
# frontend is inside what it does not count.
SERVER_PARTS = ("server_ns", "frontend_ns", "queue_ns", "prefill_ns", "decode_ns", "gpu_ns")
ek = head.get("engine_vs_kernel")
gaps = []
for i, r in recs.items():
    a = attr.get(i, {})
    if "ttft" in a:
        srv = sum(a["ttft"].get(k, 0) for k in SERVER_PARTS)
        gaps.append(max(srv - r["engine_prompt_ns"], 0) / 1e6)
if not ek:
    miss("no engine_vs_kernel in the attribution file's header")
else:
    want = pct(gaps, 50)
    print(f"  engine's account vs the kernel: {ek['requests']} requests, not counted P50 {ek['not_counted_p50_ms']:.3f} "
          f"ms (from the parts {want:.3f}), P99 {ek['not_counted_p99_ms']:.3f} ms, frontend P50 "
          f"{pct(frontends, 50) / 1e6:.3f} ms, accounts longer than the interval {ek['over']}")
    if ek["requests"] != len(recs) or ek["has_queue"] or ek["over"]:
        miss(f"engine_vs_kernel {ek} for {len(recs)} requests (llama.cpp gives no queue; prompt_ms fits the interval)")
    if abs(ek["not_counted_p50_ms"] - want) > 0.01:
        miss(f"engine_vs_kernel not counted P50 {ek['not_counted_p50_ms']:.3f} ms, the parts say {want:.3f}")
    if frontends and ek["not_counted_p50_ms"] + 0.05 < pct(frontends, 50) / 1e6:
        miss("what the engine does not count is less than the frontend")

# The uprobes' own cost: BPF run time per call of the entry and return programs, at the last
# sample bpftool took during the run.
def prog_cost(prefixes):
    cost = {}
    for line in open(f"{base}.progs"):
        line = line.strip()
        if not line:
            continue
        for p in json.loads(line):
            if p.get("name", "").startswith(prefixes) and p.get("run_cnt"):
                key = (p["id"], p["name"])
                if p["run_cnt"] >= cost.get(key, (0, 0))[0]:
                    cost[key] = (p["run_cnt"], p["run_time_ns"])
    return cost
cost = prog_cost(("ls_llama_decode",))
calls = sum(c for c, _ in cost.values())
run_ns = sum(t for _, t in cost.values())
steps = max((c for c, _ in cost.values()), default=0)
# The frontend marks: one shared entry program (llama_tokenize and post_tasks), a return each
# (bpftool truncates names to 15 characters).
fcost = prog_cost(("ls_frontend_ent", "ls_post_tasks_r", "ls_llama_tokeni"))
fcalls = sum(c for c, _ in fcost.values())
fns = sum(t for _, t in fcost.values())

print(f"{args.name}: {len(rows)} requests on {args.slots} slots at concurrency {args.concurrency}, "
      f"{waited_n} waited for a slot, {n_unc} joined uncertainly")
print("  id seq frontend_ms  queue_ms prefill_ms prompt_ms  decode/tok engine/tok ahead")
for row in rows:
    print("  %2d %3d %11.3f %9.3f %10.3f %9.3f %11.3f %10.3f %5d" % row)
if frontends:
    fs = sorted(frontends)
    tok = sum(a.get("engine", {}).get("tokenize_calls", 0) for a in attr.values())
    print(f"  {tok} llama_tokenize calls on the requests' threads; frontend (read -> post_tasks): P50 {fs[len(fs) // 2] / 1e6:.3f} ms, P99 "
          f"{fs[min(len(fs) - 1, int(0.99 * len(fs)))] / 1e6:.3f} ms, max {fs[-1] / 1e6:.3f} ms")
pre_err.sort()
dec_err.sort()
if pre_err:
    pre_med, dec_med = pre_err[len(pre_err) // 2], dec_err[len(dec_err) // 2]
    print(f"  prefill vs prompt_ms: median {100 * pre_med:.1f} %, max {100 * pre_err[-1]:.1f} %, {n_pre_ok}/{len(rows)} "
          f"within 5 % or 0.3 ms; decode per token vs predicted_ms/predicted_n: median {100 * dec_med:.1f} %, "
          f"max {100 * dec_err[-1]:.1f} %, {n_dec_ok}/{len(rows)} within 5 % ({n_moved} of them with the engine's "
          f"prompt/generation boundary moved after the step: prompt longer, generation as much shorter)")
    # The engine's prompt_ms also holds its batch building and sampling around the step, and
    # whatever preemption hits them: on a contended CPU that is not the steps' error.
    for o in free_out:
        print(f"  outside the tolerances: {o}")
    # Counted by their steps, not lines or requests: one request can miss both ways, and twin
    # sessions (two prompts computed in the same steps, identical parts) are one measurement, so
    # a preemption in their shared step is one outlier (seen: the burst's first two, 3 ms each).
    if free and len(free_out_ids) > 1:
        miss(f"{len(free_out_ids)} step runs outside 5 % (or 0.3 ms) of the engine's own timings (above; one may be)")
    elif quiet and (pre_med > 0.05 or dec_med > 0.05):
        miss("the median request outside 5 % of the engine's own timings (above)")
    if not free:
        print(f"  NOT ASSERTED: " + ("the tolerances per request (prompts of a few tokens: the engine's host work)"
              if args.joins_only else f"the tolerances per request (CPU pressure {args.cpu_pressure:.0f} %: other "
              f"tasks had the CPU){'' if quiet else ', nor at the median, nor queue against who waited'}") +
              "; the joins, the sums and the one-sided checks are")
if steps:
    print(f"  uprobe cost in BPF: {run_ns / steps:.0f} ns per step (entry + return, {calls} calls, "
          f"{run_ns / calls:.0f} ns per call; the trap itself is not in it)")
else:
    miss("bpftool saw no run of the llama_decode programs")
if fcalls:
    print(f"  frontend uprobes' cost in BPF: {fns / max(1, len(recs)):.0f} ns per request ({fcalls} program runs, "
          f"{2 * fns / fcalls:.0f} ns per call, entry + return: " +
          ", ".join(f"{n} {c} runs {t / c:.0f} ns" for (_, n), (c, t) in sorted(fcost.items(), key=lambda x: x[0][1])) + ")")
else:
    miss("bpftool saw no run of the frontend programs (post_tasks, llama_tokenize)")
for b in bad[:10]:
    print("  MISS:", b)
sys.exit(1 if bad else 0)
