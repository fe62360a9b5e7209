#!/usr/bin/env bash
# engines/watch_clients: `latscope watch --server-pid` around two clients latscope did not write,
# Debian's curl on llama-server's native /completion and tests/clients/aiohttp_client.py (the way
# vLLM's client is written) on /v1/completions, checked against the engine's own timings: the
# kernel-level TTFT and the server part of it at least the engine's prompt_ms, the stream after
# the first token as long as the engine's predicted_ms, the requests as many as the engine and
# the client say. Catches a response head taken for
# the first token (llama-server writes its head ~3 ms in, its first token after the prompt step).
. "$(dirname "$0")/engine_lib.bash"
need_engine
[ "$(id -u)" -eq 0 ] || skip "not root: latscope watch needs root for the eBPF probes"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF (/sys/kernel/btf/vmlinux): the probes cannot load"
"$PY" -c 'import aiohttp' 2>/dev/null || skip "no $PY with aiohttp (Debian python3-aiohttp)"
# Each client is watched up to 3 times, on a fresh server each time: on a machine whose other
# work starves the engine's HTTP thread (seen at load 17 on 2 cores) frames are written late
# and together, and a single request's stream stops looking like one.
attempt() { # name: 0 when a watch of that client agrees with the engine
	start_server 4
	"run_$1" && "$PY" "$ROOT/tests/engines/watch_check.py" "$1" "$TMP"
	local rc=$?
	stop_server
	return $rc
}
# A long prompt (~290 tokens, a ~75 ms step): with one request there is no head size to go by,
# and a head delayed on a loaded machine (7 ms seen) can sit a short step's time before the first
# token; a long step keeps them apart. (The short-step case is the unit test's:
# watch/head_told_by_a_first_gap_that_stands_out; the batched one is run_py's.)
run_curl() {
	local words body
	words=$(printf 'tell me about the river and the sea %.0s' $(seq 12))
	body="{\"prompt\":\"$words\",\"n_predict\":12,\"stream\":true}"
	timeout 60 "$BIN" watch --server-pid "$SRV" --record "$TMP/curl.jsonl" --output "$TMP/curl.txt" -- \
		curl -sN "$URL/completion" -d "$body" >"$TMP/curl.out" 2>"$TMP/curl.err" ||
		fail "watch around curl exited $?: $(tail -3 "$TMP/curl.err")"
	grep -q '"stop":true' "$TMP/curl.out" || fail "curl's stream has no stop frame"
}
# 16 requests, 4 at a time, one prompt (the engine caches it: a prompt step of one token, batched
# with the others' decoding): most first tokens come one batch step after their head, or within
# watch's 2 ms preamble, which timing alone cannot tell; the size of the heads it did find can.
# A connection per request: llama-server closes a connection after a streamed response, and a
# client that reuses it before the close arrives loses the request (docs/engine.md).
run_py() {
	timeout 90 "$BIN" watch --server-pid "$SRV" --record "$TMP/py.jsonl" --output "$TMP/py.txt" \
		--harness-result "$TMP/py_res.json" -- "$PY" "$ROOT/tests/clients/aiohttp_client.py" \
		--base-url "$URL" --model m --num-prompts 16 --max-concurrency 4 --seed 3 \
		--input-words 20 --output-len 16 --ignore-eos --force-close --save-result "$TMP/py_res.json" \
		>"$TMP/py.out" 2>"$TMP/py.err" || fail "watch around the aiohttp client exited $?: $(tail -3 "$TMP/py.err")"
	sed -n '/Kernel-level/,/unattributed/p' "$TMP/py.txt"
}
for client in curl py; do
	for try in 1 2 3; do
		attempt "$client" && continue 2
		echo "($client: try $try of 3 missed)"
	done
	fail "watch of $client disagrees with the engine 3 times (above)"
done
