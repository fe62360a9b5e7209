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
start_sim() { # name
	ls_sim_start "$OUT/$1.truth" "$OUT/$1.sim.log" --step-ms 10 --prefill-token-us 0 --decode-token-us 0 \
		--max-batch 4096 --max-batch-tokens 10000000
}

TOKENS=${ANCHORS_TOKENS:-32} WORDS=32
# case n conc rate: the three clients, each against its own simulator.
run_case() {
	local name=$1 n=$2 conc=$3 rate=$4
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
	if start_sim "$t-floor"; then
		$PIN_BENCH "$FLOOR" --port "$PORT" "${flargs[@]}" --input-words $WORDS --output-len $TOKENS --ignore-eos \
			--seed 1 --out "$OUT/$t-floor.jsonl" >"$OUT/$t-floor.out" 2>&1
		stop_sim
		$PY tests/perf/anchors.py "$name" floor "$OUT/$t-floor.jsonl" "$OUT/$t-floor.truth" >>"$ROWS"
	fi
	if start_sim "$t-latscope"; then
		$PIN_BENCH "$BIN" bench --base-url "http://127.0.0.1:$PORT" --model latscope-sim --profile vllm \
			--num-warmups 0 --ignore-eos --random-input-len $WORDS --random-output-len $TOKENS --seed 1 \
			--disable-tqdm --ready-check-timeout-sec 5 "${lsargs[@]}" --record "$OUT/$t-latscope.jsonl" \
			>"$OUT/$t-latscope.out" 2>"$OUT/$t-latscope.err"
		stop_sim
		$PY tests/perf/anchors.py "$name" latscope "$OUT/$t-latscope.jsonl" "$OUT/$t-latscope.truth" \
			"$OUT/$t-latscope.out" >>"$ROWS"
	fi
	if [ $PY_OK = 1 ] && start_sim "$t-python"; then
		$PIN_BENCH $PY tests/clients/aiohttp_client.py --base-url "http://127.0.0.1:$PORT" --model latscope-sim \
			"${pyargs[@]}" --input-words $WORDS --output-len $TOKENS --ignore-eos --seed 1 \
			--save-result "$OUT/$t-python.json" >"$OUT/$t-python.out" 2>&1
		stop_sim
		$PY tests/perf/anchors.py "$name" python "$OUT/$t-python.json" "$OUT/$t-python.truth" >>"$ROWS"
	elif [ $PY_OK = 0 ]; then
		echo "{\"case\":\"$name\",\"client\":\"python\",\"error\":\"no aiohttp for $PY\"}" >>"$ROWS"
	fi
	echo "  done: anchors $name" >&2
}

if [ "$QUICK" = 1 ]; then
	BURSTS="1:8 16:32 64:64 256:256 1024:1024"; RATES="100:100 1000:500"
else
	BURSTS="1:16 16:128 64:256 256:1024 1024:1024"; RATES="100:200 1000:2000"
fi
# ANCHORS_CASES="burst:C:N ... rate:R:N" runs only those (the issue's comparisons).
if [ -n "${ANCHORS_CASES:-}" ]; then
	BURSTS=$(tr ' ' '\n' <<<"$ANCHORS_CASES" | sed -n 's/^burst://p' | tr '\n' ' ')
	RATES=$(tr ' ' '\n' <<<"$ANCHORS_CASES" | sed -n 's/^rate://p' | tr '\n' ' ')
fi
[ "${ANCHORS_NO_PYTHON:-0}" = 1 ] && PY_OK=2
for spec in $BURSTS; do
	IFS=: read -r c n <<<"$spec"
	run_case "burst-$c" "$n" "$c" inf
done
for spec in $RATES; do
	IFS=: read -r r n <<<"$spec"
	run_case "rate-$r" "$n" 0 "$r"
done
echo
echo "three clients against latscope sim (step 10 ms, $WORDS-word prompts, $TOKENS tokens, --ignore-eos; each its own simulator):"
$PY tests/perf/anchors.py --table "$ROWS" 2>"$OUT/../anchors_cmp.json"
