#!/usr/bin/env bash
# tests/perf/run.sh — `make bench`: what latscope's harness costs, against `latscope sim` on
# loopback (a benchmark, not a pass/fail test). Prints one table and writes it as JSON to
# build/perf/results.json:
#   - streams: 100, 1,000 and 5,000 concurrent streams (all in flight at once);
#   - rates: 100, 1,000 and 5,000 req/s with free slots (Poisson arrivals, no concurrency cap);
#   - hold: 10,000 streams held by one latscope;
# each with the probes off and (as root, with BTF) on. Per case: client delay per frame (harness
# stamp - kernel arrival, from the probes), schedule lag (started - scheduled), harness CPU per
# request and per frame and peak RSS per stream in flight (bench's "harness cost" line), and the
# simulator's own figures (streams held at once from its truth file, CPU per frame from
# /proc/PID/schedstat). Then tests/perf/probes_cost.sh (probes' cost on both sides).
# The simulator and the harness are pinned to different cores when there are two.
# Then tests/perf/anchors.sh: the three-client table (the bare C floor client, latscope, a Python
# aiohttp client written as vLLM's) for bursts of C = 1..1024 and Poisson 100 and 1,000 req/s.
# Last, tests/perf/watch_cost.sh: a Python client watched by `latscope watch` against unwatched.
# build/perf/results.json holds numbers as JSON numbers, null where not measured.
# Env: LATSCOPE_PERF_QUICK=1 (smaller cases, ~3 min), LATSCOPE_PERF_SKIP_COST=1,
# LATSCOPE_PERF_SKIP_ANCHORS=1, LATSCOPE_PERF_SKIP_WATCH=1.
set -u
cd "$(dirname "$0")/../.."
BIN=${LATSCOPE_BIN:-$PWD/build/latscope}
OUT=${LATSCOPE_PERF_DIR:-$PWD/build/perf}
QUICK=${LATSCOPE_PERF_QUICK:-0}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "bench: $BIN not built (make)"; exit 1; }
T0=$(date +%s)

if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_SIM="taskset -c 1" PIN_BENCH="taskset -c 0" PINNED="sim on cpu 1, harness on cpu 0"
else
	PIN_SIM="" PIN_BENCH="" PINNED="not pinned (one core)"
fi
MODES="off"
if [ "$(id -u)" -eq 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	MODES="off on"
else
	PROBES_WHY="not root or no kernel BTF: client delay needs the probes"
fi

SIM=0
. tests/lib/sim.bash
stop_sim() { ls_sim_stop; }
trap stop_sim EXIT

# start_sim name args...: a fresh simulator per case (its truth file is the case's).
start_sim() {
	local name=$1; shift
	ls_sim_start "$OUT/$name.truth" "$OUT/$name.sim.log" "$@" && return 0
	echo "bench: the simulator did not start: $(tail -2 "$OUT/$name.sim.log")" >&2
	return 1
}

sched_ns() { awk '{print $1}' "/proc/$1/schedstat" 2>/dev/null || echo 0; }

# p50 p99 max (us) of the numbers (ns) on stdin.
pcts() { sort -n | awk '{ v[NR] = $1 } END { if (!NR) { print "- - -"; exit }
	printf "%.1f %.1f %.1f\n", v[int((NR - 1) * 0.50) + 1] / 1e3, v[int((NR - 1) * 0.99) + 1] / 1e3, v[NR] / 1e3 }'; }

# Schedule lag (started - scheduled) of measured requests in a --record file.
sched_lag() {
	awk 'function num(key,   m) { if (match($0, "\"" key "\":-?[0-9]+")) { m = substr($0, RSTART, RLENGTH);
		sub(/.*:/, "", m); return m + 0 } return 0 }
	/"warmup":0/ { s = num("scheduled_ns"); t = num("started_ns"); if (s && t) print t - s }' "$1" | pcts
}

