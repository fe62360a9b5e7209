#!/usr/bin/env bash
# engines/engine_timings: the engine's own account of each request (llama.cpp's `timings` on the
# last frame) joined to latscope's record: for the native /completion and the OpenAI completions
# routes, every request's prompt_n / prompt_ms and predicted_n / predicted_ms equal a print_timing
# block of the server's log (read apart from the stream: the same numbers the server printed),
# the report's "Engine's own account" and the result JSON's latscope.engine count every ok
# request, and the engine's prompt compute lies inside latscope's TTFT (TTFT outside it >= 0 for
# every request). Catches: the fast frame reader skipping "timings", a field read from the wrong
# key (prompt for predicted), ms taken as us, the record losing the fields, the report reading
# another series, the account labelled with another engine, the engine check missing or failing
# on an account that fits inside latscope's clocks.
. "$(dirname "$0")/engine_lib.bash"
need_engine
for backend in llama.cpp-native openai; do
	start_server 2
	bench "$backend" --backend "$backend" --dataset-name random --random-input-len 32 \
		--random-output-len 12 --num-prompts 12 --max-concurrency 2 --ignore-eos --connection per-request
	grep -q "Engine's own account (timings): *12 requests" "$TMP/$backend.out" ||
		fail "$backend: the report has no engine account of 12 requests: $(grep -m1 "Engine's own" "$TMP/$backend.out")"
	"$PY" - "$TMP/$backend.jsonl" "$TMP/server.log" "$TMP/$backend.json" <<'EOF' || fail "$backend: the engine's account (above)"
import json, re, sys
rec, log, result = sys.argv[1:4]
timing = re.compile(r"print_timing: id +\d+ \| task (\d+) \| +(prompt eval|eval) time = +([\d.]+) ms / +(\d+) tokens")
blocks = {}
for line in open(log, errors="replace"):
    m = timing.search(line)
    if m:
        blocks.setdefault(m.group(1), {})[m.group(2)] = (float(m.group(3)), int(m.group(4)))
logged = [(b["prompt eval"], b["eval"]) for b in blocks.values() if "prompt eval" in b and "eval" in b]
bad, n = [], 0
for line in open(rec):
    r = json.loads(line)
    if "id" not in r or r["warmup"] or r["fail"] != "ok":
        continue
    n += 1
    mine = ((r["engine_prompt_ns"] / 1e6, r["engine_prompt_n"]), (r["engine_predicted_ns"] / 1e6, r["engine_predicted_n"]))
    hit = [k for k, (p, g) in enumerate(logged)
           if p[1] == mine[0][1] and g[1] == mine[1][1] and abs(p[0] - mine[0][0]) < 0.006 and abs(g[0] - mine[1][0]) < 0.006]
    if not hit:
        bad.append((r["id"], mine))
    else:
        logged.pop(hit[0])
    ttft = min(f[0] for f in r["frames"] if f[6] & 1) - r["started_ns"]  # first frame with choices
    if ttft < r["engine_prompt_ns"]:
        bad.append((r["id"], f"TTFT {ttft / 1e6:.3f} ms < the engine's prompt {r['engine_prompt_ns'] / 1e6:.3f} ms"))
res = json.load(open(result))
eng = res["latscope"].get("engine", {})
check = next((c for c in res["latscope"].get("checks", res.get("checks", [])) if c.get("check") == "engine"), None)
if eng.get("sources") != [{"engine": "llama.cpp", "fields": "timings"}] or eng.get("queue") is not None:
    bad.append(f"sources {eng.get('sources')}, queue {eng.get('queue')}: llama.cpp's timings give no queue")
if check is None or not check["ok"]:
    bad.append(f"the engine check: {check}")
if n != 12 or bad or eng.get("n") != n:
    print(f"{n} ok requests; result JSON engine.n {eng.get('n')}; not matching the server's log: {bad[:3]}")
    sys.exit(1)
print(f"ok: {n} requests: prompt and decode timings equal the server's own log; engine prompt P50 "
      f"{eng['prompt']['median_ms']:.3f} ms, TTFT outside it P50 {eng['ttft_outside_prompt']['median_ms']:.3f} ms, "
      f"decode per token P50 {eng['decode_per_token']['median_ms']:.3f} ms; check: {check['text']}")
EOF
	stop_server
done
