#!/usr/bin/env bash
# tests/perf/watch_cost.sh — what `latscope watch` costs the harness it watches: the Python client
# (tests/clients/aiohttp_client.py, Debian python3-aiohttp) against `latscope sim` at C
# concurrent streams, its own reported numbers (mean TTFT, median and P99 ITL, from its
# --save-result JSON) without and with watch, alternating ROUNDS times; and the probes' events
# per read of response bytes (watch's report). Then, from the watched runs, the reported vs
# kernel-level TTFT and ITL table. A benchmark, not a pass/fail test. Needs root and BTF.
# Usage: tests/perf/watch_cost.sh [C...]   (default 64); env ROUNDS (2), PROMPTS (4 x C), TOKENS (32).
set -u
cd "$(dirname "$0")/../.."
BIN=${LATSCOPE_BIN:-$PWD/build/latscope}
PY=/usr/bin/python3
OUT=${LATSCOPE_PERF_DIR:-$PWD/build/perf}/watch
ROUNDS=${ROUNDS:-2} TOKENS=${TOKENS:-32}
mkdir -p "$OUT"
[ "$(id -u)" -eq 0 ] && [ -r /sys/kernel/btf/vmlinux ] || { echo "watch_cost: skipped (needs root and kernel BTF)"; exit 0; }
"$PY" -c 'import aiohttp' 2>/dev/null || { echo "watch_cost: skipped (no $PY with aiohttp)"; exit 0; }
CS=${*:-64}
SIM=0
. tests/lib/sim.bash
stop_sim() { ls_sim_stop; }
trap stop_sim EXIT
start_sim() { # max-batch
	ls_sim_start "" "$OUT/sim.log" --step-ms 10 --max-batch "$1" --max-batch-tokens 1000000 && return 0
	echo "watch_cost: the simulator did not start" >&2; exit 1
}
field() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print('%.3f %.3f %.3f %d' % (d['mean_ttft_ms'], d['median_itl_ms'], d['p99_itl_ms'], d['failed']))" "$1"; }
printf '%-5s %-5s %5s | %9s %9s %9s %6s | %s\n' C watch round "TTFT mean" "ITL P50" "ITL P99" failed "probe events per read"
for c in $CS; do
	start_sim $((c + 16))
	client=("$PY" tests/clients/aiohttp_client.py --base-url "http://127.0.0.1:$PORT" --model latscope-sim
		--num-prompts "${PROMPTS:-$((4 * c))}" --max-concurrency "$c" --output-len "$TOKENS" --ignore-eos)
	for r in $(seq "$ROUNDS"); do
		for mode in off on; do
			res=$OUT/c$c-$mode-$r.json
			if [ $mode = off ]; then
				"${client[@]}" --save-result "$res" >/dev/null 2>&1
				ev=-
			else
				"$BIN" watch --output "$OUT/c$c-$r.txt" --harness-result "$res" -- "${client[@]}" --save-result "$res" \
					>/dev/null 2>"$OUT/c$c-$r.err"
				ev=$(awk '/^probes:/ { print $2 " events, " $4 " per read" }' "$OUT/c$c-$r.txt")
			fi
			read -r t i p f < <(field "$res")
			printf '%-5s %-5s %5s | %9s %9s %9s %6s | %s\n' "$c" "$mode" "$r" "$t" "$i" "$p" "$f" "$ev"
		done
	done
	stop_sim
	echo "C=$c, watched, round 1: reported vs kernel-level (ms):"
	awk '/^Reported by the harness/ { on = 1; next } on && /reported TTFT starts/ { on = 0 } on' "$OUT/c$c-1.txt"
done
echo "reports: $OUT/c*-*.txt"
