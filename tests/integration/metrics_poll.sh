#!/usr/bin/env bash
# tests/integration/metrics_poll.sh — bench --server-metrics-ms against the simulator's /metrics:
# 1. for each engine's names (vLLM, SGLang, llama.cpp, TGI: sim --metrics-names), every sample's
#    running and waiting count equals the sim's truth (admitted..last step end, received..admitted)
#    at some instant inside that GET's [start, answer] (0.5 ms slack), the batch cap is never
#    exceeded, KV use is absent for TGI and in 0..1 (0 exactly when nothing runs) for the others;
# 2. `latscope report RECORD` gives the same series in the result JSON and the same text block;
# 3. a /metrics that hangs (while the sim has work: a poll that finds it idle is answered, with
#    nothing running or waiting), answers 10 MB, or answers garbage: every request still
#    succeeds, every poll is counted as a miss of the right reason with a note, the run lasts as
#    long as with a sound /metrics (hang, garbage), bench's memory stays bounded (max RSS) and it
#    ends within its bound;
# 4. without the flag nothing is polled or written.
# Bugs caught: a gauge read from another engine's name or the wrong one of the pair, stamps taken
# at the wrong moment (after parsing, or the next poll's), samples lost or invented by the record,
# the text block computed differently by report, a hang or a big answer that stalls the run or
# the exit (the thread not woken), an answer buffered without a cap, a GET that blocks the run. ~50 s.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
CHECK="python3 $ROOT/tests/integration/metrics_poll_check.py"
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make all)"; exit 1; }
command -v python3 >/dev/null || { echo "skip: python3 is missing (it reads the records)"; exit 77; }
. "$ROOT/tests/lib/sim.bash"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-mpoll.XXXXXX") || exit 1
trap 'ls_sim_stop; rm -rf "$tmp"' EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
COMMON=(--model latscope-sim --dataset-name random --random-input-len 32 --random-output-len 24 --ignore-eos
	--seed 5 --disable-tqdm --max-concurrency 8)

bench() { # dir bench-args... (in dir: bench.out, bench.err, R.jsonl, A.json)
	local d=$1
	shift
	mkdir -p "$d"
	(cd "$d" && /usr/bin/time -f "%M" -o rss.txt timeout -k 5 120 "$BIN" bench "${COMMON[@]}" --base-url "http://127.0.0.1:$PORT" \
		--record R.jsonl --save-result --result-filename A.json "$@" >bench.out 2>bench.err)
}

# 1 + 2: each engine's names against the truth; the record read back.
for engine in vllm sglang llama.cpp tgi; do
	d=$tmp/$engine
	ls_sim_start "$tmp/truth-$engine.jsonl" "$tmp/sim.log" --step-ms 5 --max-batch 4 --metrics-names "$engine" ||
		{ bad "$engine: the simulator did not start: $(tail -2 "$tmp/sim.log")"; continue; }
	bench "$d" --num-prompts 40 --server-metrics-ms 15 || bad "$engine: bench exited $?: $(tail -3 "$d/bench.err")"
	ls_sim_stop
	$CHECK truth "$d/R.jsonl" "$tmp/truth-$engine.jsonl" "$engine" 4 || bad "$engine: samples against the truth"
	(cd "$d" && "$BIN" report R.jsonl --save-result B.json >report.out 2>report.err) ||
		{ bad "$engine: report exited $?: $(tail -3 "$d/report.err")"; continue; }
	$CHECK same "$d/A.json" "$d/B.json" "$d/bench.out" "$d/report.out" || bad "$engine: record round trip"
done

# 3: a bad /metrics. The sim's hang answers nothing while it has work (so bench's own
# spec-decode reads before and after the run still get answers); huge is 10 MB of comments.
none_rss=0
for kind in none hang huge garbage; do
	d=$tmp/fault-$kind
	ls_sim_start "" "$tmp/sim.log" --step-ms 5 --max-batch 4 --metrics-fault "$kind" ||
		{ bad "$kind: the simulator did not start: $(tail -2 "$tmp/sim.log")"; continue; }
	period=100 baseline_rss=$none_rss
	if [ "$kind" = huge ]; then
		period=500 # each 10 MB answer costs the one-threaded sim itself ~0.1 s here
		# bench's own spec-decode reads before and after the run take the whole 10 MB (64 MiB cap):
		# the baseline of memory is a run against this sim without the poll
		bench "$d-nopoll" --num-prompts 60 || bad "huge: bench without the poll exited $?"
		baseline_rss=$(tail -1 "$d-nopoll/rss.txt")
	fi
	start=$(date +%s%N)
	bench "$d" --num-prompts 60 --server-metrics-ms $period || bad "$kind: bench exited $?: $(tail -3 "$d/bench.err")"
	secs=$((($(date +%s%N) - start) / 1000000000))
	ls_sim_stop
	grep -q "^Successful requests: *60" "$d/bench.out" || bad "$kind: not every request succeeded: $(grep -E '^(Successful|Failed)' "$d/bench.out" | tr '\n' ' ')"
	[ "$secs" -le 30 ] || bad "$kind: bench took $secs s (a run of ~2 s; each GET is bounded by 1 s)"
	rss=$(tail -1 "$d/rss.txt")
	dur=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration"])' "$d/A.json" 2>/dev/null || echo 0)
	if [ "$kind" = none ]; then
		none_rss=$rss none_dur=$dur
		continue
	fi
	# the run's own duration: a GET that blocked the run's loop would add its 1 s timeout (hang)
	# per poll; huge slows the one-threaded sim itself, so it is not held to this
	[ "$kind" = huge ] || python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(a > 1.5 * b + 0.5)' \
		"$dur" "$none_dur" || bad "$kind: the run took $dur s, $none_dur s with a sound /metrics"
	$CHECK faults "$d/R.jsonl" "$kind" || bad "$kind: misses"
	# the answer is capped at 4 MiB: bench's peak memory grows by that, not by the 10 MB
	[ "$rss" -le $((baseline_rss + 16384)) ] || bad "$kind: bench's max RSS $rss KB, $baseline_rss KB without the fault"
	echo "ok: $kind: 60 requests succeeded, the run in $dur s (sound /metrics: $none_dur s), bench in $secs s, max RSS $rss KB (without the poll: $baseline_rss KB)"
done

# 4: off by default.
ls_sim_start "" "$tmp/sim.log" --step-ms 5 || bad "off: the simulator did not start"
bench "$tmp/off" --num-prompts 10 || bad "off: bench exited $?"
ls_sim_stop
$CHECK off "$tmp/off/R.jsonl" "$tmp/off/A.json" || bad "off"
grep -q "Server /metrics" "$tmp/off/bench.out" && bad "off: a Server /metrics block without the flag"

[ $failures -eq 0 ] && echo "metrics_poll: all checks passed" || echo "metrics_poll: $failures failed"
[ $failures -eq 0 ]
