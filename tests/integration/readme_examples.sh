#!/usr/bin/env bash
# tests/integration/readme_examples.sh — runs every shell example in README.md, CONTRIBUTING.md and
# the manual (docs/*.md), so none can rot, and checks what the text around some of them promises.
# An example is one line of a ```sh block (lines ending in "\" joined, " # " comments dropped, blank
# lines skipped); inline `code` is not an example. How each one runs:
#  - `latscope sim ...`: a server; ok when it accepted on its port (within 10 s), served 2 s more
#    and exited 0 on SIGTERM (or exited 0 by itself). Ending in "&": it serves the block's later
#    examples instead, and is stopped after them with SIGTERM (exit 0 expected, as the README says);
#  - a client (`latscope ...`, `curl ...`): a URL in it gets a simulator first (the block's own
#    `latscope sim ... &`, else `latscope sim --port P`, with --tls for https), then it runs under
#    60 s in the block's scratch directory (files an earlier example of the block wrote are there)
#    and must exit 0 (or what SPECIAL says); `$!` is the block's simulator, `sudo` is dropped (root);
#  - `make TARGET...`: `make -n TARGET...` only checks the target exists (no demo, test or fuzz run);
#  - SPECIAL below names the few that cannot run here, with the reason; anything else fails, so a
#    new kind of example gets a way to run (or an honest entry) before it gets into the docs;
#  - CLAIMS below: an example whose text promises a result (a fault storm where most requests are
#    ok and the rest fail by reason, say) has that promise checked on its output, not only its exit.
# Each block runs in a private network namespace of its own (the examples use fixed ports such as
# 8000), JOBS blocks at once: it needs root, without it exit 77 (skip). Exit 1 when any example failed.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
# The documents whose examples run: LATSCOPE_DOCS (paths relative to ROOT) or these.
DOCS=()
if [ -n "${LATSCOPE_DOCS:-}" ]; then
	read -r -a DOCS <<<"$LATSCOPE_DOCS"
else
	for f in README.md CONTRIBUTING.md docs/*.md; do [ -f "$ROOT/$f" ] && DOCS+=("$f"); done
fi
CLIENT_TIMEOUT_S=60
SERVER_TIMEOUT_S=2 # a server example serves this long once it accepted (then SIGTERM, exit 0)
# The simulator a client example gets when its block starts none: 1 ms steps instead of 10, so the
# examples that run bench's defaults (1,000 prompts of 128 tokens) take seconds, not minutes.
DEFAULT_SIM_ARGS='--step-ms 1'
# Blocks at once. All of them at once (~25) on 2 shared cores made the examples that measure (the
# storm, sweep's capacity) and a simulator's first accept miss their marks.
JOBS=${LATSCOPE_README_JOBS:-4}

# Examples that do not run as above: a glob over the example (as printed) and `skip: WHY`,
# `exit N` (the docs say it exits N) or `timeout S` (a client that takes longer than 60 s).
# Keep it short and honest.
SPECIAL=(
	'CUDA_INJECTION64_PATH=* vllm serve *'	'skip: a vLLM engine on a GPU machine'
	'latscope sim --gpu *'	'skip: needs a CUDA device; tests/gpu/smoke.sh runs the simulator with --gpu on a GPU machine'
	'tests/gpu/smoke.sh*'	'skip: a GPU machine check; tests/run runs it as e2e/gpu/smoke'
	'*tests/run *'	'skip: the test suite itself, not run from inside it'
	'*latscope watch * -- tests/clients/aiohttp_client.py *'	'skip: runs the Python client from the repository root; tests/integration/watch_python.sh runs it under watch'
	'mpirun *'	'skip: tests/integration/mpi_run.sh runs mpirun -n 2 and -n 3 latscope bench against the simulator'
	'srun *'	'skip: needs a Slurm cluster'
	'latscope report *.rank0 *'	'skip: needs the rank files of an MPI run; tests/integration/mpi_kill.sh reads them'
	'*$(pgrep *'	'skip: needs your own server running (vLLM, llama-server); the same flags run against the simulator in docs/probes.md'
	'llama-server *'	'skip: a llama.cpp engine; tests/engines/ runs one (make engine, docs/engine.md)'
	'latscope bench * --backend llama.cpp-native *'	"skip: llama-server's native /completion, which latscope sim does not serve; tests/engines/ runs it"
	'* ... *'	'skip: an outline, not a command: "..." stands for the flags of the example before it'
	'*--base-url ...'	'skip: an outline, not a command: "..." stands for a server URL'
	'latscope sweep --search rate *'	'timeout 240' # a dozen 2 s points and their bisection: ~60 s alone, more with every block at once
	'latscope lab --experiment *'	'skip: ~50 s; tests/integration/test_lab_experiment.c runs the same experiment and checks every figure of its table'
)

# Examples whose text promises more than an exit status: a glob over the example (as printed) and
# the function that checks the promise on its output (its log, its scratch directory). Each names
# the document it checks; a failed check fails the example.
CLAIMS=(
	'latscope bench * --request-id-prefix storm- *'	claim_storm
	'latscope bench * --html run.html'	claim_first_run
	'latscope help bench'	claim_help_bench
	'latscope bench --base-url http://127.0.0.1:8000 --dataset-name random --random-input-len 1024 *'	claim_own_server
	'sudo latscope bench * --server-pid $! --trace run.json'	claim_probes
	"curl -N localhost:8000/v1/completions -H 'X-Request-Id: r1' *"	claim_sim_stream
	'sudo latscope watch -- curl *'	claim_watch_curl
	'latscope lab --ping 100'	claim_lab_ping
	'latscope report rec.jsonl --rules vllm'	claim_report_as_vllm
	'latscope report rec.jsonl --rules vllm,sglang,sglang-oai,honest'	claim_report_side_by_side
	'latscope sweep --rates 30,45,60,90 *'	claim_sweep_overstates
	'latscope sweep --search rate *'	claim_sweep_no_slots
	'latscope report run.jsonl --html again.html'	claim_same_page
	'latscope bench * --dataset-name prefix_repetition *'	claim_prefix_cache
	'latscope lab --rtt-us 2000 --jitter-us 200 * --ping 50'	claim_lab_jitter
	'latscope compare --rules vllm,sglang,sglang-oai,honest --base-url *'	claim_compare_runs
	'latscope bench --harness sglang * --output-file sg.jsonl'	claim_sglang_file
)

# The promises. Each: log dir -> 0 and one line of what it found, or 1 and why the text is wrong.
report_n() { awk -F: -v k="$2" '$1 == k { print $2 + 0; exit }' "$1"; } # log label: its number
mean_of() { sed -n "s/^$2 *mean \([0-9.]*\).*/\1/p" "$1" | head -1; } # log label: its mean

