#!/usr/bin/env bash
# tests/integration/readme_examples.sh — runs every shell example in README.md, so none can rot.
# An example is one line of a ```sh block (lines ending in "\" joined, " # " comments dropped, blank
# lines skipped); inline `code` is not an example. How each one runs:
#  - `latscope sim ...`: a server, started under `timeout 2`; ok when it accepted on its port and
#    was still serving at the end (124) or exited 0. Ending in "&": it serves the block's later
#    examples instead, and is stopped after them with SIGTERM (exit 0 expected, as the README says);
#  - a client (`latscope ...`, `curl ...`): a URL in it gets a simulator first (the block's own
#    `latscope sim ... &`, else `latscope sim --port P`, with --tls for https), then it runs under
#    60 s in the block's scratch directory (files an earlier example of the block wrote are there)
#    and must exit 0 (or what SPECIAL says); `$!` is the block's simulator, `sudo` is dropped (root);
#  - `make TARGET...`: `make -n TARGET...` only checks the target exists (no demo, test or fuzz run);
#  - SPECIAL below names the few that cannot run here, with the reason; anything else fails, so a
#    new kind of example gets a way to run (or an honest entry) before it gets into the README.
# Each block runs in a private network namespace of its own (the examples use fixed ports such as
# 8000), all blocks at once: it needs root, without it exit 77 (skip). Exit 1 when any example failed.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
README=$ROOT/README.md
CLIENT_TIMEOUT_S=60
SERVER_TIMEOUT_S=2
# The simulator a client example gets when its block starts none: 1 ms steps instead of 10, so the
# examples that run bench's defaults (1,000 prompts of 128 tokens) take seconds, not minutes.
DEFAULT_SIM_ARGS='--step-ms 1'

# Examples that do not run as above: a glob over the example (as printed) and `skip: WHY` or
# `exit N` (the README says it exits N). Keep it short and honest.
SPECIAL=(
	'CUDA_INJECTION64_PATH=* vllm serve *'	'skip: a vLLM engine on a GPU machine'
	'latscope sim --gpu *'	'skip: needs a CUDA device; tests/gpu/smoke.sh runs the simulator with --gpu on a GPU machine'
	'tests/gpu/smoke.sh*'	'skip: a GPU machine check; tests/run runs it as e2e/gpu/smoke'
	'*tests/run *'	'skip: the test suite itself, not run from inside it'
	'*latscope watch * -- tests/clients/aiohttp_client.py *'	'skip: runs the Python client from the repository root; tests/integration/watch_python.sh runs it under watch'
	'mpirun *'	'skip: tests/integration/mpi_run.sh runs mpirun -n 2 and -n 3 latscope bench against the simulator'
	'srun *'	'skip: needs a Slurm cluster'
	'latscope report *.rank0 *'	'skip: needs the rank files of an MPI run; tests/integration/mpi_kill.sh reads them'
)

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
		[ -n "${block_pids[pid]}" ] && grep -v '^#counts ' "$tmp/block-${blocks[pid]}.out" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

verdict() { # ok|skip|fail line example [why]; the time since example_start
	local took=" ($((SECONDS - example_start)) s)"
	case $1 in
	ok) ok=$((ok + 1)); echo "ok    README.md:$2  $3$took" ;;
	skip) skipped=$((skipped + 1)); echo "skip ($4)  README.md:$2  $3" ;;
	fail) failed=$((failed + 1)); echo "FAIL ($4)  README.md:$2  $3$took" ;;
	esac
}
show_log() { [ -s "$1" ] && tail -15 "$1" | sed 's/^/      | /'; }

# The examples, one per line: block number TAB line number TAB example.
examples() {
	awk '
	/^```(sh|bash|shell)[[:space:]]*$/ { inblock = 1; block++; next }
	inblock && /^```/ { inblock = 0; next }
	inblock {
		line = $0
		if (line ~ /^[[:space:]]*#/) line = ""
		i = index(line, " # "); if (i) line = substr(line, 1, i - 1)
		sub(/[[:space:]]+$/, "", line)
		if (cmd == "") start = NR
		sub(/^[[:space:]]+/, "", line)
		if (line ~ /\\$/) { cmd = cmd substr(line, 1, length(line) - 1); next }
		cmd = cmd line
		if (cmd != "") printf "%d\t%d\t%s\n", block, start, cmd
		cmd = ""
	}' "$README"
}

# The command line to hand to bash -c: the binary for `latscope`, no `sudo` (we are root), the
# block's simulator for `$!`, no trailing "&" or "..." (the README's "and any other flags").
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

accepts() { # port pid: waits up to 5 s for a TCP accept on 127.0.0.1:port while pid lives
	local i
	for ((i = 0; i < 50; i++)); do
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
		show_log "$tmp/sim-$block_sim_line.log"
	fi
	block_sim_pid=''
}

run_server() { # line example dir
	local log=$tmp/ex-$1.log c port rc up=0
	c=$(runnable "$2")
	port=$(port_of "$c")
	if [[ $2 == *'&' ]]; then
		stop_block_sim
		start_sim "$3" "$tmp/sim-$1.log" "$c"
		if accepts "$port" "$started_pid"; then
			block_sim_pid=$started_pid block_sim_line=$1 block_sim_cmd=$2 block_sim_port=$port
			verdict ok "$1" "$2"
		else
			stop_sim "$started_pid"
			verdict fail "$1" "$2" "exit $?, never accepted on port $port"
			show_log "$tmp/sim-$1.log"
		fi
		return
	fi
	(cd "$3" && exec timeout -k 2 "$SERVER_TIMEOUT_S" bash -c "exec $c") >"$log" 2>&1 </dev/null &
	current_pid=$!
	accepts "$port" "$current_pid" && up=1
	wait "$current_pid"
	rc=$?
	current_pid=''
	if [ "$up" -eq 1 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 0 ]; }; then
		verdict ok "$1" "$2"
	elif [ "$up" -eq 0 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 0 ]; }; then
		verdict fail "$1" "$2" "exit $rc, never accepted on port $port"
		show_log "$log"
	else
		verdict fail "$1" "$2" "exit $rc"
		show_log "$log"
	fi
}

