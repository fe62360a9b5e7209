#!/usr/bin/env bash
# tests/perf/profile.sh — where the harness's time goes (not part of `make bench`: callgrind is
# slow). Runs one streaming case against `latscope sim` (sim and harness on different cores)
# under `perf record` (self time by symbol, kernel included) and under valgrind's callgrind
# (instruction counts, stable on a shared machine; inclusive by function), and prints the top
# entries of each. Output also in build/perf/profile-{perf,callgrind}.txt.
# Usage: tests/perf/profile.sh [streams] [tokens] [--probes on|off]
set -u
cd "$(dirname "$0")/../.."
BIN=${LATSCOPE_BIN:-$PWD/build/latscope}
OUT=${LATSCOPE_PERF_DIR:-$PWD/build/perf}
C=${1:-200} TOK=${2:-50} PROBES=${4:-off}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "profile: $BIN not built (make)"; exit 1; }
PIN_SIM="" PIN_BENCH=""
[ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null && PIN_SIM="taskset -c 1" PIN_BENCH="taskset -c 0"
SIM=0
trap '[ $SIM -gt 0 ] && kill $SIM 2>/dev/null; wait 2>/dev/null' EXIT

start_sim() {
	for _ in 1 2 3 4 5; do
		PORT=$((20000 + RANDOM % 30000))
		$PIN_SIM "$BIN" sim --port "$PORT" --quiet --step-ms 10 --prefill-token-us 0 --decode-token-us 0 \
			--max-batch $((C + 16)) --max-batch-tokens 1000000 2>/dev/null &
		SIM=$!
		for _ in $(seq 100); do
			(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
			kill -0 $SIM 2>/dev/null || break
			sleep 0.05
		done
	done
	echo "profile: the simulator did not start"; exit 1
}
bench() { # runner...
	"$@" "$BIN" bench --base-url "http://127.0.0.1:$PORT" --model latscope-sim --ignore-eos --num-warmups 0 \
		--disable-tqdm --random-input-len 16 --num-prompts "$C" --max-concurrency "$C" \
		--random-output-len "$TOK" --probes "$PROBES" --record "$OUT/profile.jsonl" >"$OUT/profile.out" 2>&1
}

echo "== perf record: $C streams x $TOK tokens, probes $PROBES (self time, top 25)"
if command -v perf >/dev/null; then
	start_sim
	bench $PIN_BENCH perf record -q -F 4999 -o "$OUT/perf.data"
	kill $SIM; wait $SIM 2>/dev/null; SIM=0
	perf report -i "$OUT/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null |
		grep -E '^ +[0-9.]+%' | head -25 | tee "$OUT/profile-perf.txt"
	grep '^harness cost' "$OUT/profile.out"
else
	echo "perf not installed"
fi

echo
echo "== callgrind: the same case (instructions, inclusive, top 30 functions of latscope, libcurl, cJSON)"
if command -v valgrind >/dev/null; then
	start_sim
	bench $PIN_BENCH valgrind -q --tool=callgrind --callgrind-out-file="$OUT/callgrind.out"
	kill $SIM; wait $SIM 2>/dev/null; SIM=0
	frames=$(awk '/^harness cost/ { for (i = 1; i <= NF; i++) if ($i == "frames);") print $(i - 1) }' "$OUT/profile.out")
	echo "(frames: ${frames:-?}; Ir / frames = instructions per frame)"
	callgrind_annotate --inclusive=yes "$OUT/callgrind.out" 2>/dev/null |
		grep -E 'latscope\]|libcurl|libcjson|cJSON' | grep -v 'below main\|main.c:main' | head -30 |
		tee "$OUT/profile-callgrind.txt"
else
	echo "valgrind not installed"
fi
