#!/usr/bin/env bash
# tests/integration/engine_fields.sh — the engine's own per-request account (SGLang's meta_info,
# vLLM's "metrics", llama.cpp's "timings", TensorRT-LLM's GET /perf_metrics read by bench
# --perf-metrics after the run) joined to latscope's records, checked against the
# sim's truth file: `latscope sim --engine-fields FORMAT` writes each request's account from its
# own steps, and the truth has the same steps, so this test recomputes every part from the steps
# itself (received -> first prefill step = queue; -> the step that sampled the first token ends
# = prefill; -> the last step = decode; received -> last step = e2e) and finds, per format:
#  - every ok request has an account, from that engine (engine_source), with the parts that
#    engine gives, each within 2 us of the truth (the sim prints ns);
#  - the result JSON's latscope.engine P50 of each part within max(50 us, 2 %) of the truth's
#    P50, its source labelled, and the report's "Engine's own account (FIELDS)" line;
#  - TTFT outside the engine's queue+prefill >= 0 for every request (the engine's parts lie
#    inside latscope's TTFT).
# Then --engine-fields-bad 0.5 (strings, negatives, NaN as Python writes it, 1e300): every
# request still ok and in the record, exactly the requests the truth marks bad carry a count of
# ignored values and no time part, the others their parts as before, and the report says how
# many values were ignored in how many requests.
# Every run's record, read back by `latscope report`, gives the same latscope.engine and the same
# report lines (TensorRT-LLM's accounts come on later "latscope_engine" lines of the file).
# TensorRT-LLM only: a list bounded below the run (--perf-metrics-max-requests 10 of 16: the 10
# that finished last are joined, each equal to the truth, and one note counts the 6 missing);
# and a /perf_metrics that hangs, answers 10 MB, answers garbage or is not there (404): one note
# saying which, bench exits 0 with all 16 requests ok and in the record, no account, no
# "latscope_engine" line, and the hang costs its 5 s bound, no more.
# Catches: ms read as s (or s as ms), the prefill read
# from the wrong key, the fast frame reader skipping the frame that carries the account, a NaN
# failing the request as a malformed frame, an account joined to another request, a bad value
# kept (a negative as a huge uint64), a percentile over the wrong series, a /perf_metrics entry
# joined to another request of a burst, the late record lines not read back, a fetch failure
# that fails the run or loses a request.
# Exit 0 pass, 77 skip, else fail. ~40 s.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
. "$ROOT/tests/lib/sim.bash"
[ -x "$BIN" ] || { echo "skip: $BIN not built"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the truth"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/engine_fields.XXXXXX") || exit 1
SIM=0
trap 'ls_sim_stop; rm -rf "$tmp"' EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run FORMAT BACKEND NAME [SIM ARGS...]: 16 requests, 4 in flight on a batch of 2 (half wait).
# trtllm*: bench reads GET /perf_metrics after the run (--perf-metrics).
run() {
	local fmt=$1 backend=$2 name=$3 extra=()
	shift 3
	[[ $name == trtllm* ]] && extra=(--perf-metrics)
	ls_sim_start "$tmp/$name.truth" "$tmp/$name.sim.log" --engine-fields "$fmt" --max-batch 2 --step-ms 4 \
		--prefill-token-us 40 "$@" || { bad "$name: the sim did not start: $(tail -3 "$tmp/$name.sim.log")"; return 1; }
	timeout 120 "$BIN" bench --backend "$backend" --base-url "http://127.0.0.1:$PORT" --dataset-name random \
		--random-input-len 48 --random-output-len 6 --num-prompts 16 --max-concurrency 4 --ignore-eos \
		--num-warmups 0 --probes off --seed 5 --record "$tmp/$name.jsonl" --save-result \
		--result-filename "$tmp/$name.json" "${extra[@]}" >"$tmp/$name.out" 2>"$tmp/$name.err"
	local rc=$?
	ls_sim_stop
	[ $rc -eq 0 ] || { bad "$name: bench exited $rc: $(tail -3 "$tmp/$name.err")"; return 1; }
	return 0
}