# Most requests the simulator held at once (received -> finished/failed), from its truth file.
sim_held() {
	awk 'function num(key,   m) { if (match($0, "\"" key "\":[0-9]+")) { m = substr($0, RSTART, RLENGTH);
		sub(/.*:/, "", m); return m + 0 } return 0 }
	{ r = num("received"); e = num("finished"); if (!e) e = num("failed"); if (r && e) { print r, 1; print e, -1 } }' \
		"$1" | sort -n -k1,1 -k2,2 | awk '{ c += $2; if (c > m) m = c } END { print m + 0 }'
}

# A bench report's figures as "key=value" words.
parse_report() {
	awk '
	/^Successful requests:/ { ok = $NF }
	/^Failed requests:/ { failed = $NF }
	/^client delay per frame/ { for (i = 1; i <= NF; i++) {
		if ($i == "P50") cd50 = $(i + 1) * 1e3; if ($i == "P99") cd99 = $(i + 1) * 1e3; if ($i == "max") cdmax = $(i + 1) * 1e3 } }
	/^harness cost/ { for (i = 1; i <= NF; i++) {
		if ($i == "per" && $(i + 1) == "request,") ureq = $(i - 2)
		if ($i == "per" && $(i + 1) == "frame" && ufr == "") ufr = $(i - 2)
		if ($i == "(user") { uu = $(i + 1); uk = $(i + 4); sub(/\).*/, "", uk) }
		if ($i == "frames);") frames = $(i - 1)
		if ($i == "KiB" && $(i + 1) == "per") kib = $(i - 1)
		if ($i == "(peak") { peak = $(i + 1); sub(/\).*/, "", peak) }
		if ($i == "events,") ev = $(i - 1) } }
	END { printf "ok=%s failed=%s cd50=%s cd99=%s cdmax=%s ureq=%s ufr=%s uu=%s uk=%s frames=%s kib=%s peak=%s events=%s\n",
		ok + 0, failed + 0, cd50 == "" ? "-" : cd50, cd99 == "" ? "-" : cd99, cdmax == "" ? "-" : cdmax,
		ureq == "" ? "-" : ureq, ufr == "" ? "-" : ufr, uu == "" ? "-" : uu, uk == "" ? "-" : uk, frames + 0,
		kib == "" ? "-" : kib, peak + 0, ev + 0 }' "$1"
}

# jnum value: the value as a JSON number, or null when it is not one ("-", empty).
jnum() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] && printf '%s' "$1" || printf null; }

# verdict value limit: "met" when value <= limit, "missed", or "-" without a value.
verdict() { awk -v v="$1" -v l="$2" 'BEGIN { if (v == "" || v == "-") print "-"; else print (v + 0 <= l + 0 ? "met" : "missed") }'; }

stand_delay() { # case:mode label
	local n=$1
	[ -n "${V[$n:cd50]:-}" ] || return 0
	local c50=${V[$n:cd50]} c99=${V[$n:cd99]}
	local both; both=$([ "$(verdict "$c50" 20)" = met ] && [ "$(verdict "$c99" 200)" = met ] && echo met || echo missed)
	[ "$c50" = - ] && both="- (needs the probes)"
	printf '  %-62s p50 %s, p99 %s us (<= 20, <= 200): %s\n' "$2" "$c50" "$c99" "$both"
}

# marginal_cpu short:mode long:mode: CPU per extra frame between two runs that differ only in
# tokens per stream (user = libcurl + SSE + JSON + stamping; kernel = TCP receive and its ACK).
marginal_cpu() {
	local a=$1 b=$2
	[ -n "${V[$a:frames]:-}" ] && [ -n "${V[$b:frames]:-}" ] || return 0
	awk -v f1="${V[$a:frames]}" -v u1="${V[$a:uu]}" -v k1="${V[$a:uk]}" \
		-v f2="${V[$b:frames]}" -v u2="${V[$b:uu]}" -v k2="${V[$b:uk]}" 'BEGIN {
		if (f2 <= f1) exit
		u = (u2 * f2 - u1 * f1) / (f2 - f1); k = (k2 * f2 - k1 * f1) / (f2 - f1)
		printf "  %-62s user %.2f + kernel %.2f = %.2f us (<= 5): user %s, total %s\n",
			"harness CPU per frame, marginal (1,000 streams, 4x the tokens)", u, k, u + k,
			u <= 5 ? "met" : "missed", u + k <= 5 ? "met" : "missed" }'
}

