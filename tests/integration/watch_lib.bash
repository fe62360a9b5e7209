# watch_lib.bash — what the tests/integration/watch_*.sh tests share (sourced; not a test itself:
# tests/run runs *.sh). Each test watches a real client the project did not write (Debian's curl,
# a Python aiohttp client) against `latscope sim --truth`, and checks `latscope watch` against the
# simulator's ground truth. Needs root and kernel BTF (else exit 77 with the reason).
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
. "$ROOT/tests/lib/sim.bash"
PY=/usr/bin/python3 # Debian's, with python3-aiohttp (a pyenv python3 on PATH may lack it)
CLIENT=$ROOT/tests/clients/aiohttp_client.py
TMP=$(mktemp -d "${TMPDIR:-/tmp}/latscope-watch.XXXXXX") || exit 1
SIM=0
cleanup() { [ "$SIM" -gt 0 ] && kill "$SIM" 2>/dev/null && wait "$SIM" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

skip() { echo "$*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

need_probes() {
	[ -x "$BIN" ] || fail "$BIN not built"
	[ "$(id -u)" -eq 0 ] || skip "not root: latscope watch needs root for the eBPF probes"
	[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF (/sys/kernel/btf/vmlinux): the probes cannot load"
}
need_python() {
	"$PY" -c 'import aiohttp' 2>/dev/null || skip "no $PY with aiohttp (Debian python3-aiohttp)"
}
need_curl() { command -v curl >/dev/null || skip "no curl"; }

# start_sim args...: a simulator on a free port with its truth at $TMP/truth.jsonl; sets PORT.
start_sim() {
	ls_sim_start "$TMP/truth.jsonl" "$TMP/sim.log" "$@" && return 0
	SIM=0
	fail "the simulator did not start: $(tail -2 "$TMP/sim.log")"
}
stop_sim() { ls_sim_stop; }

# py_check SCRIPT args...: runs a Python check (stdlib only) with the record and the truth.
py_check() { "$PY" - "$@"; }
