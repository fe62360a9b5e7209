#!/usr/bin/env bash
# tests/integration/html_report.sh — the --html page in a real browser (Debian's chromium, headless):
#  1. a 10,000-request bench run (probes on as root, the simulator watched): the page stays under
#     1 MiB, makes no network reference, every number in its tables equals the --save-result JSON
#     of the same run at the place the check finds it (row, column, words: not the page's own
#     data-key), the attribution tables and bars equal the attribution file's parts, the
#     per-second charts equal one-second buckets of the records' frames, every chart is drawn (data-rendered = data-charts), the console has no
#     error, and a screenshot shows pixels in every chart region;
#  2. a run with failures (the simulator's faults) and --probes off: the failures table, and the
#     attribution section says why it is not drawn;
#  3. `latscope report --html` from run 1's records (its attribution file read back) and from run
#     2's (none beside them: the page says so); 4. a `latscope compare --html` page;
#  5. a missing Chart.js is one clear error naming the package, before anything runs.
# The top 1400 rows of the demo run's screenshot (make demo's workload) are kept as
# build/html-report.png: the README's docs/html-report.png is one of these.
# Skips (77) without chromium or python3.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
CHECK="python3 $ROOT/tests/integration/html_check.py"
# HTML_QUICK=1: the demo run's page checked against its JSON and records only, no browser (~10 s:
# scripts/mutants.py runs it per mutant).
[ -n "${HTML_QUICK:-}" ] || command -v chromium >/dev/null || { echo "skip: chromium is not installed (make deps installs it)"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 is not installed"; exit 77; }
[ -x "$BIN" ] || { echo "skip: $BIN is not built"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-html.XXXXXX") || exit 1
export HOME=$tmp # chromium writes its profile and crash dumps under HOME
sim_pid='' port=''
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_sim() { # args... (sets port and sim_pid)
	port=$(free_port)
	"$BIN" sim --port "$port" --quiet "$@" >/dev/null 2>"$tmp/sim.log" &
	sim_pid=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "the simulator did not start: $(cat "$tmp/sim.log")" >&2
	return 1
}
stop_sim() { kill "$sim_pid" 2>/dev/null; wait "$sim_pid" 2>/dev/null; sim_pid=''; }

# One headless chromium run in a session of its own, killed whole after it (bounded).
browse() { # page out-prefix window-height chromium-args...
	local page=$1 out=$2 height=$3 pid rc
	shift 3
	setsid timeout -k 5 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$(mktemp -d "$tmp/ud.XXXXXX")" \
		--window-size=1280,"$height" --force-device-scale-factor=1 --hide-scrollbars --virtual-time-budget=15000 \
		--enable-logging=stderr --v=0 "$@" "file://$page" >"$out.out" 2>"$out.log" &
	pid=$!
	wait "$pid"
	rc=$?
	kill -- -"$pid" 2>/dev/null
	return $rc
}

# Every check a page gets in the browser: scripts ran, every chart drawn, no console error,
# every chart region of a full-page screenshot has pixels. One chromium run dumps the DOM and takes
# the screenshot, in a window taller than the pages (their layout does not depend on the window's
# height: the charts' places are the same at 1600 and 5000 rows); a page whose charts reach past
# it gets a second screenshot at the page's height (data-height, its scrollHeight).
SHOT_HEIGHT=5000
in_browser() { # name page
	local name=$1 page=$2 geo height rects bottom
	browse "$page" "$tmp/$name-dom" "$SHOT_HEIGHT" --dump-dom --screenshot="$tmp/$name.png" ||
		{ bad "$name: chromium --dump-dom --screenshot failed: $(tail -3 "$tmp/$name-dom.log")"; return; }
	if grep -E 'CONSOLE.*(Uncaught|Error|error)' "$tmp/$name-dom.log"; then
		bad "$name: the browser console has errors"
	fi
	geo=$($CHECK dom "$tmp/$name-dom.out") || { bad "$name: $geo"; return; }
	height=${geo%% *}
	rects=${geo#* }
	[ -s "$tmp/$name.png" ] || { bad "$name: no screenshot"; return; }
	bottom=$(tr -d '[]' <<<"$rects" | tr ',' '\n' | awk 'NR % 4 == 2 { y = $1 } NR % 4 == 0 && y + $1 > m { m = y + $1 } END { print m + 0 }')
	if [ "$bottom" -gt $((SHOT_HEIGHT - 400)) ]; then
		height=$((height + 400))
		[ "$height" -gt 12000 ] && height=12000
		browse "$page" "$tmp/$name-shot" "$height" --screenshot="$tmp/$name.png" || { bad "$name: no screenshot"; return; }
	fi
	$CHECK pixels "$tmp/$name.png" "$rects" || bad "$name: blank chart regions"
	echo "ok: $name: $(grep -o 'data-charts="[0-9]*"' "$page") drawn, no console error"
}

# 5. Chart.js missing: one message naming the package, exit non-zero, no page.
out=$(LATSCOPE_CHARTJS=$tmp/none.js "$BIN" report /dev/null --html "$tmp/x.html" 2>&1)
if [ $? -ne 0 ] && [[ $out == *libjs-chart.js* ]] && [ ! -e "$tmp/x.html" ]; then
	echo "ok: a missing Chart.js says: $out"
else
	bad "a missing Chart.js: $out"
fi

# 0. make demo's run (100 requests at 20 req/s): its page's top is the README's picture.
start_sim --step-ms 10 --max-batch 64 || exit 1
"$BIN" bench --base-url "http://127.0.0.1:$port" --backend openai --model sim --random-input-len 128 \
	--random-output-len 64 --num-prompts 100 --request-rate 20 --max-concurrency 32 --seed 1 --disable-tqdm \
	--server-pid "$sim_pid" --save-result --result-filename "$tmp/demo.json" --html "$tmp/demo.html" \
	--record "$tmp/demo.jsonl" \
	>"$tmp/demo.txt" 2>&1 || bad "the demo run: exit $?: $(tail -3 "$tmp/demo.txt")"
stop_sim
$CHECK static "$tmp/demo.html" "$tmp/demo.json" "$tmp/demo.jsonl" || bad "demo: the page's numbers or references"
grep -q '<footer>Charts drawn by Chart.js v3.*MIT License' "$tmp/demo.html" || bad "demo: no Chart.js license note"
if [ -n "${HTML_QUICK:-}" ]; then
	echo "$failures failed (HTML_QUICK: the demo page's numbers only)"
	[ "$failures" -eq 0 ]
	exit
fi
in_browser demo "$tmp/demo.html"
mkdir -p "$ROOT/build"
$CHECK crop "$tmp/demo.png" 1400 "$ROOT/build/html-report.png" || bad "the top screenshot"

# 1. 10,000 requests, probes on when they can be.
start_sim --step-ms 1 --max-batch 128 --accept-len 2 || exit 1
"$BIN" bench --base-url "http://127.0.0.1:$port" --model sim --random-input-len 16 --random-output-len 8 \
	--num-prompts 10000 --request-rate inf --max-concurrency 64 --seed 3 --disable-tqdm --server-pid "$sim_pid" \
	--record "$tmp/big.jsonl" --save-result --result-filename "$tmp/big.json" --html "$tmp/big.html" \
	>"$tmp/big.txt" 2>&1 || bad "the 10,000-request run: exit $?: $(tail -3 "$tmp/big.txt")"
stop_sim
size=$(stat -c %s "$tmp/big.html" 2>/dev/null || echo 0)
echo "the 10,000-request page: $size bytes"
[ "$size" -gt 0 ] && [ "$size" -lt 1048576 ] || bad "the 10,000-request page is $size bytes (want < 1 MiB)"
$CHECK static "$tmp/big.html" "$tmp/big.json" "$tmp/big.jsonl" || bad "big: the page's numbers or references"
grep -q 'Each request, phase by phase' "$tmp/big.html" && grep -q '2000 of 10000 requests' "$tmp/big.html" ||
	bad "big: the timeline does not say it is a sample of 2000"
in_browser big "$tmp/big.html"

# 2. failures, no probes.
start_sim --step-ms 2 --max-batch 64 --fail-rate 0.25 --fail-kind http500,reset-mid-stream || exit 1
"$BIN" bench --base-url "http://127.0.0.1:$port" --model sim --random-input-len 32 --random-output-len 16 \
	--num-prompts 200 --request-rate 200 --seed 4 --disable-tqdm --probes off --skip-initial-test \
	--record "$tmp/fail.jsonl" --save-result --result-filename "$tmp/fail.json" --html "$tmp/fail.html" \
	>"$tmp/fail.txt" 2>&1 || bad "the run with failures: exit $?: $(tail -3 "$tmp/fail.txt")"
$CHECK static "$tmp/fail.html" "$tmp/fail.json" "$tmp/fail.jsonl" || bad "fail: the page's numbers or references"
grep -q 'data-key="latscope/failures/http_status"' "$tmp/fail.html" || bad "fail: no failures table row for http_status"
grep -q 'Not drawn: no kernel stamps split the latency.*--probes off' "$tmp/fail.html" ||
	bad "fail: the attribution section does not say why it is missing"
in_browser fail "$tmp/fail.html"

# 4. compare.
"$BIN" compare --profiles vllm,sglang,honest --base-url "http://127.0.0.1:$port" --model sim --num-prompts 60 \
	--request-rate 100 --random-input-len 32 --random-output-len 16 --skip-initial-test --probes off \
	--html "$tmp/cmp.html" >"$tmp/cmp.txt" 2>&1 || bad "compare: exit $?: $(tail -3 "$tmp/cmp.txt")"
stop_sim
$CHECK static "$tmp/cmp.html" || bad "cmp: network references"
grep -q '<th>sglang</th>' "$tmp/cmp.html" || bad "cmp: no column per profile"
in_browser cmp "$tmp/cmp.html"

# 3. report --html from the records, with and without an attribution file beside them.
"$BIN" report "$tmp/big.jsonl" --html "$tmp/rep.html" --save-result "$tmp/rep.json" >"$tmp/rep.txt" 2>&1 ||
	bad "report big: exit $?: $(tail -3 "$tmp/rep.txt")"
$CHECK static "$tmp/rep.html" "$tmp/rep.json" "$tmp/big.jsonl" || bad "rep: the page's numbers or references"
if [ -f "$tmp/big.attribution.jsonl" ]; then
	grep -q 'TTFT P99 (' "$tmp/rep.html" || bad "rep: the attribution file was not drawn"
fi
in_browser rep "$tmp/rep.html"
"$BIN" report "$tmp/fail.jsonl" --html "$tmp/rep2.html" >"$tmp/rep2.txt" 2>&1 || bad "report fail: exit $?"
grep -q 'no attribution file' "$tmp/rep2.html" || bad "rep2: the page does not say the attribution file is missing"
in_browser rep2 "$tmp/rep2.html"

echo "$failures failed"
[ "$failures" -eq 0 ]
