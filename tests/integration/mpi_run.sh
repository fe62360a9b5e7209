#!/usr/bin/env bash
# tests/integration/mpi_run.sh — `mpirun -n 2` and `-n 3 latscope bench` against `latscope sim
# --truth` on this host: completed + failed = num-prompts and every id once in the merged record;
# the merged scheduled offsets equal a single process's with the same seed; the realised rate is
# the target; median TTFT and ITL agree with the truth; the report's success and failure counts
# are the records'; each rank's clock offset is within its stated uncertainty of its own: 0, or
# +1000 s for -n 2's rank 1, run in a time namespace (the offset's sign, and the start instant
# moved into that rank's clock the right way); each rank has its own probes or says why not; with probes on (root and
# BTF, the simulator watched), the attribution covers every rank's requests, each from its own
# rank's events, and its server part of TTFT agrees with the truth per rank; `latscope report` of
# the rank files gives the bench's numbers; a merge that does not fit is spilled. Skips (77)
# without mpirun or in a build without libopenmpi-dev. ~25 s on a loaded 2-core VM.
set -u
. "$(dirname "$0")/mpi_lib.bash"

NUM=120 RATE=60
start_sim --step-ms 5
ARGS=(--base-url "$URL" --model latscope-sim --dataset-name random --random-input-len 32
      --random-output-len 16 --ignore-eos --num-prompts $NUM --request-rate $RATE --seed 7
      --disable-tqdm)

"$BIN" bench "${ARGS[@]}" --probes off --record "$tmp/single.jsonl" >"$tmp/single.out" 2>"$tmp/single.err" ||
	{ cat "$tmp/single.err"; fail "the single-process run failed"; }

# Probes need root and a kernel with BTF; without them the attribution checks are skipped, loudly.
probes_ok=1
if [ "$(id -u)" -ne 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	probes_ok=0
	echo "SKIP  the attribution over every rank (probes on): needs root and /sys/kernel/btf/vmlinux"
fi
# Every rank's requests attributed, each with its own rank's events (tag: the run's files).
check_attribution() { # tag n
	[ $probes_ok -eq 1 ] || return 0
	grep -q "probes off" "$tmp/$1.out" && { grep "probes off" "$tmp/$1.out"; fail "-n $2: probes off as root with BTF"; }
	python3 "$CHECK" attribution "$tmp/$1.attribution.jsonl" "$tmp/$1.jsonl" "$tmp/truth.jsonl" "$2" ||
		fail "-n $2: the attribution does not cover every rank's requests (see above)"
	grep -q "the attribution above is every rank's requests" "$tmp/$1.out" || fail "-n $2: the report does not say whose requests the attribution covers"
}

for n in 2 3; do
	# -n 2 without probes (each rank says so), -n 3 with them where root and BTF allow (the
	# simulator watched: the server's part split out).
	# -n 2's rank 1 runs in a time namespace whose clock is the host's + 1000 s (probes off: the
	# kernel's stamps stay in the host's clock): its offset must be +1000 s, and the start it is
	# given must be rank 0's in its clock, or its schedule is not the single process's.
	probes=(--probes off) shift=1000
	# -n 3's ranks 1 and 2 run a day ahead with the probes on: their kernel stamps (the host's
	# clock) are moved into each rank's own clock, then with its records into rank 0's.
	[ $n -eq 3 ] && probes=(--probes auto --server-pid "$sim_pid") shift=86400
	MPI_SHIFT_S=$shift run_mpi "n$n" "$n" "${ARGS[@]}" "${probes[@]}" --record "$tmp/n$n.jsonl" ||
		{ tail -20 "$tmp/n$n.err"; fail "mpirun -n $n latscope bench exited $?"; }
	sed -n '/MPI: /,/^merge: /p' "$tmp/n$n.out"
	ranks=()
	for ((k = 0; k < n; k++)); do ranks+=("$tmp/n$n.jsonl.rank$k"); done
	MPI_SHIFT_S=$shift python3 "$CHECK" merged "$tmp/single.jsonl" "$tmp/n$n.jsonl" "$tmp/truth.jsonl" "$n" $NUM $RATE \
		"$tmp/n$n.out" "${ranks[@]}" || fail "mpirun -n $n: see the checks above"
	# The rank files merged by `latscope report` read as the merged file does.
	"$BIN" report "${ranks[@]}" >"$tmp/n$n.ranks.txt" 2>"$tmp/n$n.ranks.err" || fail "latscope report of the rank files"
	"$BIN" report "$tmp/n$n.jsonl" >"$tmp/n$n.merged.txt" 2>/dev/null || fail "latscope report of the merged file"
	diff <(grep -E '^(Successful|Failed|Mean|Median|P99)' "$tmp/n$n.ranks.txt") \
	     <(grep -E '^(Successful|Failed|Mean|Median|P99)' "$tmp/n$n.merged.txt") ||
		fail "-n $n: the rank files report other numbers than the merged file"
	echo "ok    -n $n: latscope report of the rank files = the merged file ($(cat "$tmp/n$n.ranks.err"))"
	[ $n -eq 3 ] && check_attribution "n$n" "$n"
done
# -n 2 with the probes on (when they can be): the attribution of both ranks' requests.
if [ $probes_ok -eq 1 ]; then
	run_mpi p2 2 "${ARGS[@]}" --probes on --server-pid "$sim_pid" --record "$tmp/p2.jsonl" --html "$tmp/p2.html" ||
		{ tail -20 "$tmp/p2.err"; fail "mpirun -n 2 latscope bench --probes on exited $?"; }
	sed -n '/^client delay per frame/,/^harness cost/p;/^merge: /p' "$tmp/p2.out"
	check_attribution p2 2
	# The page draws the same attribution: every request of the run, not rank 0's share.
	grep -q "TTFT: the parts at P50, P90, P99 (ms, n=$NUM)" "$tmp/p2.html" ||
		fail "-n 2: the HTML page's attribution is not every request's ($(grep -o 'TTFT: the parts[^<]*' "$tmp/p2.html"))"
	echo "ok    -n 2: the HTML page's attribution covers all $NUM requests"
	# The records fit, the other ranks' events do not (LATSCOPE_MPI_SPILL=events says so): the
	# report stays, its attribution is rank 0's requests and says so.
	LATSCOPE_MPI_SPILL=events MPI_X=LATSCOPE_MPI_SPILL run_mpi drop 2 "${ARGS[@]}" --num-prompts 30 --probes on \
		--server-pid "$sim_pid" --record "$tmp/drop.jsonl" || { tail -5 "$tmp/drop.err"; fail "-n 2, events dropped: exit $?"; }
	grep -q "the attribution covers rank 0's requests only" "$tmp/drop.err" || fail "no word of the dropped events"
	grep -q "the attribution above is rank 0's requests only" "$tmp/drop.out" || fail "the report does not say the attribution is rank 0's"
	python3 - "$tmp/drop.attribution.jsonl" <<'PY' || fail "-n 2, events dropped: rank 1's requests are not marked no_events"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])][1:]
