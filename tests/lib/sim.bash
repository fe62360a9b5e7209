# tests/lib/sim.bash — the one way the shell tests and benchmarks start `latscope sim`: on a
# random port (tried 5 times: a port may be taken), waiting until it accepts connections.
#   ls_sim_start TRUTH LOG [SIM ARGS...]  sets PORT and SIM (its pid); TRUTH "" = no truth file.
#   ls_sim_stop                            stops it (SIM=0 after).
# Uses $BIN and, when set, $PIN_SIM (e.g. "taskset -c 1"). Returns 1 when it did not start.
ls_sim_start() {
	local truth=$1 log=$2 try wait
	shift 2
	local -a truth_args=()
	[ -n "$truth" ] && truth_args=(--truth "$truth")
	for try in 1 2 3 4 5; do
		PORT=$((20000 + RANDOM % 30000))
		[ -n "$truth" ] && rm -f "$truth"
		# shellcheck disable=SC2086 # PIN_SIM is a command prefix, split on purpose
		${PIN_SIM:-} "$BIN" sim --port "$PORT" "${truth_args[@]}" --quiet "$@" 2>"$log" &
		SIM=$!
		for wait in $(seq 200); do
			(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
			kill -0 "$SIM" 2>/dev/null || break
			sleep 0.05
		done
		ls_sim_stop
	done
	return 1
}

ls_sim_stop() {
	[ "${SIM:-0}" -gt 0 ] && { kill "$SIM" 2>/dev/null; wait "$SIM" 2>/dev/null; }
	SIM=0
}
