#!/usr/bin/env bash
# tests/perf/engine_uprobe_cost.sh — what latscope's engine-step uprobes (bpf/engine.bpf.c on
# llama_decode) cost per step, trap included (a benchmark, not a pass/fail test). A stub process
# with llama.cpp's llama_decode ABI (tests/perf/llama_decode_stub.c) calls it in a tight loop and
# prints its median ns per call every 0.2 s; latscope bench runs against `latscope sim` with
# --server-pid STUB in the middle, so the stub's calls are probed for a while. Printed: the
# median ns per call without and with the probes, for 1-token calls (a decode step) and 64-token
# calls (a prompt step: one seq id read per token). Needs root (exits 77 otherwise).
# Usage: tests/perf/engine_uprobe_cost.sh
set -u
cd "$(dirname "$0")/../.."
BIN=${LATSCOPE_BIN:-$PWD/build/latscope}
[ "$(id -u)" -eq 0 ] || { echo "skip: probes need root"; exit 77; }
[ -x "$BIN" ] || { echo "skip: $BIN not built (make)"; exit 77; }
TMP=$(mktemp -d) || exit 1
cc -O2 -o "$TMP/stub" tests/perf/llama_decode_stub.c || exit 1
PORT=$((20000 + RANDOM % 20000))
"$BIN" sim --port "$PORT" --step-ms 2 --quiet & SIM=$!
trap 'kill $SIM 2>/dev/null; wait $SIM 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done

STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'kill $SIM 2>/dev/null; wait $SIM 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"; rm -rf "$TMP"' EXIT

# The BPF programs' own time per call (kernel.bpf_stats_enabled), the last sample of the run.
bpf_ns() {
	python3 -c '
import json, sys
best = {}
for line in open(sys.argv[1]):
    if line.strip():
        for p in json.loads(line):
            if p.get("name", "").startswith("ls_llama_decode") and "run_cnt" in p and p["run_cnt"] >= best.get(p["id"], (0, 0))[0]:
                best[p["id"]] = (p["run_cnt"], p["run_time_ns"])
calls = sum(c for c, _ in best.values())
print(f"{sum(t for _, t in best.values()) / max(1, calls) * 2:.0f}")' "$1"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "nan" }'; }

for tokens in 1 64; do
	"$TMP/stub" "$tokens" 14 >"$TMP/ns.$tokens" & STUB=$!
	sleep 2.5 # before the probes: lines 1-10
	"$BIN" bench --base-url "http://127.0.0.1:$PORT" --model m --random-input-len 8 --random-output-len 4 \
		--num-prompts 400 --request-rate 100 --num-warmups 0 --skip-initial-test --disable-tqdm \
		--probes on --server-pid "$STUB" >"$TMP/bench.$tokens" 2>&1 &
	BENCH=$!
	while kill -0 $BENCH 2>/dev/null; do bpftool -j prog show >>"$TMP/progs.$tokens" 2>/dev/null; echo >>"$TMP/progs.$tokens"; sleep 0.2; done
	wait $BENCH
	wait $STUB
	# The first 10 lines came before the probes; the ones with them are the slow ones (> 100 ns).
	off=$(head -10 "$TMP/ns.$tokens" | median)
	on=$(awk '$1 > 100' "$TMP/ns.$tokens" | median) # batches with the probes on
	grep -q "no llama_decode" "$TMP/bench.$tokens" && { echo "the stub was not probed:"; tail -3 "$TMP/bench.$tokens"; exit 1; }
	echo "llama_decode with $tokens token(s) per call: $off ns without the uprobes, $on ns with them:" \
	     "$(awk -v a="$off" -v b="$on" 'BEGIN { printf "%.0f", b - a }') ns per step, of which the BPF programs" \
	     "(entry + return) $(bpf_ns "$TMP/progs.$tokens") ns"
done
