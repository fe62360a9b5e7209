#!/usr/bin/env bash
# engines/engine_steps: engine steps from uprobes on llama-server's llama_decode (--server-pid),
# each request's server time split into queue / prefill / decode, checked against the engine's
# own account of the same request (its `timings`, which the server computes with its own clock
# and latscope never uses to place a step):
#  - 16 requests of 64 prompt tokens in flight at once on 2 slots (14 wait for a slot), the same
#    with lengths 32-96 and 8-24 (sessions that do not pair up), then 8 at most 2 in flight (none
#    waits);
#  - every ok request joined to a session, on the slot the server's log ran it on (its
#    print_timing block found by its exact timings; twins, two prompts computed in the same
#    steps, either way); its prompt tokens = prompt_n; prefill (its first step's start -> its
#    prompt's last step's end) <= prompt_ms, prefill + decode <= prompt_ms + predicted_ms (the
#    engine's account adds its host work around the steps); every window's parts add up exactly;
#  - with the CPU free (pressure <= 5 %, /proc/pressure/cpu over the run), per request (one outlier
#    of a run shown, not failed: a preemption between a step and the engine's clock reads): prefill
#    within 5 % or 0.3 ms of timings.prompt_ms, decode per token (prompt end -> its last step's
#    end, over predicted_n) within 5 % of predicted_ms / predicted_n, or the engine's own boundary
#    between the two moved (its prompt longer by what its generation is shorter: a preemption
#    between the step and its first sample; the totals agree within 3 %); quiet (<= 25 %): the median
#    request within those, and queue > one step exactly for the requests that had no slot when
#    they arrived (>= 2 requests sent before it still streaming, from the client's own stamps);
#    above that, preemption around the engine's steps is in its account: reported, not asserted;
#  - every request's frontend (its server read -> its HTTP thread's post_tasks, uprobes) found
#    on the thread that read it: frontend + queue = the kernel's read -> its first step to the
#    ns, frontend in its TTFT whole; chat requests (text) tokenized on that thread before it;
#  - the uprobes' cost per step and per request's frontend marks: BPF run time
#    (kernel.bpf_stats_enabled, bpftool) per call.
# Catches: n_tokens or seq ids read at the wrong offset of struct llama_batch (no sessions, or
# prompt tokens that do not fit), start and end swapped or taken from the wrong probe, a session
# split wrongly (decode steps counted as prefill), sessions joined to the wrong requests (a
# prefill time off by a whole step), queue taken from the wrong end, the host clock not moved.
. "$(dirname "$0")/engine_lib.bash"
need_engine
[ "$(id -u)" -eq 0 ] || skip "not root: the eBPF probes need root"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF (/sys/kernel/btf/vmlinux): the probes cannot load"
command -v bpftool >/dev/null || skip "no bpftool (make deps): the uprobes' cost cannot be read"

STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
# cleanup (engine_lib.bash) reads the exit status from $?: it is handed on past the restore.
trap 'st=$?; sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"; [ -n "${POLL:-}" ] && kill "$POLL" 2>/dev/null; (exit $st); cleanup' EXIT
sysctl -qw kernel.bpf_stats_enabled=1 || skip "cannot enable kernel.bpf_stats_enabled"

# poll_progs NAME: bpftool's view of the loaded programs every 0.2 s while a run lasts (the
# programs go when latscope exits), one JSON array per line into $TMP/NAME.progs.
poll_progs() {
	( while [ ! -e "$TMP/$1.stop" ]; do bpftool -j prog show 2>/dev/null >>"$TMP/$1.progs" && echo >>"$TMP/$1.progs"; sleep 0.2; done ) &
	POLL=$!
}
stop_poll() { touch "$TMP/$1.stop"; wait "$POLL" 2>/dev/null; POLL=; }

# cpu_some: /proc/pressure/cpu's "some" total (us), to tell how contended the CPU was.
cpu_some() { sed -n 's/^some .*total=\([0-9]*\)/\1/p' /proc/pressure/cpu 2>/dev/null || echo 0; }

FAILED=
run() { # run NAME CONCURRENCY PROMPTS [--joins-only] [bench args...]
	local check=()
	[ "${4:-}" = --joins-only ] && { check=(--joins-only); set -- "$1" "$2" "$3" "${@:5}"; }
	case " ${*:4} " in *" openai-chat "*) check+=(--text) ;; esac # text prompts: each tokenized
	local t0 p0 pressure
	poll_progs "$1"
	t0=$(date +%s%N) p0=$(cpu_some)
	bench "$1" --backend openai --dataset-name random --random-input-len 64 --random-output-len 16 \
		--num-prompts "$3" --max-concurrency "$2" --ignore-eos --connection per-request \
		--probes on --server-pid "$SRV" "${@:4}"
	stop_poll "$1"
	pressure=$(( ($(cpu_some) - p0) * 100000 / (($(date +%s%N) - t0) / 1000 + 1) ))
	sed -n '/Where the latency went/,/^requests:/p' "$TMP/$1.out" | grep -E "^(TTFT|  frontend|  queue|  prefill|  decode|  server|engine steps|  joined)"
	"$PY" "$ROOT/tests/engines/engine_steps_check.py" "$TMP" "$1" --slots 2 --concurrency "$2" \
		--cpu-pressure "$((pressure / 1000)).$((pressure % 1000 / 100))" "${check[@]}" || FAILED="$FAILED $1"
}

start_server 2
run burst 16 16
# Lengths from 32 to 96 prompt and 8 to 24 output tokens: sessions of different lengths that do
# not stay paired (no twins), so the join must tell the requests apart by time and counts.
# The server caches the burst's prompts (the same seed): most of these compute a few tokens.
run mixed 16 16 --joins-only --random-range-ratio 0.5
run paced 2 8
# Chat: text the server renders with its template and tokenizes (llama_tokenize on the HTTP
# thread, before post_tasks; the runs above send token ids: no tokenize); latscope's own /tokenize
# calls that built the prompts go to no request.
run chat 2 8 --joins-only --backend openai-chat
[ -z "$FAILED" ] || fail "$FAILED: the uprobe steps disagree with the engine's own account (above)"
