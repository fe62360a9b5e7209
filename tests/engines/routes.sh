#!/usr/bin/env bash
# engines/routes: latscope bench over llama-server's three routes (OpenAI /v1/completions and
# /v1/chat/completions, its native /completion), each run checked against the engine's own
# figures (engine_check.py). Per-request connections: llama-server closes a connection after a
# streamed response, and a keep-alive pool that reuses one before the close arrives loses that
# request (reset_before_headers, docs/engine.md).
. "$(dirname "$0")/engine_lib.bash"
need_engine
for backend in openai openai-chat llama.cpp-native; do
	start_server 4
	bench "$backend" --backend "$backend" --dataset-name random --random-input-len 32 \
		--random-output-len 16 --num-prompts 24 --max-concurrency 4 --ignore-eos --connection per-request
	echo "== $backend: $(grep -m1 'Median TTFT' "$TMP/$backend.out")"
	check "$backend" --slots 4 --concurrency 4 --output-len 16 --input-len 32
	stop_server
done
# The vllm profile's keep-alive pool: llama-server closes each connection after its stream, so a
# request sent on one before that close arrives is lost. latscope must say so (a reset before
# headers on a reused connection, never retried: the engine serves exactly the rest) and count
# every token of the rest.
start_server 4
bench pool --backend openai --dataset-name random --random-input-len 32 --random-output-len 16 \
	--num-prompts 24 --max-concurrency 8 --ignore-eos
echo "== keep-alive pool: $(grep -m1 'Failed requests' "$TMP/pool.out")"
check pool --slots 4 --output-len 16 --input-len 32 --reused-resets
stop_server