run_client() { # line example dir expected-exit
	local log=$tmp/ex-$1.log c url port rc sim_pid='' tls=''
	c=$(runnable "$2")
	url=$(grep -oE 'https?://[^ "'\'']+|(localhost|127\.0\.0\.1):[0-9]+' <<<"$c" | head -1)
	if [ -n "$url" ]; then
		port=$(port_of "$url")
		if [ -z "$block_sim_pid" ] || [ "$block_sim_port" != "$port" ]; then
			[[ $url == https://* ]] && tls=' --tls'
			start_sim "$3" "$tmp/sim-$1.log" "$(printf %q "$BIN") sim --port $port$tls $DEFAULT_SIM_ARGS"
			sim_pid=$started_pid default_sim_pid=$started_pid
			if ! accepts "$port" "$sim_pid"; then
				stop_sim "$sim_pid"
				verdict fail "$1" "$2" "its simulator (latscope sim --port $port$tls $DEFAULT_SIM_ARGS) did not start"
				show_log "$tmp/sim-$1.log"
				default_sim_pid=''
				return
			fi
		elif ! kill -0 "$block_sim_pid" 2>/dev/null; then
			verdict fail "$1" "$2" "the block's simulator (README.md:$block_sim_line) is gone"
			return
		fi
	fi
	(cd "$3" && exec timeout -k 5 "$CLIENT_TIMEOUT_S" bash -c "exec $c") >"$log" 2>&1 </dev/null &
	current_pid=$!
	wait "$current_pid"
	rc=$?
	current_pid=''
	if [ -n "$sim_pid" ]; then
		stop_sim "$sim_pid"
		default_sim_pid=''
	fi
	if [ "$rc" -eq "$4" ]; then
		verdict ok "$1" "$2"
	else
		verdict fail "$1" "$2" "exit $rc$([ "$rc" -eq 124 ] && echo ", past ${CLIENT_TIMEOUT_S} s")"
		show_log "$log"
	fi
}

run_make() { # line example
	local log=$tmp/ex-$1.log
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
	local dir=$tmp/block b line ex special expect
	mkdir "$dir" || return 1
	while IFS=$'\t' read -r b line ex; do
		[ "$b" = "$1" ] || continue
		n=$((n + 1)) example_start=$SECONDS
		special=$(special_of "$ex") expect=0
		case $special in
		skip:*) verdict skip "$line" "$ex" "${special#skip: }"; continue ;;
		exit\ *) expect=${special#exit } ;;
		esac
		case ${ex#sudo } in
		'latscope sim'*) run_server "$line" "$ex" "$dir" ;;
		latscope\ * | curl\ *) run_client "$line" "$ex" "$dir" "$expect" ;;
		make | make\ *) run_make "$line" "$ex" ;;
		*) verdict fail "$line" "$ex" "not a latscope, curl or make command: give it a way to run here, or an entry in SPECIAL" ;;
		esac
	done < <(examples)
	stop_block_sim
	echo "#counts $n $ok $skipped $failed"
}

if [ "${1:-}" = --block ]; then # one block, in the private network namespace the parent made
	ip link set lo up || { echo "FAIL: cannot bring lo up in a private network namespace"; exit 1; }
	run_block "$2"
	exit
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "needs root: the README's examples run in private network namespaces (fixed ports such as 8000)"
	exit 77
fi
if ! why=$(unshare -n true 2>&1); then
	echo "cannot make a private network namespace (unshare -n: ${why:-failed})"
	exit 77
fi
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make all)"; exit 1; }
[ -r "$README" ] || { echo "FAIL: cannot read $README"; exit 1; }

# The blocks are independent (own namespace, own scratch directory), so they run at once: the run
# takes as long as the longest block (the lab's, ~30 s) instead of all of them (~2 min).
firsts=()
while IFS=$'\t' read -r b line _; do
	if [ ${#blocks[@]} -eq 0 ] || [ "${blocks[-1]}" != "$b" ]; then
		blocks+=("$b") firsts+=("$line")
	fi
done < <(examples)
[ ${#blocks[@]} -gt 0 ] || { echo "FAIL: no examples found in $README"; exit 1; }
for b in "${blocks[@]}"; do
	unshare -n bash "$0" --block "$b" >"$tmp/block-$b.out" 2>&1 </dev/null &
	block_pids+=($!)
done
for i in "${!blocks[@]}"; do
	wait "${block_pids[i]}"
	rc=$?
	block_pids[i]=''
	out=$tmp/block-${blocks[i]}.out
	grep -v '^#counts ' "$out"
	read -r _ bn bok bskip bfail < <(grep '^#counts ' "$out")
	if [ -z "${bn:-}" ]; then
		echo "FAIL (exit $rc before its end)  the block at README.md:${firsts[i]}"
		failed=$((failed + 1))
		continue
	fi
	n=$((n + bn)) ok=$((ok + bok)) skipped=$((skipped + bskip)) failed=$((failed + bfail))
	bn=''
done
echo "$n examples: $ok ok, $skipped skipped, $failed failed"
[ "$failed" -eq 0 ]