# docs/reliability.md: "most requests ok, the rest failed by reason, completed + failed = 2,000".
claim_storm() {
	local ok fail reasons k v n=0 max=0
	ok=$(report_n "$1" 'Successful requests') fail=$(report_n "$1" 'Failed requests')
	reasons=$(sed -n 's/^Failed requests by reason: *\(.*\) (of .*/\1/p' "$1")
	[ -n "$ok" ] && [ -n "$fail" ] || { echo "no request counts in the report"; return 1; }
	while read -r k v; do
		[ -n "$k" ] || continue
		n=$((n + 1))
		[ "${v:-0}" -gt "$max" ] && max=$v
	done < <(tr ',' '\n' <<<"$reasons")
	[ $((ok + fail)) -eq 2000 ] || { echo "ok $ok + failed $fail is not the 2000 sent"; return 1; }
	[ $((ok * 10)) -ge 14000 ] || { echo "$ok of 2000 ok: the text says most (at least 70%)"; return 1; }
	[ "$n" -ge 5 ] || { echo "failures by $n reason(s) ($reasons): the text says by reason (5 or more)"; return 1; }
	[ $((max * 2)) -le "$fail" ] || { echo "one reason holds $max of $fail failures ($reasons): an overload, not a storm"; return 1; }
	echo "$ok ok, $fail failed: $reasons"
}

# README "A first run" and "Reading the report": the clock named, TTFT by three clocks (scheduled
# >= started), the slot wait, the checks, the page written.
claim_first_run() {
	local st sc
	grep -q '^Clock of TTFT and E2EL above: *started' "$1" || { echo "the report does not name its clock (started)"; return 1; }
	st=$(mean_of "$1" 'TTFT from started (ms):') sc=$(mean_of "$1" 'TTFT from scheduled (ms):')
	[ -n "$st" ] && [ -n "$sc" ] && [ -n "$(mean_of "$1" 'TTFT from admitted (ms):')" ] ||
		{ echo "no TTFT from scheduled / admitted / started"; return 1; }
	awk -v a="$sc" -v b="$st" 'BEGIN { exit !(a >= b) }' || { echo "TTFT from scheduled $sc < from started $st"; return 1; }
	grep -q '^Slot wait, admitted - scheduled (ms):' "$1" || { echo "no slot wait line"; return 1; }
	grep -q 'Checks before you believe a number' "$1" || { echo "no checks"; return 1; }
	[ -s "$2/run.html" ] || { echo "no run.html"; return 1; }
	echo "mean TTFT $st ms from started, $sc ms from scheduled; run.html written"
}

