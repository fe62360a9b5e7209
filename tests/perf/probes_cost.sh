#!/usr/bin/env bash
# tests/perf/probes_cost.sh — what the eBPF probes cost (a benchmark, not a pass/fail test).
# Runs the same workload against `latscope sim` with --probes off and on, alternating, and
# prints CPU time per request and per frame of the harness and of the simulator (both sides
# carry probe work: the simulator's sends and the softirq deliveries run in its context). The
# harness's process time includes loading the probes (~0.1 s) and attributing the run after it;
# "in run" is bench's own harness-cost line (open -> end of the run), what the probes add per
# request while it runs.
# Needs root; exits 77 (skip) when not root or when bench does not wire the probes yet.
# Usage: tests/perf/probes_cost.sh [requests] [output_tokens] [rounds]
set -u
cd "$(dirname "$0")/../.."
BIN=${LATSCOPE_BIN:-$PWD/build/latscope}
N=${1:-400} OUT=${2:-32} ROUNDS=${3:-3}
[ "$(id -u)" -eq 0 ] || { echo "skip: probes need root"; exit 77; }
[ -x "$BIN" ] || { echo "skip: $BIN not built (make)"; exit 77; }
PORT=$((20000 + RANDOM % 20000))
"$BIN" sim --port "$PORT" --step-ms 2 --quiet & SIM=$!
trap 'kill $SIM 2>/dev/null; wait $SIM 2>/dev/null' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done

sched_ns() { awk '{print $1}' "/proc/$1/schedstat"; }

# One run: prints "cpu_harness_ns cpu_sim_ns in_run_us_per_request" on stdout.
run() { # probes
	local s0 s1 out h
	s0=$(sched_ns $SIM)
	out=$( { TIMEFORMAT='%3U %3S'; time "$BIN" bench --base-url "http://127.0.0.1:$PORT" --model m \
		--random-input-len 16 --random-output-len "$OUT" --ignore-eos --num-prompts "$N" \
		--max-concurrency 16 --connection per-request --num-warmups 0 --disable-tqdm \
		--ready-check-timeout-sec 5 --probes "$1" --server-pid $SIM >/tmp/probes_cost.$$.out 2>&1; } 2>&1 )
	s1=$(sched_ns $SIM)
	h=$(awk '{printf "%.0f", ($1 + $2) * 1e9}' <<<"$out")
	inrun=$(awk '/^harness cost/ { for (i = 1; i <= NF; i++) if ($i == "per" && $(i + 1) == "request,") print $(i - 2) }' \
		/tmp/probes_cost.$$.out)
	echo "$h $((s1 - s0)) ${inrun:--}"
}

run on >/dev/null
if ! grep -q "Where the latency went" /tmp/probes_cost.$$.out; then
	echo "skip: latscope bench does not report attribution with --probes on yet"
	tail -3 /tmp/probes_cost.$$.out; rm -f /tmp/probes_cost.$$.out; exit 77
fi
frames=$((N * (OUT + 2))) # ignore-eos: OUT token frames + usage/[DONE]
printf '%-6s %5s %14s %14s %14s %14s\n' probes round "harness us/req" "(in run)" "sim us/req" "total us/frame"
for r in $(seq "$ROUNDS"); do
	for mode in off on; do
		read -r h s inrun < <(run $mode)
		awk -v m=$mode -v r="$r" -v h="$h" -v s="$s" -v n="$N" -v f=$frames -v i="$inrun" \
			'BEGIN { printf "%-6s %5d %14.1f %14s %14.1f %14.2f\n", m, r, h/n/1e3, i, s/n/1e3, (h+s)/f/1e3 }'
	done
done
rm -f /tmp/probes_cost.$$.out
