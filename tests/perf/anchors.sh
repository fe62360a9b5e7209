#!/usr/bin/env bash
# tests/perf/anchors.sh — the three-client table of `make bench` (issue 17): latscope against
# the floor (tests/perf/floor_client.c: non-blocking connect, one write, epoll, no library) and
# a Python client written as vLLM's (tests/clients/aiohttp_client.py), each against its own
# fresh `latscope sim` with ground truth, for bursts of C = 1, 16, 64, 256, 1024 and Poisson
# arrivals at 100 and 1,000 req/s. Prints the table (tests/perf/anchors.py --table) and writes
# $OUT/anchors.jsonl (one row per case and client) and $OUT/anchors_cmp.json (per case:
# latscope's distance to the floor and the Python client's excess over latscope's).
# Env (run.sh sets them): LATSCOPE_BIN, LATSCOPE_PERF_DIR, LATSCOPE_PERF_QUICK=1 (smaller
# cases), FLOOR_BIN (default build/perf/floor_client), PIN_SIM / PIN_BENCH (taskset prefixes);
# ANCHORS_CASES (e.g. "burst:256:256 rate:100:200"), ANCHORS_TOKENS (default 32),
# ANCHORS_NO_PYTHON=1.
set -u
cd "$(dirname "$0")/../.."
BIN=${LATSCOPE_BIN:-$PWD/build/latscope}
OUT=${LATSCOPE_PERF_DIR:-$PWD/build/perf}/anchors
FLOOR=${FLOOR_BIN:-$PWD/build/perf/floor_client}
QUICK=${LATSCOPE_PERF_QUICK:-0}
PY=/usr/bin/python3
PIN_SIM=${PIN_SIM-taskset -c 1} PIN_BENCH=${PIN_BENCH-taskset -c 0}
mkdir -p "$OUT"
ROWS=$OUT/../anchors.jsonl
: >"$ROWS"
[ -x "$FLOOR" ] || { echo "anchors: $FLOOR not built (make bench builds it)" >&2; exit 1; }
PY_OK=1
$PY -c 'import aiohttp' 2>/dev/null || PY_OK=0

SIM=0
. tests/lib/sim.bash
stop_sim() { ls_sim_stop; }
trap stop_sim EXIT
start_sim() { # name [step_ms]
	ls_sim_start "$OUT/$1.truth" "$OUT/$1.sim.log" --step-ms "${2:-10}" --prefill-token-us 0 --decode-token-us 0 \
		--max-batch 4096 --max-batch-tokens 10000000
}
# Each client runs under tests/perf/rusage.py: its CPU and peak RSS measured the same way for all.
RUSAGE="$PY tests/perf/rusage.py"