ROWS=()
JSON=()
declare -A UFR SFR EVF # per "case:mode": harness and simulator CPU per frame, probe events per frame
declare -A V # per "case:mode:key": the figures the targets block reads
NAMES=()
# run_case name probes "sim args" bench args...
run_case() {
	local name=$1 mode=$2 simargs=$3; shift 3
	local tag="$name-probes-$mode" srv=()
	start_sim "$tag" $simargs || { ROWS+=("$(printf '%-12s %-3s  simulator did not start' "$name" "$mode")"); return; }
	[ "$mode" = on ] && srv=(--server-pid "$SIM")
	local s0 s1 t0 t1
	s0=$(sched_ns "$SIM"); t0=$(date +%s%N)
	$PIN_BENCH "$BIN" bench --base-url "http://127.0.0.1:$PORT" --model latscope-sim --ignore-eos \
		--num-warmups 0 --disable-tqdm --ready-check-timeout-sec 5 --seed 1 --random-input-len 16 \
		--probes "$mode" "${srv[@]}" --record "$OUT/$tag.jsonl" "$@" >"$OUT/$tag.out" 2>"$OUT/$tag.err"
	local rc=$?
	s1=$(sched_ns "$SIM"); t1=$(date +%s%N)
	stop_sim
	local $(parse_report "$OUT/$tag.out")
	read -r lag50 lag99 lagmax < <(sched_lag "$OUT/$tag.jsonl")
	local held simfr wall
	held=$(sim_held "$OUT/$tag.truth")
	simfr=$(awk -v s=$((s1 - s0)) -v f="$frames" 'BEGIN { if (f > 0) printf "%.2f", s / f / 1e3; else print "-" }')
	wall=$(awk -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", t / 1e9 }')
	[ $rc -ne 0 ] && failed="$failed(rc$rc)"
	ROWS+=("$(printf '%-12s %-3s %6s %5s %7s %6s | %7s %7s %8s | %7s %7s %8s | %8s %6s %5s %5s %6s | %6s %6s | %5s' \
		"$name" "$mode" "$peak" "$ok" "$frames" "$failed" "$cd50" "$cd99" "$cdmax" "$lag50" "$lag99" "$lagmax" \
		"$ureq" "$ufr" "$uu" "$uk" "$kib" "$held" "$simfr" "$wall")")
	# Numbers as JSON numbers, null where not measured ("-"); rc: the bench's exit status.
	JSON+=("$(printf '{"case":"%s","probes":"%s","peak_in_flight":%s,"ok":%s,"failed":%s,"rc":%s,"frames":%s,"client_delay_us":{"p50":%s,"p99":%s,"max":%s},"schedule_lag_us":{"p50":%s,"p99":%s,"max":%s},"harness_cpu_us_per_request":%s,"harness_cpu_us_per_frame":%s,"harness_user_us_per_frame":%s,"harness_kernel_us_per_frame":%s,"rss_kib_per_stream":%s,"probe_events":%s,"sim_streams_held":%s,"sim_cpu_us_per_frame":%s,"wall_s":%s}' \
		"$name" "$mode" "$(jnum "$peak")" "$(jnum "$ok")" "$(jnum "${failed%%(*}")" "$rc" "$(jnum "$frames")" \
		"$(jnum "$cd50")" "$(jnum "$cd99")" "$(jnum "$cdmax")" "$(jnum "$lag50")" "$(jnum "$lag99")" "$(jnum "$lagmax")" \
		"$(jnum "$ureq")" "$(jnum "$ufr")" "$(jnum "$uu")" "$(jnum "$uk")" "$(jnum "$kib")" "$(jnum "$events")" \
		"$(jnum "$held")" "$(jnum "$simfr")" "$(jnum "$wall")")")
	UFR[$name:$mode]=$ufr SFR[$name:$mode]=$simfr
	local k
	for k in ok failed frames cd50 cd99 lag99 uu uk kib held; do V[$name:$mode:$k]=${!k}; done
	EVF[$name:$mode]=$(awk -v e="$events" -v f="$frames" 'BEGIN { printf "%.2f", (f > 0 ? e / f : 0) }')
	[ "$mode" = off ] && NAMES+=("$name")
	echo "  done: $name probes $mode (${wall}s)" >&2
}

# Concurrent streams: all C in flight at once, a fixed-time step (no per-token cost) so the frame
# rate is known: C / step per second.
if [ "$QUICK" = 1 ]; then
	STREAMS="100:10:50 1000:50:20"; RATES="100 1000"; HOLD=2000
else
	STREAMS="100:10:100 1000:40:40 5000:100:20"; RATES="100 1000 5000"; HOLD=10000
fi
echo "latscope make bench: $(nproc) cores, $PINNED, probes: $MODES${PROBES_WHY:+ ($PROBES_WHY)}" >&2
for spec in $STREAMS; do
	IFS=: read -r c step tokens <<<"$spec"
	for mode in $MODES; do
		run_case "streams-$c" "$mode" "--step-ms $step --prefill-token-us 0 --decode-token-us 0 --max-batch $((c + 16)) --max-batch-tokens 1000000" \
			--num-prompts "$c" --max-concurrency "$c" --random-output-len "$tokens"
	done
done
# Request rates with free slots: 2 s of Poisson arrivals, 4 tokens at 5 ms steps each.
for r in $RATES; do
	for mode in $MODES; do
		run_case "rate-$r" "$mode" "--step-ms 5 --prefill-token-us 0 --decode-token-us 0 --max-batch 4096 --max-batch-tokens 1000000" \
			--num-prompts $((2 * r)) --request-rate "$r" --random-output-len 4
	done
done
# The same 1,000 streams from a server that spends 25 us of CPU per frame it writes (a Python API
# server serialises and detokenises each frame for longer than that), so a step's frames leave
# 25 us apart instead of the simulator's ~10: the harness's own delay per frame without a queue
# of frames ahead of it; the loop sleeping between frames, spinning 50 us before it sleeps
# (--spin-us 50), and never sleeping (--busy-poll).
c=1000; IFS=: read -r _ step tokens <<<"$(tr ' ' '\n' <<<"$STREAMS" | grep "^1000:")"
CMODE=off; [[ " $MODES " == *" on "* ]] && CMODE=on
SRV25="--step-ms $step --prefill-token-us 0 --decode-token-us 0 --max-batch $((c + 16)) --max-batch-tokens 1000000 --api-frame-us 25"
run_case "srv25us-1000" "$CMODE" "$SRV25" --num-prompts "$c" --max-concurrency "$c" --random-output-len "$tokens"
run_case "srv25us-spin" "$CMODE" "$SRV25" --num-prompts "$c" --max-concurrency "$c" --random-output-len "$tokens" --spin-us 50
run_case "srv25us-busy" "$CMODE" "$SRV25" --num-prompts "$c" --max-concurrency "$c" --random-output-len "$tokens" --busy-poll
# Marginal CPU per frame: streams-1000 again with 4x the tokens; the slope leaves out per-request
# costs (connection, request, record) that a per-frame average carries.
run_case "frames-1000" off "--step-ms $step --prefill-token-us 0 --decode-token-us 0 --max-batch $((c + 16)) --max-batch-tokens 1000000" \
	--num-prompts "$c" --max-concurrency "$c" --random-output-len $((4 * tokens))
# Schedule lag at 1,000 req/s with the loop spinning.
run_case "rate-1000-bp" off "--step-ms 5 --prefill-token-us 0 --decode-token-us 0 --max-batch 4096 --max-batch-tokens 1000000" \
	--num-prompts 2000 --request-rate 1000 --random-output-len 4 --busy-poll
# Streams held by one latscope (probes off: the point is holding them).
run_case "hold-$HOLD" off "--step-ms 200 --prefill-token-us 0 --decode-token-us 0 --max-batch $((HOLD + 16)) --max-batch-tokens 10000000" \
	--num-prompts "$HOLD" --max-concurrency "$HOLD" --random-output-len 8

HDR1=$(printf '%-12s %-3s %6s %5s %7s %6s | %-24s | %-24s | %-34s | %-13s | %5s' case prb peak ok frames failed \
	"client delay us (kernel)" "schedule lag us" "harness CPU (us/frm = user + kern)" "simulator" wall)
HDR2=$(printf '%-12s %-3s %6s %5s %7s %6s | %7s %7s %8s | %7s %7s %8s | %8s %6s %5s %5s %6s | %6s %6s | %5s' "" "" "" "" "" "" \
	p50 p99 max p50 p99 max us/req us/frm user kern KiB/st held us/frm s)
{
	echo
	echo "latscope harness cost against latscope sim on loopback ($(nproc) cores, $PINNED; kernel $(uname -r))"
	echo "$HDR1"
	echo "$HDR2"
	printf '%s\n' "${ROWS[@]}"
	echo "streams-C: C streams at once (step 10/40/100 ms: 10k/25k/50k frames/s); rate-R: R req/s Poisson, free slots;"
	echo "peak: most requests in flight (harness); held: most the simulator held; KiB/st: peak RSS growth / peak;"
	echo "us/frm (simulator): its CPU (schedstat) per frame; '-': needs the probes (root + BTF)."
	echo "srv25us-*: streams-1000 from a server spending 25 us per frame written (sim --api-frame-us 25),"
	echo "the loop sleeping / --spin-us 50 / --busy-poll (their CPU includes the spinning); frames-1000:"
	echo "streams-1000 with 4x the tokens (marginal CPU per frame below); rate-1000-bp: rate-1000, --busy-poll."
	echo "targets: client delay p50 <= 20 us, p99 <= 200 us at 1,000 streams; schedule lag p99 <= 100 us at"
	echo "1,000 req/s; harness <= 5 us per frame, probes <= 1 us per event; <= 64 KiB per stream; 10,000 streams"
	echo "held without error; the simulator holds 5,000 streams on one core."
	# What the probes add per event: CPU per frame on minus off, over events per frame.
	for n in "${NAMES[@]}"; do
		[ -n "${UFR[$n:on]:-}" ] || continue
		awk -v n="$n" -v h0="${UFR[$n:off]}" -v h1="${UFR[$n:on]}" -v s0="${SFR[$n:off]}" -v s1="${SFR[$n:on]}" \
			-v e="${EVF[$n:on]}" 'BEGIN { if (e > 0 && h0 != "-" && h1 != "-")
			printf "probes %-12s %.2f events/frame: harness %+.2f us/event, simulator %+.2f us/event\n", n, e,
				(h1 - h0) / e, (s1 - s0) / e }'
	done
	echo
	echo "where the targets stand (this run):"
	stand_delay "streams-1000:$CMODE" "client delay, 1,000 streams, simulator's bursts (~10 us/frame)"
	stand_delay "srv25us-1000:$CMODE" "client delay, 1,000 streams, server 25 us/frame"
	stand_delay "srv25us-spin:$CMODE" "client delay, 1,000 streams, server 25 us/frame, --spin-us 50"
	stand_delay "srv25us-busy:$CMODE" "client delay, 1,000 streams, server 25 us/frame, --busy-poll"
	for n in rate-1000:off rate-1000:on rate-1000-bp:off; do
		[ -n "${V[$n:lag99]:-}" ] || continue
		printf '  %-62s p99 %s us (<= 100): %s\n' "schedule lag, 1,000 req/s ($n)" "${V[$n:lag99]}" \
			"$(verdict "${V[$n:lag99]}" 100)"
	done
	marginal_cpu streams-1000:off frames-1000:off
	kib=$(printf '%s\n' "${V[streams-1000:off:kib]:-}" "${V[streams-5000:off:kib]:-}" "${V[hold-$HOLD:off:kib]:-}" |
		awk '$1 != "" && $1 != "-" && $1 + 0 > m { m = $1 + 0 } END { print m + 0 }')
	printf '  %-62s %s KiB (<= 64): %s\n' "resident memory per stream in flight (most of 1k/5k/hold)" "$kib" "$(verdict "$kib" 64)"
	h="hold-$HOLD:off"
	printf '  %-62s %s ok, %s failed: %s\n' "$HOLD streams held by one latscope" "${V[$h:ok]:-0}" "${V[$h:failed]:-?}" \
		"$([ "${V[$h:ok]:-0}" = "$HOLD" ] && [ "${V[$h:failed]:-}" = 0 ] && echo met || echo missed)"
	h="streams-5000:off"
	if [ -n "${V[$h:held]:-}" ]; then
		printf '  %-62s %s held: %s\n' "simulator, 5,000 streams on one core ($PINNED)" "${V[$h:held]}" \
			"$([ "${V[$h:held]}" -ge 5000 ] 2>/dev/null && echo met || echo missed)"
	else
		printf '  %-62s not run (LATSCOPE_PERF_QUICK=1)\n' "simulator, 5,000 streams on one core"
	fi
} | tee "$OUT/table.txt"

