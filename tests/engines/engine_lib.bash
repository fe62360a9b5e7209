# engine_lib.bash — what the tests/engines/*.sh tests share (sourced; not a test itself). Each
# test starts llama.cpp's llama-server (scripts/engine.sh builds it; docs/engine.md) on loopback
# with a seeded random model (scripts/gguf_random.py), runs latscope against it, and checks
# latscope's figures against what the engine says about itself: the `timings` of each request
# (its log's print_timing lines), the /metrics counters, usage. Exit 0 pass, 77 skip with the
# reason on the last line, anything else fails.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
PY=/usr/bin/python3 # Debian's, with python3-numpy (a pyenv python3 on PATH may lack it)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/latscope-engine.XXXXXX") || exit 1
SRV=0
# A failed test keeps its files (the engine's log, latscope's records) and says where.
cleanup() {
	local rc=$?
	stop_server
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || [ -n "${KEEP_TMP:-}" ]; then
		echo "(its files: $TMP)"
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

skip() { echo "$*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# The model every test serves: small enough to load in 0.1 s and decode a token in ~1 ms on one
# thread, deep enough that a prompt step takes measurable time (MODEL_ARGS key its cache).
MODEL_ARGS=(--vocab 512 --embd 256 --layers 8 --ff 512 --heads 4 --seed 1)

# Sets ENGINE (llama-server) and MODEL (the GGUF, written once into the engine cache).
need_engine() {
	[ -x "$BIN" ] || fail "$BIN not built (make)"
	ENGINE=$("$ROOT/scripts/engine.sh" --path) ||
		skip "llama-server is not built: run 'make engine' (scripts/engine.sh: ~17 min once per machine)"
	"$PY" -c 'import numpy, yaml' 2>/dev/null || skip "no python3-numpy / python3-yaml for the model writer (make deps)"
	local src=${ENGINE%/build/bin/llama-server} key
	key=$(echo "${MODEL_ARGS[*]}" | tr -d ' -')
	local dir=${LATSCOPE_ENGINE_CACHE:-/var/cache/latscope/engine}/models
	MODEL=$dir/random-$key.gguf
	[ -s "$MODEL" ] && return 0
	mkdir -p "$dir" || fail "cannot make $dir"
	"$PY" "$ROOT/scripts/gguf_random.py" --gguf-py "$src/gguf-py" "$MODEL.tmp.$$" "${MODEL_ARGS[@]}" ||
		fail "scripts/gguf_random.py could not write the model"
	mv "$MODEL.tmp.$$" "$MODEL"
}

# start_server SLOTS [llama-server args...]: on 127.0.0.1, a random free port (5 tries), one
# thread; sets PORT, SRV (pid), URL; its log (with one print_timing block per request) is
# $TMP/server.log. Waits (at most 20 s) for /health to say ok.
start_server() {
	local slots=$1 try i
	shift
	for try in 1 2 3 4 5; do
		PORT=$((20000 + RANDOM % 30000))
		URL=http://127.0.0.1:$PORT
		"$ENGINE" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -np "$slots" -c $((slots * 1024)) \
			--metrics -t 1 --no-webui "$@" >"$TMP/server.log" 2>&1 &
		SRV=$!
		for i in $(seq 200); do
			curl -sf -m 1 "$URL/health" 2>/dev/null | grep -q '"ok"' && return 0
			kill -0 "$SRV" 2>/dev/null || break
			sleep 0.1
		done
		stop_server
	done
	fail "llama-server did not start: $(tail -3 "$TMP/server.log")"
}
stop_server() {
	[ "${SRV:-0}" -gt 0 ] && { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
	SRV=0
}

# scrape NAME: /metrics as JSON ({"prompt_tokens_total": n, ...}) into $TMP/NAME.json.
scrape() {
	curl -sf -m 5 "$URL/metrics" >"$TMP/$1.prom" || fail "GET /metrics failed"
	awk '/^llamacpp:/ { sub(/^llamacpp:/, ""); printf "%s\"%s\": %s", n++ ? ", " : "{", $1, $2 } END { print "}" }' \
		"$TMP/$1.prom" >"$TMP/$1.json"
}

# bench NAME args...: latscope bench against the server, every stamp into $TMP/NAME.jsonl and
# the result JSON into $TMP/NAME.json; /metrics scraped before and after. No initial test request
# and no warmups: the engine's counters then hold exactly the measured requests.
bench() {
	local name=$1
	shift
	scrape "$name.before"
	timeout -k 5 120 "$BIN" bench --base-url "$URL" --skip-initial-test --num-warmups 0 \
		--record "$TMP/$name.jsonl" --save-result --result-dir "$TMP" --result-filename "$name.json" \
		--ready-check-timeout-sec 10 "$@" >"$TMP/$name.out" 2>&1 ||
		{ tail -20 "$TMP/$name.out"; fail "latscope bench $name failed"; }
	scrape "$name.after"
}

# check NAME: tests/engines/engine_check.py on that run (its checks print; exit 1 on a miss).
check() {
	"$PY" "$ROOT/tests/engines/engine_check.py" "$TMP" "$@" || fail "the engine's own figures disagree with latscope's (above)"
}