# README "Commands": `latscope help bench` prints bench's help, not the general usage.
claim_help_bench() {
	head -1 "$1" | grep -q '^usage: latscope bench' || { echo "first line: $(head -1 "$1")"; return 1; }
	grep -q -- '--base-url URL' "$1" || { echo "no --base-url in it"; return 1; }
	echo "bench's help, $(wc -l <"$1") lines"
}

# README "Your own server": vLLM's report, the checks, and a record `latscope report` reads again.
claim_own_server() {
	local n again
	n=$(report_n "$1" 'Successful requests')
	[ "$n" = 200 ] || { echo "successful requests: ${n:-none}, not 200"; return 1; }
	grep -q 'Serving Benchmark Result' "$1" && grep -q 'Checks before you believe a number' "$1" ||
		{ echo "no vLLM block or no checks"; return 1; }
	"$BIN" report "$2/run.jsonl" >"$2/report.out" 2>&1 || { echo "latscope report run.jsonl: exit $?"; return 1; }
	again=$(report_n "$2/report.out" 'Successful requests')
	[ "$again" = 200 ] || { echo "latscope report run.jsonl: ${again:-no} successful requests"; return 1; }
	echo "200 ok; latscope report run.jsonl reads the same 200"
}

# docs/probes.md: 'report: "Where the latency went"; run.json opens in ui.perfetto.dev' (server
# watched: a server part, nothing unattributed at P50).
claim_probes() {
	local srv una
	if grep -q 'probes off:' "$1"; then # no BTF here (root we are): the example runs, its claim cannot
		echo "probes off here ($(grep -m1 -o 'probes off: .*' "$1" | cut -c1-80)): not checked"
		return 0
	fi
	grep -q '^=* Where the latency went =*$' "$1" || { echo "no \"Where the latency went\""; return 1; }
	srv=$(awk '/^TTFT / { t = 1 } t && $1 == "server" { print $2; exit }' "$1")
	una=$(awk '/^TTFT / { t = 1 } t && $1 == "unattributed" { print $2; exit }' "$1")
	awk -v s="${srv:-0}" -v u="${una:-1}" 'BEGIN { exit !(s > 0 && u == 0) }' ||
		{ echo "TTFT P50: server ${srv:-none}, unattributed ${una:-none} (a watched server: > 0 and 0)"; return 1; }
	grep -q '"traceEvents"' "$2/run.json" 2>/dev/null || { echo "run.json is not a trace (no traceEvents)"; return 1; }
	echo "TTFT P50 server part $srv ms, unattributed 0; run.json holds traceEvents"
}

# docs/sim.md: an OpenAI stream; include_usage adds the usage frame; data: [DONE] ends it.
claim_sim_stream() {
	grep -q '"text_completion"' "$1" || { echo "no completion frame"; return 1; }
	grep -q '"usage":{"prompt_tokens":' "$1" || { echo "no usage frame (stream_options.include_usage)"; return 1; }
	# curl's progress meter (stderr, in the same log) may share a line with a frame: frames by data:
	[ "$(grep -o 'data: \(\[DONE\]\|{\)' "$1" | tail -1)" = 'data: [DONE]' ] ||
		{ echo "the stream does not end with data: [DONE]"; return 1; }
	echo "frames, a usage frame, data: [DONE] last"
}

# docs/watch.md: curl run under the probes: its one connection and one request seen.
claim_watch_curl() {
	grep -q '^watched: 1 connection(s), 1 request(s)' "$1" || { echo "not: watched: 1 connection(s), 1 request(s)"; return 1; }
	grep -q 'exit status 0' "$1" || { echo "the command's exit status is not reported 0"; return 1; }
	echo "1 connection, 1 request, exit status 0"
}

