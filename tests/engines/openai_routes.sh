#!/usr/bin/env bash
# engines/openai_routes: latscope bench over llama-server's OpenAI routes (/v1/completions and
# /v1/chat/completions), each run checked against the engine's own figures (engine_check.py).
. "$(dirname "$0")/engine_lib.bash"
need_engine
for backend in openai openai-chat; do
	start_server 4
	bench "$backend" --backend "$backend" --dataset-name random --random-input-len 32 \
		--random-output-len 16 --num-prompts 24 --max-concurrency 4 --ignore-eos --connection per-request
	echo "== $backend: $(grep -m1 'Median TTFT' "$TMP/$backend.out")"
	check "$backend" --slots 4 --concurrency 4 --output-len 16
	stop_server
done
