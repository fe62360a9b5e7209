#!/usr/bin/env bash
# tests/integration/mpi_clocks.sh — ranks whose CLOCK_MONOTONIC differ, as two hosts' do (by their
# uptimes): `mpirun -n 1 latscope bench ARGS : -n 1 unshare --time --monotonic D latscope bench ARGS`
# puts rank 1 (and rank 2) in a time namespace offset by D (shared/notes/clocks.md).
#  1. Offsets +10 s and +1 day (3 ranks), then -5 s (2 ranks): each rank's realised rate within
#     1 % of its share of the schedule (the old driver armed io_uring's absolute timeout in its own clock, which
#     the kernel reads as the host's: a rank offset by D slept D late, 9.95 req/s of 50 at +10 s);
#     each offset measured with its sign, within its uncertainty (+1 ms) of D; every merged
#     request started within 100 ms of its schedule, in rank 0's clock.
#  3. Rank 0 stopping before the run says why once; the ranks end without MPI_Abort's banner.
#  4. SIGINT to mpirun mid-run: rank 0's merged report counts every finished request once;
#     4b. with one rank too slow for mpirun's second, the others' (the slow one named).
#  2. Probes inside a time namespace (+1000 s; root and BTF): bpf_ktime_get_ns() is the host's
#     clock, so kernel stamps are moved into the process's; every request's TTFT client part
#     under 5 ms and its server part at least one 5 ms step (unmoved stamps are 1000 s off).
set -u
. "$(dirname "$0")/mpi_lib.bash"
command -v unshare >/dev/null 2>&1 || skip "no unshare (util-linux)"
unshare --time --monotonic 1 true 2>/dev/null || skip "time namespaces are not available here (root, kernel >= 5.6)"

start_sim --step-ms 5
ARGS=(--base-url "$URL" --model latscope-sim --dataset-name random --random-input-len 16 --random-output-len 8
      --ignore-eos --request-rate 50 --seed 3 --disable-tqdm --probes off)

# The per-rank table (rank, host, requests, rate/target, lag, delay, CPU, clock offset us, unc,
# ppm) against the merged record file: each rank's realised rate within 1 % of its own share's
# schedule (its requests over its last scheduled instant), its offset's sign and size, and every
# request started within 100 ms of its schedule in rank 0's clock.
check_ranks() { # name offsets_s...
	local name=$1
	shift
	python3 - "$tmp/$name.out" "$tmp/$name.jsonl" "$@" <<'EOF2' || fail "$name: see above"
import json, re, sys
out, rec, offsets = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3:]]
n = len(offsets)
head, reqs = None, []
for line in open(rec):
    r = json.loads(line)
    if "latscope_record" in r:
        head = r
    elif "id" in r and not r["warmup"]:
        reqs.append(r)
start = head["run_start_ns"]
ok = True
rows = {int(m.group(1)): m.group(0).split() for m in re.finditer(r"^  (\d+) +\S+ +\d+ +[\d.]+/.*$", open(out).read(), re.M)}
for k, want in enumerate(offsets):
    mine = [r for r in reqs if r["id"] % n == k]
    expect = len(mine) / ((max(r["scheduled_ns"] for r in mine) - start) / 1e9)
    row = rows.get(k)
    if not row:
        print(f"rank {k}: no line in the report"); ok = False; continue
    rate = float(row[3].split("/")[0])
    # The row whole, its drift last: mpirun's pty has no window size, so nothing folds it.
    m = re.search(r" ([+-][\d.]+) \+-([\d.]+) +[+-][\d.]+$", " ".join(row))
    if not m:
        print(f"rank {k}: its row is not whole (folded?): {' '.join(row)}"); ok = False; continue
    off, unc = float(m.group(1)), float(m.group(2))
    if abs(rate - expect) > 0.01 * expect:
        print(f"rank {k}: realised {rate} req/s, its schedule's {expect:.2f}: more than 1 % off"); ok = False
    if abs(off - want * 1e6) > unc + 1000:
        print(f"rank {k}: clock offset {off} us, expected {want * 1e6:+.0f} +- {unc + 1000:.0f} us"); ok = False
    print(f"ok: rank {k}: realised {rate} of its schedule's {expect:.2f} req/s, clock offset {off:+.1f} us (+-{unc}) for {want:+g} s")
late = [(r["id"], round((r["started_ns"] - r["scheduled_ns"]) / 1e6, 1)) for r in reqs
        if r["started_ns"] - r["scheduled_ns"] > 100e6]
if late:
    print(f"{len(late)} requests started over 100 ms after their schedule: {late[:5]} (id, ms)"); ok = False
if len(reqs) != 150:
    print(f"{len(reqs)} requests in the merged record, 150 sent"); ok = False
sys.exit(0 if ok else 1)
EOF2
}

