#!/usr/bin/env bash
# tests/integration/record_roundtrip.sh — a run is a value: `bench --record R --save-result A.json
# --html A.html` then `report R --save-result B.json --html B.html` give the same result JSON (every
# key and value) and the same page (every table cell and the charts' data but the command line and
# what was read), for: a plain run (probes on where root and BTF allow: the attribution file read
# back), a run with faults, --preconnect 4, a server killed mid-run, a SIGINT-interrupted run, and
# an MPI run's rank files. Each case also checks the figure it is about in B.json, against what
# the run did (the server's kill, the 4 connections, the interrupt), so a field the record loses
# fails here even when both sides would agree on its absence. A run with --server-metrics-ms
# keeps its /metrics series (result JSON and the page's chart data). ~40 s.
set -u
. "$(dirname "$0")/mpi_lib.bash" 2>/dev/null || true # BIN, MPIRUN, skip/fail, start_sim, $tmp
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
RT="python3 $ROOT/tests/integration/roundtrip_check.py"
[ -n "${tmp:-}" ] || { echo "skip: tests/integration/mpi_lib.bash did not load"; exit 77; }
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
COMMON=(--model latscope-sim --dataset-name random --random-input-len 32 --random-output-len 24 --seed 5
	--disable-tqdm)

# bench (args) -> report; JSON and page compared; extra args of `has` checked in B.json.
roundtrip() { # name "checks..." bench-args...
	local name=$1 checks=$2 d=$tmp/$1
	shift 2
	mkdir -p "$d"
	(cd "$d" && "$BIN" bench "${COMMON[@]}" --record R.jsonl --save-result --result-filename A.json \
		--html A.html "$@" >bench.out 2>bench.err)
	echo "$name: bench exited $?"
	compare "$name" "$checks"
}