check() { # check NAME SOURCE FIELDS BAD(0/1)
	python3 - "$tmp/$1.jsonl" "$tmp/$1.truth" "$tmp/$1.json" "$tmp/$1.out" "$2" "$3" "$4" <<'EOF'
import json, re, sys
rec_path, truth_path, result_path, out_path, source, fields, bad_run = sys.argv[1:8]
SRC = {"llama.cpp": 1, "sglang": 2, "vllm": 3, "trtllm": 5}[source]
PARTS = {"llama.cpp": ("prefill", "decode"), "sglang": ("queue", "prefill", "decode", "e2e"),
         "vllm": ("queue", "prefill", "decode"), "trtllm": ("queue", "prefill", "decode", "e2e")}[source]
KNOWN = {"queue": 1, "prefill": 2, "decode": 4, "e2e": 8}
lines = [json.loads(l) for l in open(rec_path)]
head = lines[0]
tag = head.get("run_tag") or head.get("meta", {}).get("run_tag")
recs = [r for r in lines if "id" in r and "fail" in r and not r["warmup"]]
by_id = {r["id"]: r for r in recs}
for l in lines:  # an account joined after the run (TensorRT-LLM's): its later line, into its request
    if "latscope_engine" in l and not l["warmup"] and l["id"] in by_id:
        by_id[l["id"]].update({k: v for k, v in l.items() if k.startswith("engine_")})
truth = {t["id"]: t for t in map(json.loads, open(truth_path))}

def parts(t):  # the sim's steps, read here on their own
    steps = t["steps"]
    first_prefill = next(s for s in steps if s["prefill_tokens"])
    first_token = next(s for s in steps if s["tokens"])
    last = steps[-1]
    n = t["completion_tokens"]
    decode = last["end"] - first_token["end"]
    return {"queue": first_prefill["start"] - t["received"], "prefill": first_token["end"] - first_prefill["start"],
            "decode": decode, "e2e": last["end"] - t["received"],
            "decode_per_token": decode / (n if source == "llama.cpp" else n - 1)}

def mine(r):
    per = r["engine_predicted_ns"] / r["engine_predicted_n"] if r["engine_predicted_n"] > 0 else None
    return {"queue": r["engine_queue_ns"], "prefill": r["engine_prompt_ns"], "decode": r["engine_predicted_ns"],
            "e2e": r["engine_e2e_ns"], "decode_per_token": per}

errs, series, n_bad_truth, n_bad_rec = [], {p: [] for p in PARTS + ("decode_per_token",)}, 0, 0
if len(recs) != 16:
    errs.append(f"{len(recs)} measured records, want 16")
for r in recs:
    if r["fail"] != "ok":
        errs.append(f"request {r['id']} failed: {r['fail']} {r['error']}")
        continue
    t = truth.get(f"{tag}-{r['id']}")
    if t is None:
        errs.append(f"request {r['id']}: no truth line {tag}-{r['id']}")
        continue
    want, got, is_bad = parts(t), mine(r), bool(t.get("engine_bad"))
    if is_bad:  # its time values malformed: counted, none kept (SGLang's decode comes from its stamps, still good)
        n_bad_truth += 1
        n_bad_rec += r["engine_bad"] > 0
        if r["engine_bad"] == 0 or r["engine_known"] & (1 | 2 | 8):
            errs.append(f"request {r['id']}: truth has {t['engine_bad']} values, record bad={r['engine_bad']} known={r['engine_known']}")
    elif r["engine_bad"]:
        errs.append(f"request {r['id']}: {r['engine_bad']} values counted bad, truth has none")
    if r["engine_source"] != SRC:
        errs.append(f"request {r['id']}: engine_source {r['engine_source']}, want {SRC}")
    for p in PARTS + ("decode_per_token",):
        if is_bad and not r["engine_known"] & KNOWN["decode" if p == "decode_per_token" else p]:
            continue
        if p != "decode_per_token" and not r["engine_known"] & KNOWN[p]:
            errs.append(f"request {r['id']}: no {p} (known {r['engine_known']})")
            continue
        if got[p] is None or abs(got[p] - want[p]) > 2000:
            errs.append(f"request {r['id']}: {p} {got[p]} ns, truth {want[p]} ns")
        series[p].append(want[p])
eng = json.load(open(result_path))["latscope"].get("engine")
out = open(out_path).read()
def p50(v):
    v = sorted(v); n = len(v)
    return (v[(n - 1) // 2] + v[n // 2]) / 2 if n else None
if eng is None:
    errs.append("no latscope.engine in the result JSON")
else:
    key = {"queue": "queue", "prefill": "prompt", "e2e": "e2e", "decode_per_token": "decode_per_token"}
    for p, k in key.items():
        if p not in PARTS and p != "decode_per_token":
            if eng.get(k) is not None:
                errs.append(f"result JSON has {k} but {source} gives no {p}")
            continue
        want = p50(series[p])
        got = (eng.get(k) or {}).get("median_ms")
        if want is None or got is None or abs(got * 1e6 - want) > max(50e3, 0.02 * want):
            errs.append(f"P50 {k}: {got} ms, truth {want and want / 1e6} ms")
    if [s["engine"] for s in eng["sources"]] != [source]:
        errs.append(f"sources {eng['sources']}, want {source}")
    outside = eng.get("ttft_outside_prompt") or {}
    if outside.get("min_ms", -1) < 0:
        errs.append(f"TTFT outside the engine's account below 0: {outside}")
    if bad_run == "1" and (eng.get("bad_requests") != n_bad_truth or n_bad_rec != n_bad_truth or not n_bad_truth):
        errs.append(f"bad values in {eng.get('bad_requests')} requests (records {n_bad_rec}), truth {n_bad_truth}")
if bad_run == "0" and not re.search(r"Engine's own account \(%s\): +16 requests, %s" % (re.escape(fields), re.escape(source)), out):
    errs.append("no report line: " + next((l for l in out.splitlines() if "Engine's own" in l), "(none)"))
if bad_run == "1" and not re.search(r"Engine's fields: +\d+ malformed values ignored, in %d requests" % n_bad_truth, out):
    errs.append("no report line on the ignored values")
if errs:
    print("\n".join(errs[:8]))
    sys.exit(1)
print(f"ok: {source}: {len(recs)} requests ({n_bad_truth} with malformed values), parts {PARTS} equal the truth; "
      + ", ".join(f"P50 {p} {p50(series[p]) / 1e6:.3f} ms" for p in PARTS))
EOF
}

# roundtrip NAME: `latscope report` of the run's record gives its latscope.engine and its
# report's engine lines.
roundtrip() {
	"$BIN" report "$tmp/$1.jsonl" --save-result "$tmp/$1.back.json" >"$tmp/$1.back.out" 2>"$tmp/$1.back.err" ||
		{ bad "$1: latscope report of the record failed: $(tail -2 "$tmp/$1.back.err")"; return; }
	python3 - "$tmp/$1.json" "$tmp/$1.back.json" "$tmp/$1.out" "$tmp/$1.back.out" <<'EOF' || bad "$1: the record's engine account differs (above)"
import json, sys
live, back = (json.load(open(p))["latscope"].get("engine") for p in sys.argv[1:3])
lines = [[l for l in open(p) if l.startswith("Engine")] for p in sys.argv[3:5]]
if live != back or not live:
    sys.exit(f"latscope.engine: live {json.dumps(live)[:300]}\nrecord {json.dumps(back)[:300]}")
if lines[0] != lines[1] or not lines[0]:
    sys.exit(f"report lines: live {lines[0]}\nrecord {lines[1]}")
EOF
}

for spec in "llama.cpp openai timings" "sglang sglang meta_info" "vllm openai metrics" "trtllm openai /perf_metrics"; do
	set -- $spec
	run "$1" "$2" "$1" && { check "$1" "$1" "$3" 0 || bad "$1: the engine's account (above)"; roundtrip "$1"; }
	run "$1" "$2" "$1-bad" --engine-fields-bad 0.5 && { check "$1-bad" "$1" "$3" 1 || bad "$1: malformed fields (above)"; roundtrip "$1-bad"; }
done
for kind in string negative nan huge; do # every malformed kind was sent at least once
	cat "$tmp"/*-bad.truth 2>/dev/null | grep -q "\"engine_bad\":\"$kind\"" || bad "no request drew a $kind value"
done
grep -q -- --perf-metrics "$tmp/trtllm.err" && bad "trtllm: a note on a good /perf_metrics: $(grep -- --perf-metrics "$tmp/trtllm.err")"

# The server keeps only its last 10: those 10 joined (the 10 that finished last, each equal to the
# truth), the 6 others counted in one note.
if run trtllm openai trtllm-bound --perf-metrics-max-requests 10; then
	python3 - "$tmp/trtllm-bound.jsonl" "$tmp/trtllm-bound.truth" "$tmp/trtllm-bound.err" <<'EOF' || bad "trtllm: a bounded /perf_metrics (above)"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
tag = lines[0].get("run_tag") or lines[0].get("meta", {}).get("run_tag")
recs = {r["id"]: r for r in lines if "fail" in r}
for l in lines:  # the late lines, as the reader applies them
    if "latscope_engine" in l:
        recs[l["id"]].update({k: v for k, v in l.items() if k.startswith("engine_")})
truth = {t["id"]: t for t in map(json.loads, open(sys.argv[2]))}
last10 = sorted(recs, key=lambda i: truth[f"{tag}-{i}"]["steps"][-1]["end"])[-10:]
joined = sorted(i for i, r in recs.items() if r["engine_source"] == 5)
errs = []
if joined != sorted(last10):
    errs.append(f"joined {joined}, the last 10 to finish are {sorted(last10)}")
for i in joined:
    t, r = truth[f"{tag}-{i}"], recs[i]
    first = next(s for s in t["steps"] if s["prefill_tokens"])
    if abs(r["engine_queue_ns"] - (first["start"] - t["received"])) > 2000 or abs(r["engine_e2e_ns"] - (t["steps"][-1]["end"] - t["received"])) > 2000:
        errs.append(f"request {i}: queue {r['engine_queue_ns']} e2e {r['engine_e2e_ns']}, not the truth's")
err = open(sys.argv[3]).read()
if len(recs) != 16 or any(r["fail"] != "ok" for r in recs.values()):
    errs.append("not 16 ok records")
notes = [l for l in err.splitlines() if "--perf-metrics" in l]
if len(notes) != 1 or not re.search(r"--perf-metrics: GET \S+: 6 of 16 requests have no entry", notes[0]):
    errs.append("stderr: " + err.strip()[:300])
if errs:
    sys.exit("\n".join(errs))
print("ok: trtllm bounded: 10 joined (the last to finish), 6 counted missing")
EOF
fi

# A /perf_metrics that misbehaves: one note, the run whole, no account. fault REASON NAME FORMAT BACKEND [SIM ARGS...]
fault() {
	local want=$1 name=trtllm-$2 fmt=$3 backend=$4 t0=$SECONDS
	shift 4
	run "$fmt" "$backend" "$name" "$@" || return
	python3 - "$tmp/$name.jsonl" "$tmp/$name.json" "$tmp/$name.err" "$want" <<'EOF' || bad "$name: (above)"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
recs = [l for l in lines if "fail" in l]
res = json.load(open(sys.argv[2]))
err, want = open(sys.argv[3]).read(), sys.argv[4]
errs = []
if len(recs) != 16 or any(r["fail"] != "ok" for r in recs) or res["completed"] != 16:
    errs.append(f"{len(recs)} records, completed {res['completed']}: the run lost requests")
if any("latscope_engine" in l for l in lines) or (res["latscope"].get("engine") or {}).get("n"):
    errs.append("an engine account came from a bad /perf_metrics")
notes = [l for l in err.splitlines() if "--perf-metrics" in l]
if len(notes) != 1 or not re.search(want, notes[0]) or "results stand" not in notes[0]:
    errs.append(f"want one note matching {want!r}: {err.strip()[:300]}")
if errs:
    sys.exit("\n".join(errs))
print(f"ok: {notes[0]}")
EOF
	[ $((SECONDS - t0)) -le 20 ] || bad "$name: took $((SECONDS - t0)) s (a 5 s bound)"
}
fault "no whole answer in 5 s" hang trtllm openai --perf-metrics-fault hang
fault "passed 1048576 bytes" huge trtllm openai --perf-metrics-fault huge
fault "no JSON list" garbage trtllm openai --perf-metrics-fault garbage
fault "HTTP 404" missing none openai
[ $failures -eq 0 ] || exit 1
echo "engine_fields: all passed"
