#!/usr/bin/env bash
# make demo: start the simulator on loopback, run a short benchmark against it (with probes
# on both sides when root and BTF allow), print the report, write its HTML page to
# build/demo/report.html (and print where), stop the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/latscope
port=${DEMO_PORT:-18000}
# the first free port from 18000 on, so a busy port does not fail the demo
while ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; do port=$((port + 1)); done
truth=$(mktemp /tmp/latscope-demo-truth.XXXXXX)
simlog=/tmp/latscope-demo-sim.log
"$bin" sim --port "$port" --step-ms 10 --max-batch 64 --truth "$truth" 2>"$simlog" &
sim=$!
trap 'kill $sim 2>/dev/null; wait $sim 2>/dev/null; rm -f "$truth"' EXIT
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
	kill -0 "$sim" 2>/dev/null || { echo "latscope demo: the simulator did not start:" >&2; cat "$simlog" >&2; exit 1; }
	sleep 0.1
done
echo "latscope demo: simulator on 127.0.0.1:$port (10 ms steps); 100 requests at 20 req/s"
mkdir -p build/demo
html=build/demo/report.html
"$bin" bench --base-url "http://127.0.0.1:$port" --backend openai --model sim \
	--dataset-name random --random-input-len 128 --random-output-len 64 \
	--num-prompts 100 --request-rate 20 --max-concurrency 32 --seed 1 --disable-tqdm \
	--server-pid "$sim" --html "$html"
echo "latscope demo: the HTML report is $PWD/$html (one file: open it in a browser, offline)"