# The lab's delivered median RTT within [lo, hi] us of its target.
lab_rtt_within() { # log target lo hi
	local us
	us=$(sed -n "s/^lab: RTT target $2 us; delivered median \\([0-9]*\\) us.*/\\1/p" "$1")
	[ -n "$us" ] || { echo "no delivered median RTT"; return 1; }
	[ "$us" -ge "$3" ] && [ "$us" -le "$4" ] || { echo "delivered median $us us, not about $2"; return 1; }
	echo "delivered median RTT $us us (target $2)"
}

# docs/lab.md: "the RTT it delivers (default 0.5 ms)": the median within 0.45-1 ms.
claim_lab_ping() { lab_rtt_within "$1" 500 450 1000; }

# docs/compare.md: records sent by SGLang's rules, "read as vLLM reads them", with no server.
claim_report_as_vllm() {
	grep -q '^Profile: *vllm' "$1" || { echo "the report is not under vllm's rules"; return 1; }
	grep -q '^Successful requests: *[1-9]' "$1" || { echo "no successful requests read"; return 1; }
	echo "read under vllm's rules: $(report_n "$1" 'Successful requests') requests"
}

# docs/compare.md: the four rule sets "side by side, no server": one run, a column each.
claim_report_side_by_side() {
	grep -q '^=* latscope compare: 4 profiles, 1 run =*$' "$1" || { echo "not 4 profiles on 1 run"; return 1; }
	grep -qE '^Metric +vllm +sglang +sglang-oai +honest$' "$1" || { echo "no column per rule set"; return 1; }
	echo "4 profiles, 1 run, a column each"
}

# README "Capacity at an SLO": against a server of at most 50 req/s behind 5 slots, 45 req/s from
# scheduled (60 fails: its slot wait), >= 90 from started (never fails), "+100 % overstated". 30 is
# taken too (45 at 90 % of the server is the point a loaded host's lag can tip; the text's promise,
# the overstatement, then reads +200 %); 60 or more from scheduled is a slot wait not counted.
claim_sweep_overstates() {
	local sched over
	sched=$(sed -n 's/^  scheduled  *\([0-9.]*\) req\/s.*/\1/p' "$1")
	over=$(sed -n 's/.*overstates capacity by +\([0-9.]*\) % or more.*/\1/p' "$1")
	[ -n "$sched" ] || { echo "no capacity from scheduled in the output"; return 1; }
	[ "$sched" = 45.00 ] || [ "$sched" = 30.00 ] || { echo "capacity from scheduled $sched req/s, the text says 45"; return 1; }
	grep -q '^  started  *>= 90.00 req/s' "$1" ||
		{ echo "capacity from started: $(grep -m1 '^  started ' "$1"), the text says >= 90"; return 1; }
	[ -n "$over" ] && awk -v o="$over" 'BEGIN { exit !(o >= 100) }' || { echo "overstatement ${over:-not said}, the text says +100 %"; return 1; }
	echo "capacity $sched req/s from scheduled, >= 90 from started: +$over % overstated"
}

# docs/sweep.md: without client slots the queue is the server's, "so every clock sees it: 50 req/s
# found, 50 analytic, no overstatement" (30-55 taken: the search's answer moves with a loaded host).
claim_sweep_no_slots() {
	python3 - "$2/sweep.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"sweep.json: {e}")
cap, over = d.get("capacity", {}), d.get("overstatement_pct")
got = [cap.get(k) for k in ("scheduled", "admitted", "started")]
if None in got or len(set(got)) != 1 or not 30 <= got[0] <= 55 or over != 0:
    sys.exit(f"capacity per clock {got} (the text: 50 for each), overstatement {over} (the text: none)")
print(f"{got[0]} req/s from every clock, no overstatement (sweep.json)")
PY
}

# docs/html.md: `report run.jsonl --html again.html` is "the same page from the records": every table
# cell and the charts' data equal bench's run.html (but the command line and what was read).
claim_same_page() {
	[ -s "$2/run.html" ] && [ -s "$2/again.html" ] || { echo "run.html or again.html missing"; return 1; }
	python3 "$ROOT/tests/integration/roundtrip_check.py" html "$2/run.html" "$2/again.html" >"$2/same_page.out" 2>&1 ||
		{ echo "the pages differ: $(head -3 "$2/same_page.out" | tr '\n' ' ')"; return 1; }
	echo "again.html has run.html's cells and charts"
}

