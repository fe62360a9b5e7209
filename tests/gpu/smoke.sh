#!/usr/bin/env bash
# tests/gpu/smoke.sh — the CUPTI path end to end on a machine with an NVIDIA GPU (< 5 minutes).
#
#  1. `latscope sim --gpu` (each step: H2D inputs, a kernel sized by the step model, D2H of the
#     sampled ids) runs with CUDA_INJECTION64_PATH=build/gpu/liblatscope_cupti.so and
#     LATSCOPE_GPU_DIR=<tmp>; `latscope bench` drives 200 requests at 50 req/s.
#  2. latscope-gpu-check compares the recorded steps with the simulator's --truth: the same
#     number of steps, every step's GPU interval inside the host bracket the simulator took
#     around ls_simgpu_step (+-50 us), every record written within 200 ms of its step's end.
#  3. The tracing overhead: the same saturating workload with and without the library,
#     steps per second and the mean host time of a step.
# Exit 0 pass, 1 fail, 77 skip (no NVIDIA driver or GPU here). Run from anywhere:
#   tests/gpu/smoke.sh
# Environment: LATSCOPE_BIN (default build/latscope), SMOKE_SIMGPU_LIB (another step library),
# SMOKE_KEEP=1 (keep the temp directory).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD

skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: no NVIDIA driver on this machine"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "${gpus:-0}" -gt 0 ] || skip "nvidia-smi lists no GPU"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
INJECT=$ROOT/build/gpu/liblatscope_cupti.so
SIMGPU=${SMOKE_SIMGPU_LIB:-$ROOT/build/gpu/liblatscope_simgpu.so}
CHECK=$ROOT/build/gpu/latscope-gpu-check
if [ ! -x "$BIN" ] || [ ! -f "$INJECT" ] || [ ! -f "$SIMGPU" ] || [ ! -x "$CHECK" ]; then
	echo "building (make all)..."
	make -j"$(nproc)" all >/dev/null || fail "make all failed: build latscope first"
fi
[ -f "$SIMGPU" ] || fail "$SIMGPU was not built (is nvcc at \$CUDA_HOME/bin/nvcc?)"
[ -f "$INJECT" ] || fail "$INJECT was not built (is \$CUDA_HOME/include/cupti.h there?)"