run_mpmd() { # name n-per-offset... : offsets (first rank 0 s)
	local name=$1
	shift
	local -a cmd=("${MPIRUN[@]}") first=1 d
	for d in "$@"; do
		[ $first -eq 1 ] || cmd+=(:)
		first=0
		if [ "$d" = 0 ]; then
			cmd+=(-n 1 "$BIN" bench "${ARGS[@]}" --num-prompts 150 --record "$tmp/$name.jsonl")
		else
			cmd+=(-n 1 unshare --time --monotonic "$d" "$BIN" bench "${ARGS[@]}" --num-prompts 150
			      --record "$tmp/$name.jsonl")
		fi
	done
	timeout -k 5 90 "${cmd[@]}" >"$tmp/$name.out" 2>"$tmp/$name.err"
	local rc=$?
	grep -q "MPI is off in this build" "$tmp/$name.err" && skip "this latscope was built without libopenmpi-dev"
	[ $rc -eq 0 ] || { tail -5 "$tmp/$name.err"; fail "$name: mpirun exited $rc"; }
}

run_mpmd plus 0 10 86400
check_ranks plus 0 10 86400
grep -q "latscope report $tmp/plus.jsonl.rank0 ... $tmp/plus.jsonl.rank2\` reports what finished" "$tmp/plus.err" ||
	fail "rank 0 does not say which rank files to report should the job be cut"
run_mpmd minus 0 -5
check_ranks minus 0 -5

# 2. probes inside a time namespace.
if [ "$(id -u)" -ne 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "SKIP  probes in a time namespace: need root and /sys/kernel/btf/vmlinux"
else
	unshare --time --monotonic 1000 "$BIN" bench "${ARGS[@]:0:${#ARGS[@]}-2}" --probes auto --server-pid "$sim_pid" \
		--num-prompts 30 --record "$tmp/ns.jsonl" >"$tmp/ns.out" 2>"$tmp/ns.err" ||
		{ tail -5 "$tmp/ns.err"; fail "bench with probes in a time namespace exited $?"; }
	grep -q "runs in a time namespace (CLOCK_MONOTONIC +1000.000 s" "$tmp/ns.out" ||
		fail "probes in a time namespace: the report does not say the kernel stamps were moved"
	python3 - "$tmp/ns.attribution.jsonl" <<'EOF' || fail "probes in a time namespace: parts off (above)"
import json, sys
bad, n = [], 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "id" not in r:
        continue
    n += 1
    t = r["ttft"]
    # Unmoved kernel stamps are 1000 s off: parts absurd or unattributed. The client part is
    # bounded loosely (100 ms): under load its share (the lag behind the schedule) grows.
    if not (0 <= t.get("client_ns", -1) < 100e6 and t.get("server_ns", 0) >= 5e6):
        bad.append((r["id"], t))
if n != 30 or bad:
    print(f"{n} requests attributed (30 sent); off: {bad[:3]}")
sys.exit(1 if bad or n != 30 else 0)
EOF
	echo "ok: probes in a time namespace (+1000 s): 30 requests, TTFT client < 100 ms and server >= 5 ms each"
fi
# 4. SIGINT to mpirun mid-run (ranks a day apart): mpirun sends every rank SIGTERM and SIGKILL a
#    second later; in that second each rank sends rank 0 what finished and rank 0 reports the
#    merge. Its report and merged record hold every finished request once: the union of the rank
#    files (written as requests finished), no id twice, and every request the sim saw (its truth).
#    Catches: a grace for streams in flight longer than mpirun's second (the ranks die waiting),
#    a rank that had finished dying of the SIGTERM while it sends, a gather that waits past it.
# Streams of 100 tokens (0.5 s): some are in flight at the stop, cut after their grace and
# counted as failed.
timeout -k 5 60 "${MPIRUN[@]}" -n 1 "$BIN" bench "${ARGS[@]}" --random-output-len 100 --num-prompts 400 \
	--record "$tmp/cut.jsonl" : -n 1 unshare --time --monotonic 86400 "$BIN" bench "${ARGS[@]}" \
	--random-output-len 100 --num-prompts 400 --record "$tmp/cut.jsonl" \
	>"$tmp/cut.out" 2>"$tmp/cut.err" &
job=$!
sleep 3
# Our own mpirun only (the child of this timeout): other jobs on the machine are not ours to stop.
pkill -INT -P $job -x mpirun || fail "SIGINT: no mpirun under the job $job"
wait $job
grep -q "^stopped (SIGINT/SIGTERM): what finished, from 2 of 2 ranks" "$tmp/cut.out" ||
	{ tail -5 "$tmp/cut.err"; fail "SIGINT to mpirun: rank 0 printed no merged report"; }
python3 - "$tmp/cut.out" "$tmp/cut.jsonl" "$tmp/truth.jsonl" "$tmp/cut.jsonl.rank0" "$tmp/cut.jsonl.rank1" <<'EOF2' || fail "SIGINT to mpirun: the merged report (above)"
import json, re, sys
text, merged, truth, ranks = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3], sys.argv[4:]
ok = int(re.search(r"^Successful requests:\s+(\d+)", text, re.M).group(1))
m = re.search(r"^Failed requests:\s+(\d+)", text, re.M)
failed = int(m.group(1)) if m else 0
def ids_of(path):
    out, tag = [], None
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line cut by the kill
        tag = r.get("run_tag", tag)
        if "id" in r and not r["warmup"]:
            out.append((r["id"], r["fail"]))
    return out, tag
