# tests/integration/mpi_lib.bash — what the mpi_*.sh tests share (sourced; not a test itself):
# skips with the reason as the last line, a simulator with --truth on a free loopback port, and
# mpirun on this host only (loopback, shared memory, no core binding).
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
CHECK=$ROOT/tests/integration/mpi_check.py
. "$ROOT/tests/lib/sim.bash"
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

command -v mpirun >/dev/null 2>&1 || skip "no mpirun (Debian openmpi-bin): the MPI tests need it (make deps)"
command -v python3 >/dev/null 2>&1 || skip "no python3 to read the records"
[ -x "$BIN" ] || fail "no latscope binary at $BIN (make)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-mpi.XXXXXX") || exit 1
sim_pid='' job_pid=''
cleanup() {
	[ -n "$job_pid" ] && kill -KILL "$job_pid" 2>/dev/null
	[ -n "$sim_pid" ] && kill -TERM "$sim_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# OpenMPI on one host: shared memory (no single-copy: containers forbid ptrace's CMA), and its
# own wiring on loopback only; root needs --allow-run-as-root; more ranks than cores is fine.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader
	--mca oob_tcp_if_include lo)

# latscope sim with ground truth, on a free port; sets PORT and URL.
start_sim() { # extra sim flags...
	ls_sim_start "$tmp/truth.jsonl" "$tmp/sim.log" "$@" || fail "the simulator did not start: $(tail -2 "$tmp/sim.log")"
	sim_pid=$SIM
	URL=http://127.0.0.1:$PORT
}

# mpirun -n N latscope bench ARGS... (MPI_X=VAR: mpirun -x VAR too), stdout and stderr to
# $tmp/NAME.out / .err; returns its exit code (124 past 60 s: a run here takes ~5 s). A build
# without libopenmpi-dev says "MPI is off in this build": skip then.
# MPI_SHIFT_S=S: ranks 1.. run in a time namespace whose CLOCK_MONOTONIC reads the host's + S s
# (unshare --time --monotonic S, MPMD: rank 0 on the host's clock), so each has a known offset to
# rank 0 of +S s, as ranks on hosts booted at different times have.
run_mpi() { # name n bench-args...
	local name=$1 n=$2 rc
	shift 2
	if [ -n "${MPI_SHIFT_S:-}" ]; then
		timeout -k 5 60 "${MPIRUN[@]}" ${MPI_X:+-x "$MPI_X"} -n 1 "$BIN" bench "$@" : -n $((n - 1)) \
			unshare --time --monotonic "$MPI_SHIFT_S" "$BIN" bench "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	else
		timeout -k 5 60 "${MPIRUN[@]}" ${MPI_X:+-x "$MPI_X"} -n "$n" "$BIN" bench "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	fi
	rc=$?
	if grep -q "MPI is off in this build" "$tmp/$name.err"; then
		skip "this latscope was built without libopenmpi-dev: MPI is off in this build"
	fi
	return $rc
}