# docs/bench.md: "TTFT drops when prompts share a cached prefix": one at a time, each prefix's
# first prompt computes it (2 of 20), the rest hit: the slowest TTFT is well above the median.
claim_prefix_cache() {
	local med max
	med=$(sed -n 's/^TTFT from started (ms): *mean [0-9.]*  median \([0-9.]*\) .*/\1/p' "$1")
	max=$(sed -n 's/^TTFT from started (ms): .* max \([0-9.]*\) .*/\1/p' "$1")
	[ -n "$med" ] && [ -n "$max" ] || { echo "no TTFT from started in the report"; return 1; }
	awk -v m="$med" -v x="$max" 'BEGIN { exit !(x >= 1.5 * m) }' ||
		{ echo "TTFT median $med ms, max $max ms: no cached prefix made the others faster"; return 1; }
	echo "TTFT median $med ms with the prefix cached, max $max ms computing it"
}

# docs/lab.md: --rtt-us 2000 with 200 us of jitter delivers about 2 ms.
claim_lab_jitter() { lab_rtt_within "$1" 2000 1800 2600; }

# docs/compare.md: "compare reads profiles that send alike from ONE run": vllm and honest share
# one, so four profiles take three runs.
claim_compare_runs() {
	grep -q '^=* latscope compare: 4 profiles, 3 runs =*$' "$1" || { echo "not 4 profiles on 3 runs"; return 1; }
	grep -qE '^Run +1 +2 +3 +1$' "$1" || { echo "vllm and honest do not share run 1: $(grep -m1 '^Run ' "$1")"; return 1; }
	echo "4 profiles, 3 runs (vllm and honest share run 1)"
}

# docs/peer-flags.md: SGLang's own command line writes SGLang's JSONL line (--output-file).
claim_sglang_file() {
	[ -s "$2/sg.jsonl" ] || { echo "no sg.jsonl"; return 1; }
	python3 - "$2/sg.jsonl" <<'PY' || return 1
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[-1])
want = ["backend", "dataset_name", "request_rate", "completed", "total_input_tokens", "median_ttft_ms", "median_itl_ms"]
missing = [k for k in want if k not in r]
if missing or r["completed"] != 50 or r["backend"] != "sglang" or r["dataset_name"] != "random":
    sys.exit(f"sg.jsonl: missing {missing}, completed {r.get('completed')}, backend {r.get('backend')}")
print(f"sg.jsonl: SGLang's line, {r['completed']} completed, {r['total_input_tokens']} input tokens")
PY
}

