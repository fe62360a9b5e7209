#!/usr/bin/env bash
# tests/integration/mpi_hosts.sh — several hosts on one machine: `mpirun` runs 3 ranks of
# `latscope bench`, each in its own network namespace AND time namespace (CLOCK_MONOTONIC +0,
# +1 day, -5 s: hosts booted at other times), against `latscope sim --truth` in the server
# namespace of `latscope lab`, whose delay line puts RTT_US between every rank and the server.
#
#   lab server ns (lss-PID)          lab client ns (lsc-PID)                 rank k's ns (lsrPIDkK)
#   sim 10.213.0.2 <= delay line => lstun0 10.213.0.1, bridge lsbr0 10.215.0.1 <=veth=> 10.215.0.1K
#                                    mpirun (PMIx server on lsbr0)
#
# The ranks talk MPI (the clock ping-pong, the gather) over TCP on the bridge, as hosts on a
# LAN; their requests go through the delay line. PMIx (mpirun <-> rank) is TCP too: OpenMPI 4.1's
# PMIx server listens on loopback only, so PMIX_MCA_ptl_tcp_if_include/remote_connections put it
# on the bridge (docs/mpi.md). Checks (mpi_hosts_check.py), each against an independent source:
#  - every request id exactly once in the merged record (a rank's share lost or sent twice);
#  - each rank's realised rate within 1 % of its share of the schedule and its schedule lag P99
#    within 50 ms of rank 0's (host clock; the VM's stalls under load): a rank that armed its timers in another clock than
#    its own sends D late (the 9.95 req/s of 50 at +10 s of issue 30);
#  - each rank's measured offset within its stated uncertainty of the namespace's known offset
#    (wrong sign or unit, a ping-pong that misses half the round trip);
#  - merged TTFT = the sim's truth + one way of the delivered RTT (median, +-0.5 ms), merged ITL
#    = the truth's (2 %): a rank's stamps not moved into rank 0's clock are seconds to a day off;
#  - probes on in every rank: each rank's client delay from its own probes, and the server part
#    of TTFT per rank against the truth (kernel stamps, host clock, moved into each rank's);
#  - rank 0's progress lines count every rank's requests: N/num-prompts, N between the merged
#    records finished 1 s before the line and at it (the old line counted rank 0's share alone);
#  - Ctrl-C of mpirun mid-run (probes on, some streams in flight): rank 0's report and merged
#    record hold exactly what the ranks that arrived wrote to their rank files, each request once,
#    every ok one seen by the sim, and at least rank 0's part (a rank late for mpirun's second is
#    named; the old code's ranks died waiting 2 s for their streams, and no report came).
# Needs root (namespaces, TUN, probes) and mpirun; skips (77) otherwise. ~20 s. MPI_HOSTS_KEEP=DIR
# keeps the run's files there.
set -u
. "$(dirname "$0")/mpi_lib.bash"
[ "$(id -u)" -eq 0 ] || skip "needs root (network and time namespaces, the lab's TUN devices)"
command -v ip >/dev/null 2>&1 || skip "no ip (iproute2)"
command -v nsenter >/dev/null 2>&1 || skip "no nsenter (util-linux)"
unshare --time --monotonic 1 true 2>/dev/null || skip "time namespaces are not available here (kernel >= 5.6)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no /sys/kernel/btf/vmlinux: the probes cannot run in the ranks"
[ -c /dev/net/tun ] || skip "no /dev/net/tun: the lab's delay line needs TUN devices"
# Rank namespaces left by a run of this test that was killed (its pid gone): removed.
for ns in $(ip netns list 2>/dev/null | grep -o '^lsr[0-9]*k[0-9]*'); do
	pid=${ns#lsr}
	pid=${pid%k*}
	kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
done

RTT_US=4000 NUM=150 RATE=50
OFFSETS=(0 86400 -5)
export BIN tmp NUM RATE
export HOSTS_OFFSETS="${OFFSETS[*]}" HOSTS_NS_PREFIX="lsr$$k"
ns_cleanup() {
	local k
	for ((k = 0; k < ${#OFFSETS[@]}; k++)); do ip netns del "${HOSTS_NS_PREFIX}$k" 2>/dev/null; done
	cleanup
}
trap ns_cleanup EXIT

# The hosts' side, run by the lab in its client namespace (sim up in the server's).
cat >"$tmp/hosts.sh" <<'EOF'
set -u
fail() { echo "FAIL: $*"; exit 1; }
read -r -a offs <<<"$HOSTS_OFFSETS"
n=${#offs[@]}
# The LAN: a bridge here, a veth into each rank's namespace, routed to the delay line.
ip link add lsbr0 type bridge && ip addr add 10.215.0.1/24 dev lsbr0 && ip link set lsbr0 up || fail "bridge"
echo 1 >/proc/sys/net/ipv4/ip_forward || fail "ip_forward in the client namespace"
ip -n "$LATSCOPE_LAB_SERVER_NS" route add 10.215.0.0/24 dev lstun0 || fail "route back from the server namespace"
for ((k = 0; k < n; k++)); do
	ns=$HOSTS_NS_PREFIX$k
	ip netns add "$ns" && ip link add lsv$k type veth peer name lsv${k}p &&
	ip link set lsv${k}p netns "$ns" && ip link set lsv$k master lsbr0 up &&
	ip -n "$ns" link set lo up && ip -n "$ns" addr add 10.215.0.1$k/24 dev lsv${k}p &&
	ip -n "$ns" link set lsv${k}p up && ip -n "$ns" route add default via 10.215.0.1 || fail "rank $k's namespace"
done
# The sim in the server namespace, its truth on the host's clock (no time namespace there).
ip netns exec "$LATSCOPE_LAB_SERVER_NS" "$BIN" sim --host 10.213.0.2 --port 8000 --step-ms 5 --quiet \
	--truth "$tmp/truth.jsonl" 2>"$tmp/sim.log" &
sim=$!
for i in $(seq 100); do
	nsenter --net=/run/netns/${HOSTS_NS_PREFIX}0 bash -c '(exec 3<>/dev/tcp/10.213.0.2/8000)' 2>/dev/null && break
	sleep 0.1
done
ARGS=(--base-url http://10.213.0.2:8000 --model latscope-sim --dataset-name random --random-input-len 16
      --ignore-eos --request-rate "$RATE" --seed 5 --probes on --server-pid "$sim")
# nsenter, not `ip netns exec`: that one mounts a fresh /sys, without the tracefs the probes use.
# Progress on (plain lines on rank 0's stderr, every 250 ms): it counts every rank's requests.
mpi_cmd() { # bench args...: cmd=(mpirun ... one rank per namespace)
	cmd=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x LATSCOPE_PROGRESS_INTERVAL_MS=250
	     --mca btl self,tcp --mca btl_tcp_if_include 10.215.0.0/24 --mca oob_tcp_if_include lsbr0)
	for ((k = 0; k < n; k++)); do
		[ $k -gt 0 ] && cmd+=(:)
		cmd+=(-n 1 nsenter --net=/run/netns/$HOSTS_NS_PREFIX$k unshare --time --monotonic "${offs[$k]}"
		      "$BIN" bench "${ARGS[@]}" "$@")
	done
}
export PMIX_MCA_ptl_tcp_if_include=lsbr0 PMIX_MCA_ptl_tcp_remote_connections=1
mpi_cmd --random-output-len 8 --num-prompts "$NUM" --record "$tmp/hosts.jsonl"
timeout -k 5 120 "${cmd[@]}" >"$tmp/hosts.out" 2>"$tmp/hosts.err"
rc=$?
# Ctrl-C of mpirun mid-run, probes on: streams of 100 tokens (0.5 s), so some are cut.
mpi_cmd --random-output-len 100 --num-prompts 600 --record "$tmp/cut.jsonl"
timeout -k 5 60 "${cmd[@]}" >"$tmp/cut.out" 2>"$tmp/cut.err" &
job=$!
sleep 4
pkill -INT -P $job -x mpirun || echo "no mpirun under $job to stop" >>"$tmp/cut.err"
wait $job
kill $sim 2>/dev/null
wait $sim 2>/dev/null
exit $rc
EOF
timeout -k 10 200 "$BIN" lab --rtt-us $RTT_US --no-sim --client-sh "bash $tmp/hosts.sh" >"$tmp/lab.out" 2>"$tmp/lab.err"
rc=$?
grep -q "MPI is off in this build" "$tmp/hosts.err" 2>/dev/null && skip "this latscope was built without libopenmpi-dev"
[ $rc -eq 0 ] || { tail -5 "$tmp/lab.out" "$tmp/lab.err" "$tmp/hosts.err" 2>/dev/null; fail "the lab or mpirun exited $rc"; }
sed -n '/MPI: /,/^merge: /p' "$tmp/hosts.out"
[ -n "${MPI_HOSTS_KEEP:-}" ] && cp -r "$tmp" "$MPI_HOSTS_KEEP"
ranks=()
for ((k = 0; k < ${#OFFSETS[@]}; k++)); do ranks+=("$tmp/hosts.jsonl.rank$k"); done
python3 "$ROOT/tests/integration/mpi_hosts_check.py" "$tmp/hosts.jsonl" "$tmp/truth.jsonl" "$tmp/hosts.out" \
	"$tmp/hosts.err" $RTT_US \
	"$HOSTS_OFFSETS" "${ranks[@]}" || fail "ranks on hosts apart: see the checks above"
python3 "$CHECK" attribution "$tmp/hosts.attribution.jsonl" "$tmp/hosts.jsonl" "$tmp/truth.jsonl" ${#OFFSETS[@]} ||
	fail "the attribution does not cover every rank's requests (see above)"
grep -E "^stopped|^  rank [0-9]: its records" "$tmp/cut.out"
python3 "$ROOT/tests/integration/mpi_hosts_check.py" cut "$tmp/cut.out" "$tmp/cut.jsonl" "$tmp/truth.jsonl" \
	"$tmp/cut.jsonl.rank"{0,1,2} || { tail -3 "$tmp/cut.err"; fail "Ctrl-C of mpirun: see the checks above"; }
echo "mpi_hosts: ok"