TOKENS=${ANCHORS_TOKENS:-32} WORDS=32
# case n conc rate [step_ms tokens]: the three clients, each against its own simulator.
run_case() {
	local name=$1 n=$2 conc=$3 rate=$4 step=${5:-10} TOKENS=${6:-$TOKENS}
	local t=$name
	local lsargs=(--num-prompts "$n") flargs=(--num "$n") pyargs=(--num-prompts "$n")
	if [ "$rate" = inf ]; then
		lsargs+=(--max-concurrency "$conc" --request-rate inf)
		flargs+=(--concurrency "$conc")
		pyargs+=(--max-concurrency "$conc" --request-rate inf)
	else
		lsargs+=(--request-rate "$rate")
		flargs+=(--rate "$rate")
		pyargs+=(--request-rate "$rate")
	fi
	if start_sim "$t-floor" "$step"; then
		$PIN_BENCH $RUSAGE "$OUT/$t-floor.rusage" -- "$FLOOR" --port "$PORT" "${flargs[@]}" --input-words $WORDS --output-len $TOKENS --ignore-eos \
			--seed 1 --out "$OUT/$t-floor.jsonl" >"$OUT/$t-floor.out" 2>&1
		stop_sim
		# The floor's own client delay (kernel arrival -> its read), from `latscope watch` in a
		# second pass (root): watched, the probes' cost would be in its CPU and RSS above.
		local watch=()
		if [ "$(id -u)" = 0 ] && start_sim "$t-floorw" "$step"; then
			$PIN_BENCH "$BIN" watch --no-tls --port "$PORT" --output "$OUT/$t-floor.watch" -- "$FLOOR" --port "$PORT" \
				"${flargs[@]}" --input-words $WORDS --output-len $TOKENS --ignore-eos --seed 1 \
				--out "$OUT/$t-floorw.jsonl" >"$OUT/$t-floorw.out" 2>&1 && watch=(--watch "$OUT/$t-floor.watch")
			stop_sim
		fi
		$PY tests/perf/anchors.py "$name" floor "$OUT/$t-floor.jsonl" "$OUT/$t-floor.truth" \
			--rusage "$OUT/$t-floor.rusage" "${watch[@]}" >>"$ROWS"
	fi
	if start_sim "$t-latscope" "$step"; then
		$PIN_BENCH $RUSAGE "$OUT/$t-latscope.rusage" -- "$BIN" bench --base-url "http://127.0.0.1:$PORT" --model latscope-sim --profile vllm \
			--num-warmups 0 --ignore-eos --random-input-len $WORDS --random-output-len $TOKENS --seed 1 \
			--disable-tqdm --ready-check-timeout-sec 5 "${lsargs[@]}" --record "$OUT/$t-latscope.jsonl" \
			>"$OUT/$t-latscope.out" 2>"$OUT/$t-latscope.err"
		stop_sim
		$PY tests/perf/anchors.py "$name" latscope "$OUT/$t-latscope.jsonl" "$OUT/$t-latscope.truth" \
			"$OUT/$t-latscope.out" --rusage "$OUT/$t-latscope.rusage" >>"$ROWS"
	fi
	if [ $PY_OK = 1 ] && start_sim "$t-python" "$step"; then
		$PIN_BENCH $RUSAGE "$OUT/$t-python.rusage" -- $PY tests/clients/aiohttp_client.py --base-url "http://127.0.0.1:$PORT" --model latscope-sim \
			"${pyargs[@]}" --input-words $WORDS --output-len $TOKENS --ignore-eos --seed 1 \
			--save-result "$OUT/$t-python.json" >"$OUT/$t-python.out" 2>&1
		stop_sim
		$PY tests/perf/anchors.py "$name" python "$OUT/$t-python.json" "$OUT/$t-python.truth" \
			--rusage "$OUT/$t-python.rusage" >>"$ROWS"
	elif [ $PY_OK = 0 ]; then
		echo "{\"case\":\"$name\",\"client\":\"python\",\"error\":\"no aiohttp for $PY\"}" >>"$ROWS"
	fi
	echo "  done: anchors $name" >&2
}

# BURSTS: C:N[:STEP_MS:TOKENS]. The last holds 1,400 streams at 50 frames/s each (20 ms steps,
# 100 tokens: 70,000 frames/s for 2 s; issue 32): CPU per frame and peak RSS beside the floor's.
if [ "$QUICK" = 1 ]; then
	BURSTS="1:8 16:32 64:64 256:256 1024:1024 1400:1400:20:100"; RATES="100:100 1000:500"
else
	BURSTS="1:16 16:128 64:256 256:1024 1024:1024 1400:1400:20:100"; RATES="100:200 1000:2000"
fi
# ANCHORS_CASES="burst:C:N ... rate:R:N" runs only those (the issue's comparisons).
if [ -n "${ANCHORS_CASES:-}" ]; then
	BURSTS=$(tr ' ' '\n' <<<"$ANCHORS_CASES" | sed -n 's/^burst://p' | tr '\n' ' ')
	RATES=$(tr ' ' '\n' <<<"$ANCHORS_CASES" | sed -n 's/^rate://p' | tr '\n' ' ')
fi
[ "${ANCHORS_NO_PYTHON:-0}" = 1 ] && PY_OK=2
for spec in $BURSTS; do
	IFS=: read -r c n step tok <<<"$spec"
	run_case "burst-$c" "$n" "$c" inf "${step:-10}" "${tok:-$TOKENS}"
done
for spec in $RATES; do
	IFS=: read -r r n <<<"$spec"
	run_case "rate-$r" "$n" 0 "$r"
done
echo
echo "three clients against latscope sim (step 10 ms, $TOKENS tokens; burst-1400: 20 ms, 100 tokens; $WORDS-word prompts, --ignore-eos; each its own simulator):"
$PY tests/perf/anchors.py --table "$ROWS" 2>"$OUT/../anchors_cmp.json"
