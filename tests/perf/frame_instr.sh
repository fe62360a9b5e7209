#!/usr/bin/env bash
# tests/perf/frame_instr.sh — latscope's user-space instructions per streamed frame (callgrind:
# load-independent, so it compares builds on a shared machine). One burst of C streams x TOK
# tokens against `latscope sim` with a slow step (so callgrind's slowdown does not change how
# many frames each read carries), then instructions per frame: the whole run, the body callback
# (SSE split + frame decode), the decode alone, libcurl's socket action, the ring's completions.
# Not part of `make bench`. Usage: tests/perf/frame_instr.sh [C] [TOK] [STEP_MS]
set -u
cd "$(dirname "$0")/../.."
BIN=${LATSCOPE_BIN:-$PWD/build/latscope}
OUT=${LATSCOPE_PERF_DIR:-$PWD/build/perf}
C=${1:-256} TOK=${2:-32} STEP=${3:-400} BACKEND=${FRAME_INSTR_BACKEND:-openai}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "frame_instr: $BIN not built (make)"; exit 1; }
command -v valgrind >/dev/null || { echo "frame_instr: valgrind not installed"; exit 77; }
SIM=0
trap '[ $SIM -gt 0 ] && kill $SIM 2>/dev/null; wait 2>/dev/null' EXIT
for _ in 1 2 3 4 5; do
	PORT=$((20000 + RANDOM % 30000))
	"$BIN" sim --port "$PORT" --quiet --step-ms "$STEP" --prefill-token-us 0 --decode-token-us 0 \
		--max-batch $((C + 16)) --max-batch-tokens 1000000 2>/dev/null &
	SIM=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break 2
		kill -0 $SIM 2>/dev/null || break
		sleep 0.05
	done
done
valgrind -q --tool=callgrind --callgrind-out-file="$OUT/frame_instr.out" "$BIN" bench \
	--base-url "http://127.0.0.1:$PORT" --model latscope-sim --backend "$BACKEND" --ignore-eos \
	--num-warmups 0 --disable-tqdm --random-input-len 16 --num-prompts "$C" --max-concurrency "$C" \
	--random-output-len "$TOK" --probes off --record "$OUT/frame_instr.jsonl" >"$OUT/frame_instr.log" 2>&1
frames=$(python3 -c 'import json,sys
n=0
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r.get("type","request")=="request": n+=len(r.get("frames",[])) if isinstance(r.get("frames"),list) else r.get("n_frames",0)
print(n)' "$OUT/frame_instr.jsonl" 2>/dev/null)
callgrind_annotate --inclusive=yes "$OUT/frame_instr.out" >"$OUT/frame_instr.txt" 2>/dev/null
total=$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }' "$OUT/frame_instr.txt")
incl() { awk -v f="$1" '$0 ~ f { gsub(",", "", $1); print $1; exit }' "$OUT/frame_instr.txt"; }
echo "frames: ${frames:-?} ($C streams x $TOK tokens, $BACKEND, step $STEP ms)"
for f in "PROGRAM TOTALS" ":ls_driver_run " ":on_body " ":ls_backend_decode " ":ls_frame_fast " ":ls_sse_feed " ":curl_multi_socket_action " \
	":take_completions " ":drv_sock_cqe "; do
	v=$(incl "$f")
	[ -n "$v" ] && [ -n "${frames:-}" ] && [ "$frames" -gt 0 ] &&
		printf '%-28s %14s Ir  %8.0f per frame\n' "${f#:}" "$v" "$(echo "$v / $frames" | bc -l)"
done
