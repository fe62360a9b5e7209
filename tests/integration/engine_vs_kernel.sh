#!/usr/bin/env bash
# tests/integration/engine_vs_kernel.sh — the engine's own account against the server's kernel
# stamps (attribution_account.c), with the simulator as the server (--server-pid) in each
# engine's format, checked against the sim's truth: the truth's interval (request fully read ->
# the first token frame's write) less the engine's queue + prefill from the record is, per
# request, the server time the engine does not count; its P50 must equal the report's within
# 0.15 ms, the server interval's P50 the truth's within 0.15 ms, no account be called longer
# than the interval, and every request be compared. llama.cpp's format gives no queue: what it
# does not count then holds the wait for a slot (milliseconds here, 4 in flight on 2 slots).
# Bugs caught: the interval from the client's stamps (adds the network and client), the queue
# dropped or double counted, requests not compared, the line or JSON missing. Root and BTF.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
export ROOT
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make all)"; exit 1; }
[ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] || { echo "skip: needs root and kernel BTF (the probes)"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 is missing"; exit 77; }
. "$ROOT/tests/lib/sim.bash"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-engkern.XXXXXX") || exit 1
trap 'ls_sim_stop; rm -rf "$tmp"' EXIT
failures=0
for fmt in sglang vllm llama.cpp; do
	d=$tmp/$fmt
	mkdir -p "$d"
	backend=openai
	[ "$fmt" = sglang ] && backend=sglang
	ls_sim_start "$d/truth.jsonl" "$d/sim.log" --engine-fields "$fmt" --step-ms 4 --prefill-token-us 40 --max-batch 2 \
		|| { echo "FAIL: $fmt: the simulator did not start"; failures=$((failures + 1)); continue; }
	if ! timeout -k 5 120 "$BIN" bench --base-url "http://127.0.0.1:$PORT" --model latscope-sim --backend "$backend" \
		--dataset-name random --random-input-len 48 --random-output-len 6 --ignore-eos --num-prompts 16 \
		--max-concurrency 4 --disable-tqdm --server-pid "$SIM" --record "$d/R.jsonl" >"$d/out" 2>"$d/err"; then
		echo "FAIL: $fmt: bench failed"; tail -3 "$d/err"; failures=$((failures + 1)); ls_sim_stop; continue
	fi
	ls_sim_stop
	python3 - "$d" "$fmt" <<'PY' || failures=$((failures + 1))
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "lib"))
from numpy_pct import pct
d, fmt = sys.argv[1], sys.argv[2]
fails = []
lines = [json.loads(l) for l in open(f"{d}/R.jsonl")]
base, tag = int(lines[0]["base_ns"]), lines[0]["run_tag"]
reqs = {r["id"]: r for r in lines[1:] if "frames" in r and not r.get("warmup") and r.get("fail") == "ok"}
for l in lines[1:]:  # late engine lines merge into their request (none for these formats)
    if "latscope_engine" in l and l["id"] in reqs:
        reqs[l["id"]].update(l)
truth = {}
for l in open(f"{d}/truth.jsonl"):
    t = json.loads(l)
    toks = [f["t"] for f in t.get("frames", []) if f.get("kind") == "tokens"]
    if toks:
        truth[t["id"]] = toks[0] - t["received"]
gaps, ivals = [], []
QUEUE, PREFILL = 1, 2
for i, r in reqs.items():
    iv = truth.get(f"{tag}-{i}")
    if iv is None:
        fails.append(f"request {i}: no truth line")
        continue
    known = r.get("engine_known", 0)
    inside = r.get("engine_prompt_ns", 0) + (r.get("engine_queue_ns", 0) if known & QUEUE else 0)
    gaps.append(max(iv - inside, 0) / 1e6)
    ivals.append(iv / 1e6)
hdr = json.loads(open(f"{d}/R.attribution.jsonl").readline())
acc = hdr.get("engine_vs_kernel")
out = open(f"{d}/out").read()
if not acc:
    fails.append("no engine_vs_kernel in the attribution header")
else:
    want_gap, want_iv = pct(gaps, 50), pct(ivals, 50)
    print(f"  {fmt}: {acc['requests']} requests; not counted P50 {acc['not_counted_p50_ms']:.3f} ms "
          f"(truth {want_gap:.3f}), server interval P50 {acc['server_p50_ms']:.3f} ms (truth {want_iv:.3f}), "
          f"queue given {acc['has_queue']}, over {acc['over']}")
    if acc["requests"] != len(reqs) or len(reqs) != 16:
        fails.append(f"{acc['requests']} requests compared, {len(reqs)} ok in the record (16 sent)")
    if abs(acc["not_counted_p50_ms"] - want_gap) > 0.15:
        fails.append(f"not counted P50 {acc['not_counted_p50_ms']:.3f} ms, the truth's {want_gap:.3f}")
    if abs(acc["server_p50_ms"] - want_iv) > 0.15:
        fails.append(f"server interval P50 {acc['server_p50_ms']:.3f} ms, the truth's {want_iv:.3f}")
    if acc["over"]:
        fails.append(f"{acc['over']} accounts called longer than the server's interval")
    if bool(acc["has_queue"]) != (fmt != "llama.cpp"):
        fails.append(f"has_queue {acc['has_queue']} for {fmt}")
    if fmt == "llama.cpp" and want_gap < 1.0:
        fails.append(f"llama.cpp's not-counted time ({want_gap:.3f} ms) should hold the slot wait")
if "engine's own account vs the server's kernel stamps (16 requests)" not in out:
    fails.append("the text report has no engine-vs-kernel line")
for f in fails:
    print(f"FAIL: {fmt}: {f}")
sys.exit(1 if fails else 0)
PY
done
[ $failures = 0 ] && echo "ok: the engine's account against the kernel, three formats" || exit 1
