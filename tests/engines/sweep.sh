#!/usr/bin/env bash
# engines/sweep: `latscope sweep` against llama-server (2 slots): 4 rate points, each a whole bench
# run kept on disk, under a TTFT SLO with --max-concurrency 2 (client slots, as vLLM's and SGLang's
# semaphores). Checks: every point in --output with its record, each record reads back with
# `latscope report` to the point's own count (measured + trimmed - failed; a stopped point too),
# the verdict a documented exit code (0 found, 3 none met, 4 all met),
# the started clock's capacity never below the scheduled clock's (its clock starts after the slot
# wait), and the point at the lowest rate meeting the SLO on every clock. ~25 s.
. "$(dirname "$0")/engine_lib.bash"
need_engine
start_server 2
timeout -k 5 120 "$BIN" sweep --rates 4,16,48,96 --slo 'ttft:p90<=150ms' --point-seconds 2 --min-requests 8 \
	--dir "$TMP/sweep" --output "$TMP/sweep.json" --base-url "$URL" --backend llama.cpp-native \
	--connection per-request --dataset-name random --random-input-len 32 --random-output-len 8 --ignore-eos \
	--max-concurrency 2 --num-warmups 0 --probes off --seed 5 >"$TMP/sweep.out" 2>"$TMP/sweep.err"
rc=$?
case $rc in 0 | 3 | 4) ;; *) tail -5 "$TMP/sweep.err"; fail "sweep exited $rc" ;; esac
sed -n '/capacity/,$p' "$TMP/sweep.out" | head -8
"$PY" - "$TMP/sweep.json" "$BIN" <<'EOF' || fail "the sweep's points (above)"
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
pts, cap, ok = j["points"], j["capacity"], True
if len(pts) != 4:
    print(f"{len(pts)} points, 4 asked"); sys.exit(1)
for p in pts:
    out = subprocess.run([sys.argv[2], "report", p["record"]], capture_output=True, text=True).stdout
    got = next((l for l in out.splitlines() if l.startswith("Successful requests:")), "?")
    if p["bench_exit"] not in (0, 1) or str(p["measured"] + p["trimmed"] - p["failed"]) not in got.split():
        print(f"point {p['rate']}: exit {p['bench_exit']}, {p['measured']} measured, {p['failed']} failed; "
              f"report of {p['record']}: '{got}'"); ok = False
first = pts[0]["clocks"]
if not all(first[c]["meets_slo"] for c in ("scheduled", "admitted", "started")):
    print(f"the {pts[0]['rate']} req/s point failed the SLO on a clock"); ok = False
s, a = cap.get("scheduled"), cap.get("started")
if a is not None and s is not None and a < s:
    print(f"started capacity {a} below scheduled {s}"); ok = False
if a is None and s is not None:
    print(f"scheduled met the SLO at {s} but started nowhere"); ok = False
print(f"ok: 4 points on disk, each read back; capacity {cap}, started overstates by {j.get('overstatement_pct')} %")
sys.exit(0 if ok else 1)
EOF