TMP=$(mktemp -d /tmp/latscope-gpu-smoke.XXXXXX)
SIM_PID=
cleanup() {
	[ -n "$SIM_PID" ] && kill -KILL "$SIM_PID" 2>/dev/null
	if [ "${SMOKE_KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() { # below the ephemeral range, so no client socket holds it
	local p
	for _ in $(seq 50); do
		p=$((10000 + RANDOM % 20000))
		port_open "$p" || { echo "$p"; return 0; }
	done
	return 1
}

# start_sim NAME WITH_LIB(0|1) SIM_FLAGS... : starts the simulator, waits until it listens.
start_sim() {
	local name=$1 with_lib=$2 attempt
	shift 2
	mkdir -p "$TMP/$name/rings"
	for attempt in 1 2 3 4 5; do
		PORT=$(free_port) || fail "no free loopback port"
		if [ "$with_lib" = 1 ]; then
			CUDA_INJECTION64_PATH=$INJECT LATSCOPE_GPU_DIR=$TMP/$name/rings LATSCOPE_GPU_VERBOSE=1 \
				"$BIN" sim --port "$PORT" --truth "$TMP/$name/truth.jsonl" --gpu --gpu-lib "$SIMGPU" \
				--quiet "$@" 2>"$TMP/$name/sim.log" &
		else
			env -u CUDA_INJECTION64_PATH "$BIN" sim --port "$PORT" --truth "$TMP/$name/truth.jsonl" \
				--gpu --gpu-lib "$SIMGPU" --quiet "$@" 2>"$TMP/$name/sim.log" &
		fi
		SIM_PID=$!
		for _ in $(seq 300); do
			port_open "$PORT" && return 0
			kill -0 "$SIM_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$SIM_PID" 2>/dev/null; then
			cat "$TMP/$name/sim.log"
			fail "latscope sim --gpu ($name) did not listen on $PORT within 30 s"
		fi
		wait "$SIM_PID" 2>/dev/null
		SIM_PID=
		grep -q "Address already in use" "$TMP/$name/sim.log" || break
		echo "  port $PORT taken, retrying ($attempt)"
	done
	cat "$TMP/$name/sim.log"
	fail "latscope sim --gpu ($name) exited at start"
}

stop_sim() {
	kill -INT "$SIM_PID" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$SIM_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$SIM_PID" 2>/dev/null
	wait "$SIM_PID" 2>/dev/null
	SIM_PID=
}

# drive NAME BENCH_FLAGS... : the request load, with latscope bench.
drive() {
	local name=$1
	shift
	timeout 120 "$BIN" bench --base-url "http://127.0.0.1:$PORT" --backend openai \
		--dataset-name random --random-input-len 128 --random-output-len 32 --ignore-eos \
		--num-warmups 0 --seed 1 --ready-check-timeout-sec 30 --disable-tqdm "$@" \
		>"$TMP/$name/bench.out" 2>&1 || { tail -20 "$TMP/$name/bench.out"; fail "latscope bench ($name) failed"; }
}

# 1+2: correctness under the library.
echo "== steps recorded vs the simulator's truth (200 requests at 50 req/s)"
start_sim check 1 --step-ms 2 --decode-token-us 20 --prefill-token-us 1 --max-batch 64
drive check --num-prompts 200 --request-rate 50
sleep 0.5 # every step is written within ~110 ms (50 ms drain + 60 ms reorder window)
cp -r "$TMP/check/rings" "$TMP/check/snapshot" # before exit adds the tail (stamped later)
stop_sim
sed 's/^/  sim: /' "$TMP/check/sim.log"
grep -q "GPU step tracing off" "$TMP/check/sim.log" && fail "the injection library switched itself off (line above)"
ls "$TMP/check/snapshot"/latscope-gpu-* >/dev/null 2>&1 ||
	fail "no step ring in LATSCOPE_GPU_DIR: the CUDA driver did not load $INJECT"
"$CHECK" --truth "$TMP/check/truth.jsonl" --gpu-dir "$TMP/check/snapshot" --slack-us 50 --max-delay-ms 200 |
	sed 's/^/  /'
check_rc=${PIPESTATUS[0]}

# 3: overhead, a saturating load (all requests at once, 4 at a time in 0.2 ms steps: ~1600
# steps back to back) with and without the library.
echo "== tracing overhead (200 requests at once, batch 4, 0.2 ms steps)"
overhead() {
	local name=$1 with_lib=$2
	start_sim "$name" "$with_lib" --step-ms 0.2 --decode-token-us 0 --prefill-token-us 0 --max-batch 4
	drive "$name" --num-prompts 200 --request-rate inf
	stop_sim
	"$CHECK" --truth "$TMP/$name/truth.jsonl" --truth-only
}
without=$(overhead plain 0) || fail "overhead run without the library"
with=$(overhead traced 1) || fail "overhead run with the library"
echo "  without the library: ${without#truth: }"
echo "  with the library:    ${with#truth: }"
rate() { sed -n 's/.*= \([0-9.]*\) steps\/s.*/\1/p' <<<"$1"; }
mean() { sed -n 's/.*mean host bracket \([0-9.]*\) us.*/\1/p' <<<"$1"; }
awk -v a="$(rate "$without")" -v b="$(rate "$with")" -v c="$(mean "$without")" -v d="$(mean "$with")" \
	'BEGIN { if (a > 0 && c > 0) printf "  overhead: %.1f%% fewer steps/s, %+.1f us per step (%+.1f%%)\n", 100 * (a - b) / a, d - c, 100 * (d - c) / c }'

[ "$check_rc" -eq 0 ] || fail "recorded steps do not match the simulator's truth (see above)"
echo "PASS"
