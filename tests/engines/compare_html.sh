#!/usr/bin/env bash
# engines/compare_html: `latscope compare` (the vllm and honest profiles on one run) and bench's
# --html page against llama-server. Checked: compare's runs each served exactly by the engine
# (its /metrics counters moved by the requests and tokens compare reports, no run double-sent),
# and the page is whole and self-contained with every number the result JSON's
# (tests/integration/html_check.py static).
. "$(dirname "$0")/engine_lib.bash"
need_engine
start_server 4
scrape cmp.before
timeout -k 5 120 "$BIN" compare --base-url "$URL" --profiles vllm,honest --records-dir "$TMP/cmp" \
	--backend openai --dataset-name random --random-input-len 32 --random-output-len 16 \
	--num-prompts 16 --max-concurrency 4 --ignore-eos --connection per-request --num-warmups 0 \
	--skip-initial-test --arrival closed --markdown --html "$TMP/cmp.html" >"$TMP/cmp.out" 2>&1 ||
	{ tail -20 "$TMP/cmp.out"; fail "latscope compare failed"; }
scrape cmp.after
head -30 "$TMP/cmp.out"

bench page --backend openai --dataset-name random --random-input-len 32 --random-output-len 16 \
	--num-prompts 16 --max-concurrency 4 --ignore-eos --connection per-request --html "$TMP/page.html"
"$PY" "$ROOT/tests/integration/html_check.py" static "$TMP/page.html" "$TMP/page.json" ||
	fail "the --html page of a run against llama-server is not whole (above)"
[ -s "$TMP/cmp.html" ] || fail "compare wrote no --html page"
"$PY" - "$TMP" <<'PY' || fail "compare's runs disagree with the engine's counters (above)"
import glob, json, sys
tmp = sys.argv[1]
b, a = (json.load(open(f"{tmp}/cmp.{w}.json")) for w in ("before", "after"))
runs = sorted(f for f in glob.glob(f"{tmp}/cmp/run-*.jsonl") if "attribution" not in f)
reqs = [r for f in runs for r in map(json.loads, open(f)) if "sent_ns" in r and not r.get("warmup")]
out = sum(r["usage_completion_tokens"] for r in reqs if r["fail"] == "ok")
d = a["tokens_predicted_total"] - b["tokens_predicted_total"]
print(f"compare: {len(runs)} run(s), {len(reqs)} requests, {out} output tokens; engine /metrics: {d:.0f} tokens")
bad = len(runs) != 1 or len(reqs) != 16 or any(r["fail"] != "ok" for r in reqs) or out != d or out != 16 * 16
print("MISS" if bad else "ok", "- vllm and honest differ only in how records are read: one run of 16 requests, 16 tokens each")
sys.exit(bad)
PY