claim_of() { # example: the CLAIMS function that checks it, if any
	local i
	for ((i = 0; i < ${#CLAIMS[@]}; i += 2)); do
		# shellcheck disable=SC2053 # a glob
		[[ $1 == ${CLAIMS[i]} ]] && { echo "${CLAIMS[i + 1]}"; return; }
	done
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-readme.XXXXXX") || exit 1
n=0 ok=0 skipped=0 failed=0
block_sim_pid='' block_sim_line='' block_sim_cmd='' block_sim_port='' default_sim_pid='' current_pid=''
blocks=() block_pids=()

cleanup() {
	local pid
	trap '' INT TERM # a second signal (the group's, then ours) would cut the cleanup short
	[ -n "$current_pid" ] && kill -TERM -- "-$current_pid" 2>/dev/null
	for pid in "$block_sim_pid" "$default_sim_pid" "${block_pids[@]}"; do
		[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	# Interrupted (the bound of tests/run): what the blocks not yet shown had done by then.
	for pid in "${!block_pids[@]}"; do
		[ -n "${block_pids[pid]}" ] && grep -v '^#counts \|^#took ' "$tmp/block-${blocks[pid]}.out" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

verdict() { # ok|skip|fail line example [why]; the time since example_start
	local took=" ($((SECONDS - example_start)) s)"
	case $1 in
	ok) ok=$((ok + 1)); echo "ok    $2  $3$took" ;;
	skip) skipped=$((skipped + 1)); echo "skip ($4)  $2  $3" ;;
	fail) failed=$((failed + 1)); echo "FAIL ($4)  $2  $3$took" ;;
	esac
}
show_log() { [ -s "$1" ] && tail -15 "$1" | sed 's/^/      | /'; }

# A file name for an example's logs: its FILE:LINE with / and : made _.
tag() { local t=${1//\//_}; echo "${t//:/_}"; }

# The examples, one per line: block number (over all the documents) TAB FILE:LINE TAB example.
examples() {
	local f paths=()
	for f in "${DOCS[@]}"; do paths+=("$ROOT/$f"); done
	awk -v root="$ROOT/" '
	FNR == 1 { inblock = 0; cmd = ""; name = substr(FILENAME, length(root) + 1) }
	/^```(sh|bash|shell)[[:space:]]*$/ { inblock = 1; block++; next }
	inblock && /^```/ { inblock = 0; next }
	inblock {
		line = $0
		if (line ~ /^[[:space:]]*#/) line = ""
		i = index(line, " # "); if (i) line = substr(line, 1, i - 1)
		sub(/[[:space:]]+$/, "", line)
		if (cmd == "") start = FNR
		sub(/^[[:space:]]+/, "", line)
		if (line ~ /\\$/) { cmd = cmd substr(line, 1, length(line) - 1); next }
		cmd = cmd line
		if (cmd != "") printf "%d\t%s:%d\t%s\n", block, name, start, cmd
		cmd = ""
	}' "${paths[@]}"
}

# The command line to hand to bash -c: the binary for `latscope`, no `sudo` (we are root), the
# block's simulator for `$!`, no trailing "&" or "..." (the docs' "and any other flags").
runnable() { # example
	local c=$1 q
	c=${c#sudo }
	c=${c%&}
	c=${c% ...}
	if [[ $c == latscope\ * ]]; then
		printf -v q %q "$BIN"
		c="$q ${c#latscope }"
	fi
	[ -n "$block_sim_pid" ] && c=${c//\$!/$block_sim_pid}
	printf '%s' "$c"
}

port_of() { # command: the port it listens on or talks to, 8000 when it does not say
	local p
	p=$(grep -oE -- '--port[ =][0-9]+|(localhost|127\.0\.0\.1|\]):[0-9]+' <<<"$1" | head -1 | grep -oE '[0-9]+$')
	echo "${p:-8000}"
}

accepts() { # port pid: waits up to 10 s for a TCP accept on 127.0.0.1:port while pid lives
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$2" 2>/dev/null || return 1
		timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# Starts a simulator in the background in DIR; leaves its pid (latscope's own) in started_pid.
start_sim() { # dir log command
	(cd "$1" && exec bash -c "exec $3") >"$2" 2>&1 </dev/null &
	started_pid=$!
}

stop_sim() { # pid: SIGTERM, then its exit status (0 expected)
	kill -TERM "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

stop_block_sim() {
	[ -z "$block_sim_pid" ] && return
	local rc
	stop_sim "$block_sim_pid"
	rc=$?
	if [ "$rc" -ne 0 ]; then # it was counted ok when it came up
		ok=$((ok - 1))
		verdict fail "$block_sim_line" "$block_sim_cmd" "exit $rc on SIGTERM"
		show_log "$tmp/sim-$(tag "$block_sim_line").log"
	fi
	block_sim_pid=''
}

run_server() { # line example dir
	local log=$tmp/ex-$(tag "$1").log c port rc up=0
	c=$(runnable "$2")
	port=$(port_of "$c")
	if [[ $2 == *'&' ]]; then
		stop_block_sim
		start_sim "$3" "$tmp/sim-$(tag "$1").log" "$c"
		if accepts "$port" "$started_pid"; then
			block_sim_pid=$started_pid block_sim_line=$1 block_sim_cmd=$2 block_sim_port=$port
			verdict ok "$1" "$2"
		else
			stop_sim "$started_pid"
			verdict fail "$1" "$2" "exit $?, never accepted on port $port"
			show_log "$tmp/sim-$(tag "$1").log"
		fi
		return
	fi
	# Up (accepted) first, however long a loaded machine takes; then it serves SERVER_TIMEOUT_S
	# and must still be serving (SIGTERM: exit 0 expected), or have exited 0 by itself.
	# timeout bounds it (SIGTERM forwarded, the server's own exit status kept); --foreground: to
	# the server alone (else timeout also signals its group, and a second SIGTERM can kill the
	# server while it exits: 143). No watchdog subshell: one killed right after its fork can still
	# run this script's traps (cleanup).
	(cd "$3" && exec timeout --foreground --preserve-status -k 5 $((SERVER_TIMEOUT_S + 15)) bash -c "exec $c") >"$log" 2>&1 </dev/null &
	current_pid=$!
	accepts "$port" "$current_pid" && up=1
	[ "$up" -eq 1 ] && sleep "$SERVER_TIMEOUT_S"
	kill -TERM "$current_pid" 2>/dev/null
	wait "$current_pid"
	rc=$?
	current_pid=''
	if [ "$up" -eq 1 ] && [ "$rc" -eq 0 ]; then
		verdict ok "$1" "$2"
	elif [ "$up" -eq 0 ] && [ "$rc" -eq 0 ]; then
		verdict fail "$1" "$2" "exit $rc, never accepted on port $port"
		show_log "$log"
	else
		verdict fail "$1" "$2" "exit $rc$([ "$up" -eq 0 ] && echo ", never accepted on port $port")"
		show_log "$log"
	fi
}

run_client() { # line example dir expected-exit [timeout]
	local limit=${5:-$CLIENT_TIMEOUT_S} log=$tmp/ex-$(tag "$1").log c url port rc sim_pid='' tls='' claim found
	c=$(runnable "$2")
	url=$(grep -oE 'https?://[^ "'\'']+|(localhost|127\.0\.0\.1):[0-9]+' <<<"$c" | head -1)
	if [ -n "$url" ]; then
		port=$(port_of "$url")
		if [ -z "$block_sim_pid" ] || [ "$block_sim_port" != "$port" ]; then
			[[ $url == https://* ]] && tls=' --tls'
			start_sim "$3" "$tmp/sim-$(tag "$1").log" "$(printf %q "$BIN") sim --port $port$tls $DEFAULT_SIM_ARGS"
			sim_pid=$started_pid default_sim_pid=$started_pid
			if ! accepts "$port" "$sim_pid"; then
				stop_sim "$sim_pid"
				verdict fail "$1" "$2" "its simulator (latscope sim --port $port$tls $DEFAULT_SIM_ARGS) did not start"
				show_log "$tmp/sim-$(tag "$1").log"
				default_sim_pid=''
				return
			fi
		elif ! kill -0 "$block_sim_pid" 2>/dev/null; then
			verdict fail "$1" "$2" "the block's simulator ($block_sim_line) is gone"
			return
		fi
	fi
	(cd "$3" && exec timeout -k 5 "$limit" bash -c "exec $c") >"$log" 2>&1 </dev/null &
	current_pid=$!
	wait "$current_pid"
	rc=$?
	current_pid=''
	if [ -n "$sim_pid" ]; then
		stop_sim "$sim_pid"
		default_sim_pid=''
	fi
	if [ "$rc" -ne "$4" ]; then
		verdict fail "$1" "$2" "exit $rc$([ "$rc" -eq 124 ] && echo ", past $limit s")"
		show_log "$log"
		return
	fi
	claim=$(claim_of "$2")
	if [ -z "$claim" ]; then
		verdict ok "$1" "$2"
	elif found=$("$claim" "$log" "$3"); then
		verdict ok "$1" "$2  [checked: $found]"
	else
		verdict fail "$1" "$2" "$claim: $found"
		show_log "$log"
	fi
}

run_make() { # line example
	local log=$tmp/ex-$(tag "$1").log
	# shellcheck disable=SC2086 # the example's own words
	if make -C "$ROOT" -n ${2#make } >"$log" 2>&1 </dev/null; then
		verdict ok "$1" "$2"
	else
		verdict fail "$1" "$2" "make -n: exit $?"
		show_log "$log"
	fi
}

special_of() { # example: the SPECIAL verdict that matches it, if any
	local i
	for ((i = 0; i < ${#SPECIAL[@]}; i += 2)); do
		# shellcheck disable=SC2053 # a glob
		[[ $1 == ${SPECIAL[i]} ]] && { echo "${SPECIAL[i + 1]}"; return; }
	done
}

# Runs one block's examples in order, in one scratch directory; prints a verdict line each, then
# "#counts N OK SKIPPED FAILED".
run_block() { # block
	local dir=$tmp/block b line ex special expect limit
	mkdir "$dir" || return 1
	while IFS=$'\t' read -r b line ex; do
		[ "$b" = "$1" ] || continue
		n=$((n + 1)) example_start=$SECONDS
		special=$(special_of "$ex") expect=0 limit=$CLIENT_TIMEOUT_S
		case $special in
		skip:*) verdict skip "$line" "$ex" "${special#skip: }"; continue ;;
		exit\ *) expect=${special#exit } ;;
		timeout\ *) limit=${special#timeout } ;;
		esac
		case ${ex#sudo } in
		'latscope sim'*) run_server "$line" "$ex" "$dir" ;;
		latscope\ * | curl\ *) run_client "$line" "$ex" "$dir" "$expect" "$limit" ;;
		make | make\ *) run_make "$line" "$ex" ;;
		*) verdict fail "$line" "$ex" "not a latscope, curl or make command: give it a way to run here, or an entry in SPECIAL" ;;
		esac
	done < <(examples)
	stop_block_sim
	echo "#counts $n $ok $skipped $failed"
	echo "#took $SECONDS"
}

if [ "${1:-}" = --block ]; then # one block, in the private network namespace the parent made
	ip link set lo up || { echo "FAIL: cannot bring lo up in a private network namespace"; exit 1; }
	run_block "$2"
	exit
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "needs root: the docs' examples run in private network namespaces (fixed ports such as 8000)"
	exit 77
fi
if ! why=$(unshare -n true 2>&1); then
	echo "cannot make a private network namespace (unshare -n: ${why:-failed})"
	exit 77
fi
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make all)"; exit 1; }
for f in "${DOCS[@]}"; do [ -r "$ROOT/$f" ] || { echo "FAIL: cannot read $ROOT/$f"; exit 1; }; done

# The blocks are independent (own namespace, own scratch directory), so they run JOBS at a time:
# ~1 min instead of all of them one after the other (~3.5 min).
firsts=() block_ex=() # a block's examples, joined: its name in build/readme_examples.seconds
while IFS=$'\t' read -r b line ex; do
	if [ ${#blocks[@]} -eq 0 ] || [ "${blocks[-1]}" != "$b" ]; then
		blocks+=("$b") firsts+=("$line") block_ex+=("$ex")
	else
		block_ex[-1]+=" ; $ex"
	fi
done < <(examples)
[ ${#blocks[@]} -gt 0 ] || { echo "FAIL: no examples found in ${DOCS[*]}"; exit 1; }
# A promise whose example is gone (reworded, moved out of the docs) fails: its check would
# silently stop running.
for ((i = 0; i < ${#CLAIMS[@]}; i += 2)); do
	while IFS=$'\t' read -r _ _ ex; do
		# shellcheck disable=SC2053 # a glob
		[[ $ex == ${CLAIMS[i]} ]] && continue 2
	done < <(examples)
	[ -n "${LATSCOPE_DOCS:-}" ] && continue # a chosen subset of the documents
	echo "FAIL: no example matches the CLAIMS entry '${CLAIMS[i]}' (${CLAIMS[i + 1]}): update it with the docs"
	failed=$((failed + 1))
done
# Longest first: the blocks the last full run (build/readme_examples.seconds, each block's seconds
# by its examples) took longest start first, the rest after them in the documents' order. In
# the documents' order the sweep block (~35 s) started last and ran alone: 71 s against 53.
SECONDS_FILE=$ROOT/build/readme_examples.seconds
order=()
while IFS=$'\t' read -r _ i; do order+=("$i"); done < <(
	for i in "${!blocks[@]}"; do
		s=$(EX=${block_ex[i]} awk -F'\t' '$2 == ENVIRON["EX"] { print $1; exit }' "$SECONDS_FILE" 2>/dev/null)
		printf '%d\t%d\n' "${s:-0}" "$i"
	done | sort -s -t$'\t' -k1,1nr)
for i in "${order[@]}"; do
	b=${blocks[i]}
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
	unshare -n bash "$0" --block "$b" >"$tmp/block-$b.out" 2>&1 </dev/null &
	block_pids[i]=$!
done
took=()
for i in "${!blocks[@]}"; do
	wait "${block_pids[i]}"
	rc=$?
	block_pids[i]=''
	out=$tmp/block-${blocks[i]}.out
	grep -v '^#counts \|^#took ' "$out"
	read -r _ bn bok bskip bfail < <(grep '^#counts ' "$out")
	took[i]=$(sed -n 's/^#took //p' "$out")
	if [ -z "${bn:-}" ]; then
		echo "FAIL (exit $rc before its end)  the block at ${firsts[i]}"
		failed=$((failed + 1))
		continue
	fi
	n=$((n + bn)) ok=$((ok + bok)) skipped=$((skipped + bskip)) failed=$((failed + bfail))
	bn=''
done
echo "$n examples: $ok ok, $skipped skipped, $failed failed"
if [ -z "${LATSCOPE_DOCS:-}" ] && [ -d "$ROOT/build" ]; then # every block ran: the next run's order
	for i in "${!blocks[@]}"; do printf '%s\t%s\n' "${took[i]:-0}" "${block_ex[i]}"; done >"$SECONDS_FILE.new" &&
		mv "$SECONDS_FILE.new" "$SECONDS_FILE"
fi
[ "$failed" -eq 0 ]