# The three-client table (issue 17): latscope against the floor and a Python client.
rm -f "$OUT/anchors.jsonl" "$OUT/anchors_cmp.json"
if [ "${LATSCOPE_PERF_SKIP_ANCHORS:-0}" != 1 ]; then
	PIN_SIM=$PIN_SIM PIN_BENCH=$PIN_BENCH LATSCOPE_PERF_DIR=$OUT tests/perf/anchors.sh | tee "$OUT/anchors.txt"
fi

COST=""
if [ "${LATSCOPE_PERF_SKIP_COST:-0}" != 1 ]; then
	echo
	echo "tests/perf/probes_cost.sh (probes' cost on both sides, fresh connections):"
	if [ "$QUICK" = 1 ]; then n=150 r=1; else n=300 r=2; fi
	COST=$(tests/perf/probes_cost.sh "$n" 32 "$r" 2>&1)
	echo "$COST"
fi

{
	printf '{"machine":{"cores":%s,"kernel":"%s","pinned":"%s"},"probes_modes":"%s","cases":[' \
		"$(nproc)" "$(uname -r)" "$PINNED" "$MODES"
	(IFS=,; printf '%s' "${JSON[*]}")
	printf '],"probes_per_event":['
	# "probes NAME E events/frame: harness H us/event, simulator S us/event" as numbers.
	grep '^probes ' "$OUT/table.txt" | awk '{ gsub(/[+,]/, "", $0)
		printf "%s{\"case\":\"%s\",\"events_per_frame\":%s,\"harness_us_per_event\":%s,\"simulator_us_per_event\":%s}",
			(NR > 1 ? "," : ""), $2, $3, $6, $9 }'
	printf '],"anchors":['
	# The three-client table (tests/perf/anchors.sh): one object per case and client.
	[ -s "$OUT/anchors.jsonl" ] && paste -sd, "$OUT/anchors.jsonl" | tr -d '\n'
	printf '],"anchors_compared":%s' "$( [ -s "$OUT/anchors_cmp.json" ] && tr -d '\n' <"$OUT/anchors_cmp.json" || echo null)"
	printf ',"probes_cost":['
	first=1
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		line=${line//\\/\\\\}; line=${line//\"/\\\"}
		[ $first = 1 ] || printf ','
		printf '"%s"' "$line"; first=0
	done <<<"$COST"
	printf '],"elapsed_s":%s}\n' $(($(date +%s) - T0))
} >"$OUT/results.json"
# `latscope watch` on a Python client: its reported numbers with and without watch (C=64).
if [ "${LATSCOPE_PERF_SKIP_WATCH:-0}" != 1 ]; then
	echo
	echo "tests/perf/watch_cost.sh (a watched Python client, C=64):"
	ROUNDS=$([ "$QUICK" = 1 ] && echo 1 || echo 2) tests/perf/watch_cost.sh 64 2>&1 | tee "$OUT/watch_cost.txt"
fi
echo
echo "results: $OUT/results.json, table: $OUT/table.txt, per-case reports: $OUT/*.out ($(($(date +%s) - T0)) s)"