odd = [o for o in lines if o["id"] % 2]
sys.exit(0 if len(lines) == 30 and odd and all("no_events" in o["flags"] for o in odd) and
         not any("no_events" in o["flags"] for o in lines if o["id"] % 2 == 0) else 1)
PY
	echo "ok    -n 2: other ranks' events that do not fit are let go, the report kept and saying so"
fi
# A merge that does not fit in rank 0's memory (LATSCOPE_MPI_SPILL=1 says so) spills every record
# to the record file instead of reporting: each request once there, as `latscope report` reads it.
LATSCOPE_MPI_SPILL=1 MPI_X=LATSCOPE_MPI_SPILL run_mpi spill 2 "${ARGS[@]}" --probes off --record "$tmp/spill.jsonl"
rc=$?
[ $rc -eq 1 ] || { tail -5 "$tmp/spill.err"; fail "a spilled run exited $rc, not 1"; }
grep -q "every record goes to $tmp/spill.jsonl" "$tmp/spill.err" || { cat "$tmp/spill.err"; fail "no word of the spill"; }
grep -q "Successful requests" "$tmp/spill.out" && fail "a spilled run printed a report of part of it"
"$BIN" report "$tmp/spill.jsonl" >"$tmp/spill.txt" 2>/dev/null || fail "latscope report of the spilled file"
python3 "$CHECK" killed "$tmp/spill.txt" "$tmp/spill.jsonl" || fail "the spilled file"
grep -q "^Successful requests: *$NUM " "$tmp/spill.txt" || fail "the spilled file does not hold all $NUM requests"
echo "ok    a merge that does not fit is spilled to the record file, every request once"
echo "mpi_run: ok"