compare() { # name "checks..." [record files...] (ALIAS=X=Y: X in report's output reads as Y)
	local name=$1 checks=$2 d=$tmp/$1
	local -a al=()
	[ -n "${ALIAS:-}" ] && al=(--alias "$ALIAS")
	shift 2
	local files=("$@")
	[ ${#files[@]} -eq 0 ] && files=(R.jsonl)
	[ -s "$d/A.json" ] || { bad "$name: bench wrote no result JSON: $(tail -3 "$d/bench.err")"; return; }
	(cd "$d" && "$BIN" report "${files[@]}" --save-result B.json --html B.html >report.out 2>report.err) ||
		{ bad "$name: report exited $?: $(tail -3 "$d/report.err")"; return; }
	$RT json "$d/A.json" "$d/B.json" "${al[@]}" || bad "$name: the result JSON read back differs (above)"
	$RT html "$d/A.html" "$d/B.html" "${al[@]}" || bad "$name: the page read back differs (above)"
	# shellcheck disable=SC2086 # checks are words
	[ -z "$checks" ] || $RT has "$d/B.json" $checks || bad "$name: the report of the records lost a figure (above)"
	echo "ok: $name: report of the records = bench's report ($(grep -c '"id"' "$d/${files[0]}") request lines)"
}

start_sim --step-ms 5
probes=0
[ "$(id -u)" -eq 0 ] && [ -r /sys/kernel/btf/vmlinux ] && probes=1

# 1. plain, probes on where they can be (the attribution file beside the records, read back).
roundtrip plain "completed=40 latscope/interrupted=false latscope/server_gone! latscope/preconnect=null" \
	--base-url "$URL" --num-prompts 40 --request-rate 40 --max-concurrency 8
if [ $probes -eq 1 ]; then
	[ -s "$tmp/plain/R.attribution.jsonl" ] || bad "plain: probes on but no attribution file"
	grep -q "R.attribution.jsonl" "$tmp/plain/B.html" || bad "plain: report's page did not read the attribution file"
else
	echo "SKIP  the attribution file read back: needs root and /sys/kernel/btf/vmlinux"
fi

# 2. --preconnect 4: the run's 4 connections, and the line saying so, survive the record.
roundtrip preconnect "latscope/preconnect/connections=4 latscope/preconnect/ms?" \
	--base-url "$URL" --num-prompts 30 --request-rate 50 --max-concurrency 4 --preconnect 4
grep -q "Preconnected: *4 connections before the clock" "$tmp/preconnect/report.out" ||
	bad "preconnect: report's text does not say the 4 connections were opened before the run"

# 2b. --server-metrics-ms: the /metrics series (samples, misses, its chart's data) read back.
roundtrip gauges "latscope/server_metrics/engine=\"vllm\" latscope/server_metrics/samples? latscope/server_metrics/polls?" \
	--base-url "$URL" --num-prompts 30 --request-rate 50 --max-concurrency 4 --server-metrics-ms 20
grep -q "Server /metrics (vllm names)" "$tmp/gauges/report.out" ||
	bad "gauges: report's text has no Server /metrics block"
ls_sim_stop

# 3. faults: failures by reason equal on both sides, and some there (the storm struck).
ls_sim_start "" "$tmp/sim-faults.log" --step-ms 5 --fail-rate 0.3 --fail-kind mixed --seed 11 || fail "sim (faults)"
roundtrip faults "latscope/failures?" --base-url "http://127.0.0.1:$PORT" --num-prompts 60 --request-rate 100 \
	--skip-initial-test --request-timeout 5
ls_sim_stop

# A bench run in the background on a fresh simulator (sets bench_pid): something happens to it.
bench_bg() { # name num-prompts rate
	ls_sim_start "" "$tmp/sim-$1.log" --step-ms 5 || fail "sim ($1)"
	mkdir -p "$tmp/$1"
	(cd "$tmp/$1" && exec "$BIN" bench "${COMMON[@]}" --base-url "http://127.0.0.1:$PORT" --num-prompts "$2" \
		--request-rate "$3" --record R.jsonl --save-result --result-filename A.json --html A.html \
		>bench.out 2>bench.err) &
	bench_pid=$!
	# Something happens once the run is under way: a request recorded (a fixed 1.5 s was not
	# enough under load: the server was killed before bench's initial test request).
	local i
	for i in $(seq 300); do
		[ "$(grep -c '"id"' "$tmp/$1/R.jsonl" 2>/dev/null)" -ge 1 ] && break
		kill -0 "$bench_pid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 1
}

# 4. the server killed mid-run: "server gone" and its count read back.
bench_bg gone 80 20
kill -KILL "$SIM"; wait "$SIM" 2>/dev/null; SIM=0
wait $bench_pid
compare gone "latscope/server_gone/at_s? latscope/server_gone/connect_failures_since?"

# 5. SIGINT mid-run: the interrupt and what was sent read back.
bench_bg int 200 40
kill -INT $bench_pid
wait $bench_pid
compare int "latscope/interrupted=true"
sent=$(grep -c '"id"' "$tmp/int/R.jsonl")
[ "$sent" -gt 10 ] && [ "$sent" -lt 200 ] || bad "int: $sent request lines: the interrupt did not cut the run"

# 6. An MPI run's rank files read back as the merged run rank 0 reported.
if command -v mpirun >/dev/null 2>&1 && "$BIN" bench --help 2>&1 | grep -q .; then
	mkdir -p "$tmp/mpi"
	(cd "$tmp/mpi" && timeout -k 5 60 "${MPIRUN[@]}" -n 2 "$BIN" bench "${COMMON[@]}" --base-url "http://127.0.0.1:$PORT" \
		--num-prompts 40 --request-rate 40 --probes off --record R.jsonl --save-result --result-filename A.json \
		--html A.html >bench.out 2>bench.err)
	rc=$?
	if grep -q "MPI is off in this build" "$tmp/mpi/bench.err"; then
		echo "SKIP  MPI rank files: this build has no MPI"
	elif [ $rc -ne 0 ]; then
		bad "mpi: mpirun -n 2 exited $rc: $(tail -3 "$tmp/mpi/bench.err")"
	else
		ALIAS=R.jsonl.rank0=R.jsonl compare mpi "completed=40" R.jsonl.rank0 R.jsonl.rank1
		cp "$tmp/mpi/B.json" "$tmp/mpi/B-ranks.json"
		compare mpi "completed=40" R.jsonl # the merged file rank 0 wrote
	fi
fi
ls_sim_stop

[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "ok: every run read back from its record file reports as it did"