mids, tag = ids_of(merged)
on_disk = [i for p in ranks for i, _ in ids_of(p)[0]]
seen = {int(o["id"].rsplit("-", 1)[1]) for o in map(json.loads, open(truth)) if o.get("id", "").startswith(tag + "-")}
bad = []
if len({i for i, _ in mids}) != len(mids): bad.append("an id twice in the merged record")
if sorted(i for i, _ in mids) != sorted(on_disk): bad.append(f"merged {len(mids)} ids, the rank files {len(on_disk)}")
if ok + failed != len(mids): bad.append(f"report {ok} ok + {failed} failed, merged record {len(mids)}")
if not seen <= {i for i, _ in mids}: bad.append(f"{len(seen - {i for i, _ in mids})} requests the sim saw are missing")
if not {i for i, f in mids if f == "ok"} <= seen: bad.append("an ok request the sim never saw")
if not 10 < len(mids) < 400: bad.append(f"{len(mids)} requests: not cut mid-run")
if not failed: bad.append("no stream in flight was cut at the stop (0 failed)")
print("\n".join(bad) or f"ok: SIGINT to mpirun: rank 0's merged report has {ok} ok + {failed} failed = every one of the "
      f"{len(mids)} finished requests once (= the rank files, >= the {len(seen)} the sim saw)")
sys.exit(1 if bad else 0)
EOF2

# 4b. The same with rank 1 of 3 too slow for mpirun's second (LATSCOPE_MPI_SLOW_RANK=1 holds its
#    records back until rank 0 has given up on them): rank 0 reports ranks 0 and 2, names rank 1
#    and its file; the merged record is exactly ranks 0 and 2's files, each request once.
#    Catches: a late rank taking the ranks after it down with it (rank 0 must still take the ones
#    already sent), or its half-received part left in the merge.
timeout -k 5 60 "${MPIRUN[@]}" -x LATSCOPE_MPI_SLOW_RANK=1 -n 3 "$BIN" bench "${ARGS[@]}" --num-prompts 400 \
	--record "$tmp/slow.jsonl" >"$tmp/slow.out" 2>"$tmp/slow.err" &
job=$!
sleep 3
pkill -INT -P $job -x mpirun || fail "SIGINT: no mpirun under the job $job"
wait $job
grep -q "^stopped (SIGINT/SIGTERM): what finished, from 2 of 3 ranks" "$tmp/slow.out" &&
	grep -q "rank 1: its records did not arrive .* \`latscope report $tmp/slow.jsonl.rank1\` has what it finished" "$tmp/slow.out" ||
	{ tail -5 "$tmp/slow.err"; grep -E "^stopped|^  rank" "$tmp/slow.out"; fail "a slow rank: rank 0 did not report the others and name it"; }
python3 - "$tmp/slow.out" "$tmp/slow.jsonl" "$tmp/slow.jsonl.rank0" "$tmp/slow.jsonl.rank2" <<'EOF2' || fail "a slow rank: the merged report (above)"
import json, re, sys
text = open(sys.argv[1]).read()
n = int(re.search(r"^Successful requests:\s+(\d+)", text, re.M).group(1))
m = re.search(r"^Failed requests:\s+(\d+)", text, re.M)
n += int(m.group(1)) if m else 0
ids = lambda p: [r["id"] for r in map(json.loads, open(p)) if "id" in r and not r["warmup"]]
merged, disk = ids(sys.argv[2]), ids(sys.argv[3]) + ids(sys.argv[4])
ok = sorted(merged) == sorted(disk) and len(set(merged)) == len(merged) == n and not any(i % 3 == 1 for i in merged) and merged
print(("ok: " if ok else "FAIL: ") + f"a slow rank: rank 0 reported {n} requests; merged {len(merged)} ids, ranks 0 and 2's files {len(disk)}")
sys.exit(0 if ok else 1)
EOF2

# 3. Rank 0 stops before the run (no server): it says why once, every rank ends quietly (no
#    MPI_Abort banner), the exit code says it failed.
timeout -k 5 60 "${MPIRUN[@]}" -n 3 "$BIN" bench --base-url http://127.0.0.1:1 --ready-check-timeout-sec 1 \
	--num-prompts 5 >"$tmp/early.out" 2>"$tmp/early.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "early stop: mpirun exited $rc (expected a failure, not a hang)"
n=$(grep -c "did not answer within 1 s" "$tmp/early.err")
[ "$n" -eq 1 ] || { cat "$tmp/early.err"; fail "early stop: rank 0's reason printed $n times (once expected)"; }
grep -q "MPI_ABORT was invoked" "$tmp/early.err" && { cat "$tmp/early.err"; fail "early stop: OpenMPI's MPI_ABORT banner"; }
echo "ok: rank 0 stopping before the run: one line, no MPI_ABORT banner, exit $rc"
echo "ok: ranks on clocks +10 s, +1 day and -5 s send on schedule"
