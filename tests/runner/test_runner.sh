#!/usr/bin/env bash
# tests/runner/test_runner.sh — the test runner's own test: runs tests/run (TESTS_RUN_PLAN) over
# the fixture suites in tests/runner/fixtures (built into build/tests/runner by make unit-bins)
# and checks its exit status and its lines. A suite that crashes, exits before its TAP report,
# hangs, leaks under ASan or reports only part of its plan, a replay over an empty or missing
# corpus, a shell test that fails or hangs: each must end as a failure; filtered tests are not
# skips. Exit 0 pass, 1 fail; ~10 s.
set -u
cd "$(dirname "$0")/../.." || exit 1
FIX=$PWD/build/tests/runner
SRC=tests/runner/fixtures
for f in crash exits hang leak pass replay; do
	[ -x "$FIX/$f" ] || { echo "FAIL: $FIX/$f was not built (make runner-fixtures)"; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-runner-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0 case='' out='' rc=''

# run NAME PLAN [ARGS...]: tests/run over the plan (bash lines); sets out and rc.
run() {
	case=$1
	printf '%s\n' "$2" >"$tmp/plan"
	shift 2
	out=$(TMPDIR=$tmp TESTS_RUN_PLAN=$tmp/plan ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 tests/run "$@" 2>&1)
	rc=$?
}
flunk() {
	echo "FAIL [$case]: $*"
	# shellcheck disable=SC2001 # every line, not one
	sed 's/^/    | /' <<<"$out"
	bad=1
}
fails() { [ "$rc" -ne 0 ] || flunk "tests/run exited 0"; }
passes() { [ "$rc" -eq 0 ] || flunk "tests/run exited $rc"; }
has() { grep -qF -- "$1" <<<"$out" || flunk "no line with: $1"; }
ends() { [ "$(tail -1 <<<"$out")" = "$1" ] || flunk "last line is not: $1"; }
alive() { ps -o stat= -p "$1" | grep -qv '^Z'; } # a zombie is dead, waiting to be reaped
gone() { # pid what
	for _ in 1 2 3 4 5 6 7 8 9 10; do alive "$1" || return 0; sleep 0.2; done
	flunk "process $1 ($2) still runs"
	kill -KILL "$1"
}

run crash "run_criterion crash 20 $FIX/crash"
fails
has "crash::dies_with_its_runner: started, never finished"
has "crash wrote no TAP report (died of SIGSEGV)"
ends "0 passed, 1 failed, 0 skipped"

run exits "run_criterion exits 20 $FIX/exits"
fails
has "exits wrote no TAP report (exited 0)"
ends "1 passed, 1 failed, 0 skipped"

start=$SECONDS
run hang "run_criterion hang 2 $FIX/hang"
fails
has "hang::forever: started, never finished"
has "hang wrote no TAP report (killed after its bound of 2 s)"
ends "1 passed, 1 failed, 0 skipped"
[ $((SECONDS - start)) -lt 10 ] || flunk "took $((SECONDS - start)) s for a bound of 2 s"
left=$(pgrep -f "^$FIX/hang" || true)
# shellcheck disable=SC2086 # one pid a word
[ -z "$left" ] || { flunk "the hanging fixture still runs: pids $left"; kill -KILL $left; }

run leak "run_criterion leak 30 $FIX/leak"
fails
has "leak::forgets_77_bytes: sanitizer report: SUMMARY: AddressSanitizer: 77 byte(s) leaked in 1 allocation(s)."
ends "1 passed, 1 failed, 0 skipped"

run partial "run_criterion partial 10 $SRC/partial_tap.sh"
fails
has "partial TAP report has 2 of its 3 results (exited 0)"
ends "2 passed, 1 failed, 0 skipped"

run not-built "run_criterion missing 10 $tmp/no-such-binary"
fails
has "FAIL  missing: $tmp/no-such-binary was not built"
ends "0 passed, 1 failed, 0 skipped"

run pass "run_criterion pass 30 $FIX/pass"
passes
has "skip  skips::needs_root: needs root (fixture)"
ends "2 passed, 0 failed, 1 skipped"

run filter-glob "run_criterion pass 30 $FIX/pass" 'pass/*'
passes
has "1 filtered out by 'pass/*' (not run, not counted)"
ends "2 passed, 0 failed, 0 skipped"

run filter-word "run_criterion pass 30 $FIX/pass" one
passes
has "2 filtered out by 'one' (not run, not counted)"
ends "1 passed, 0 failed, 0 skipped"

run filter-skip "run_criterion pass 30 $FIX/pass" 'skips/*'
passes
ends "0 passed, 0 failed, 1 skipped"

run filter-none "run_criterion pass 30 $FIX/pass" zzz
fails
has "3 filtered out by 'zzz' (not run, not counted)"
has "no test matches 'zzz'"
ends "0 passed, 0 failed, 0 skipped"

mkdir -p "$tmp/bin" "$tmp/corpus/good" "$tmp/corpus/empty"
echo seed >"$tmp/corpus/good/seed"
for t in good empty gone; do ln -s "$FIX/replay" "$tmp/bin/$t"; done
run replay "run_replays 10 $tmp/bin $tmp/corpus good empty gone"
fails
has "ok    fuzz/good (replayed 1 inputs)"
has "FAIL  fuzz/empty: exited 1"
has "no input in it"
has "FAIL  fuzz/gone: exited 1"
has "$tmp/corpus/gone: No such file or directory"
ends "1 passed, 2 failed, 0 skipped"

start=$SECONDS
run e2e "export FIXTURE_PID_FILE=$tmp/hangs.pid; run_script 2 $SRC/e2e_hangs.sh
export FIXTURE_PID_FILE=$tmp/leaves.pid; run_script 10 $SRC/e2e_leaves_child.sh
run_script 10 $SRC/e2e_passes.sh; run_script 10 $SRC/e2e_skips.sh; run_script 10 $SRC/e2e_fails.sh"
fails
has "FAIL  e2e/runner/fixtures/e2e_hangs: killed after its bound of 2 s"
has "ok    e2e/runner/fixtures/e2e_leaves_child"
has "(killed 1 process(es) it left running)"
has "ok    e2e/runner/fixtures/e2e_passes"
has "skip  e2e/runner/fixtures/e2e_skips: skip: no such hardware here (fixture)"
has "FAIL  e2e/runner/fixtures/e2e_fails: exited 1"
ends "2 passed, 2 failed, 1 skipped"
[ $((SECONDS - start)) -lt 10 ] || flunk "took $((SECONDS - start)) s for a bound of 2 s"
gone "$(cat "$tmp/hangs.pid")" "e2e_hangs.sh's child"
gone "$(cat "$tmp/leaves.pid")" "e2e_leaves_child.sh's child"

# The second lane: its tests run beside the main lane's, and what they did is counted once joined
# (a lost #counts line, a failure that does not reach the "failed:" line, counts added twice).
start=$SECONDS
run beside "beside_start 10 $SRC/e2e_fails.sh $SRC/e2e_passes.sh $SRC/e2e_skips.sh
run_script 10 $SRC/e2e_passes.sh; beside_join"
fails
has "FAIL  e2e/runner/fixtures/e2e_fails: exited 1"
has "skip  e2e/runner/fixtures/e2e_skips: skip: no such hardware here (fixture)"
has "failed: e2e/runner/fixtures/e2e_fails"
ends "2 passed, 1 failed, 1 skipped"
[ "$(grep -c '^ok    e2e/runner/fixtures/e2e_passes' <<<"$out")" -eq 2 ] || flunk "e2e_passes did not run once per lane"
! grep -q '^#' <<<"$out" || flunk "the lane's own count lines reached the output"

[ "$bad" -eq 0 ] && echo "PASS: tests/run fails what failed (crash, exit before the report, hang, leak, cut report, empty corpus, shell tests, the second lane)"
exit "$bad"
