#!/usr/bin/env bash
# tests/integration/mpi_kill.sh — kill -9 of one rank of `mpirun -n 3 latscope bench --record F`
# mid-run: the job ends, non-zero; every rank file holds whole lines; `latscope report F.rank0
# F.rank1 F.rank2` reports every finished request once. Then SIGTERM to every rank (scancel's
# way): a graceful stop, and rank 0 reports what was sent. Skips (77) without mpirun or in a
# build without libopenmpi-dev. ~20 s.
set -u
. "$(dirname "$0")/mpi_lib.bash"

NUM=200 RATE=20 N=3
start_sim --step-ms 5
REC=$tmp/rec.jsonl
run_mpi kill $N --base-url "$URL" --model latscope-sim --dataset-name random --random-input-len 32 \
	--random-output-len 16 --ignore-eos --num-prompts $NUM --request-rate $RATE --seed 5 --disable-tqdm \
	--probes off --record "$REC" &
job_pid=$!

# Rank 1 once its file has requests in it (the run is under way): its pid by its MPI rank.
victim=''
for _ in $(seq 300); do
	if [ -f "$REC.rank1" ] && [ "$(wc -l <"$REC.rank1")" -ge 20 ]; then
		for p in $(pgrep -f -- "$REC"); do
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
		done
		break
	fi
	kill -0 "$job_pid" 2>/dev/null || break # the job ended before it (no MPI, a failure)
	sleep 0.1
done
grep -q "MPI is off in this build" "$tmp/kill.err" 2>/dev/null &&
	skip "this latscope was built without libopenmpi-dev: MPI is off in this build"
[ -n "$victim" ] || fail "rank 1 never wrote 20 requests to $REC.rank1"
kill -KILL "$victim"
echo "killed rank 1 (pid $victim) after $(($(wc -l <"$REC.rank1") - 1)) of its requests"

wait "$job_pid"
rc=$?
job_pid=''
[ "$rc" -ne 0 ] || fail "the job exited 0 after one rank was killed"
echo "ok    the job ended with exit $rc"
[ -s "$tmp/kill.out" ] && grep -q "Successful requests" "$tmp/kill.out" && fail "rank 0 reported a run it could not gather"

files=("$REC.rank0" "$REC.rank1" "$REC.rank2")
"$BIN" report "${files[@]}" >"$tmp/report.txt" 2>"$tmp/report.err" || { cat "$tmp/report.err"; fail "latscope report of the rank files"; }
grep -E '^(Records|Run end|Successful|Failed)' "$tmp/report.txt"
python3 "$CHECK" killed "$tmp/report.txt" "${files[@]}" || fail "see the checks above"
# SIGTERM to every rank (what Slurm's scancel sends) is a graceful stop: rank 0 gathers what was
# sent and reports it, every finished request once, and the job exits 1 (interrupted).
REC=$tmp/term.jsonl
run_mpi term $N --base-url "$URL" --model latscope-sim --dataset-name random --random-input-len 32 \
	--random-output-len 16 --ignore-eos --num-prompts $NUM --request-rate $RATE --seed 5 --disable-tqdm \
	--probes off --record "$REC" &
job_pid=$!
for _ in $(seq 300); do
	[ -f "$REC.rank2" ] && [ "$(wc -l <"$REC.rank2")" -ge 20 ] && break
	kill -0 "$job_pid" 2>/dev/null || break
	sleep 0.1
done
ranks=0
for p in $(pgrep -f -- "$REC"); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = latscope ] && kill -TERM "$p" && ranks=$((ranks + 1))
done
[ $ranks -eq $N ] || fail "found $ranks of the $N ranks to stop"
wait "$job_pid"
rc=$?
job_pid=''
[ $rc -ne 0 ] || fail "an interrupted run exited 0"
grep -q "^Successful requests" "$tmp/term.out" || { tail "$tmp/term.err"; fail "no report after SIGTERM to every rank"; }
python3 "$CHECK" killed "$tmp/term.out" "$REC.rank0" "$REC.rank1" "$REC.rank2" || fail "see the checks above"
echo "ok    SIGTERM to every rank: rank 0 reported what was sent (exit $rc)"
echo "mpi_kill: ok"
