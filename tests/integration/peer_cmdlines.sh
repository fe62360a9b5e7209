#!/usr/bin/env bash
# tests/integration/peer_cmdlines.sh — the peers' own documented command lines run as they are:
# each line below is copied from vLLM's docs (docs/benchmarking/cli.md, docs/contributing/
# profiling.md) or SGLang's (docs/developer_guide/bench_serving.md, the usage lines of
# python/sglang/bench_serving.py), everything after `vllm bench serve` or
# `python3 -m sglang.bench_serving`; only their placeholders (<your data path>, ...) are filled
# in with a small local ShareGPT / JSONL file. Each runs as `latscope bench ARGS` (vLLM) or
# `latscope bench --harness sglang ARGS` (SGLang) against `latscope sim` on the port the line
# names or the peer's default (8000, 30000), in a private network namespace, and must exit 0 and
# write the peer's output file in the peer's format: vLLM's result JSON (its keys, its file
# name), SGLang's JSONL line (its keys; the per-request lists with --output-details).
# LATSCOPE_PEER_CASES='REGEX' runs the cases whose whole name matches it. Needs root for the namespace (the lines use fixed ports); else exit 77.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
CASE_TIMEOUT_S=120

# name | harness | the peer's arguments (placeholders as the docs write them)
CASES=(
	"vllm-cli-online|vllm|--backend vllm --model NousResearch/Hermes-3-Llama-3.1-8B --endpoint /v1/completions --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 10"
	"vllm-cli-timeline|vllm|--backend vllm --model meta-llama/Llama-3.1-8B-Instruct --endpoint /v1/completions --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 100 --plot-timeline --timeline-itl-thresholds 2,5 --plot-dataset-stats --save-result"
	"vllm-cli-custom|vllm|--port 9001 --save-result --save-detailed --backend vllm --model meta-llama/Llama-3.1-8B-Instruct --endpoint /v1/completions --dataset-name custom --dataset-path <path-to-your-data-jsonl> --skip-chat-template --num-prompts 80 --max-concurrency 1 --temperature=0.3 --top-p=0.75 --result-dir \"./log/\""
	"vllm-cli-sampling|vllm|--backend vllm --model NousResearch/Hermes-3-Llama-3.1-8B --endpoint /v1/completions --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --top-k 10 --top-p 0.9 --temperature 0.5 --num-prompts 10"
	"vllm-profiling|vllm|--backend vllm --model meta-llama/Llama-3.1-8B-Instruct --dataset-name sharegpt --dataset-path sharegpt.json --profile --num-prompts 2"
	"sglang-docstring|sglang|--backend sglang --num-prompt 10"
	"sglang-quickstart-native|sglang|--backend sglang --host 127.0.0.1 --port 30000 --num-prompts 1000 --model meta-llama/Llama-3.1-8B-Instruct"
	"sglang-quickstart-oai|sglang|--backend vllm --base-url http://127.0.0.1:8000 --num-prompts 1000 --model meta-llama/Llama-3.1-8B-Instruct"
	"sglang-e2e-native-random|sglang|--backend sglang --host 127.0.0.1 --port 30000 --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --random-input-len 1024 --random-output-len 1024 --random-range-ratio 0.5 --num-prompts 2000 --request-rate 100 --max-concurrency 512 --output-file sglang_random.jsonl --output-details"
	"sglang-e2e-oai-sharegpt|sglang|--backend vllm --base-url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct --dataset-name sharegpt --num-prompts 1000 --sharegpt-output-len 256"
	"sglang-e2e-chat|sglang|--backend vllm-chat --base-url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --num-prompts 500 --apply-chat-template"
	"sglang-e2e-tokenized|sglang|--backend sglang --host 127.0.0.1 --port 30000 --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --tokenize-prompt --random-input-len 2048 --random-output-len 256 --random-range-ratio 0.2"
	"sglang-e2e-profile-flush|sglang|--backend sglang --host 127.0.0.1 --port 30000 --model meta-llama/Llama-3.1-8B-Instruct --profile --flush-cache"
	"vllm-cli-prefix-repetition|vllm|--backend openai --model meta-llama/Llama-2-7b-chat-hf --dataset-name prefix_repetition --num-prompts 100 --prefix-repetition-prefix-len 512 --prefix-repetition-suffix-len 128 --prefix-repetition-num-prefixes 5 --prefix-repetition-output-len 128"
	"sglang-gsp|sglang|--backend sglang --host 127.0.0.1 --port 30000 --model meta-llama/Llama-3.1-8B-Instruct --dataset-name generated-shared-prefix --gsp-num-groups 64 --gsp-prompts-per-group 16 --gsp-system-prompt-len 2048 --gsp-question-len 128 --gsp-output-len 256 --num-prompts 1024"
	"sglang-trt|sglang|--backend trt --base-url http://127.0.0.1:8000 --model your-trt-llm-model --dataset-name random --num-prompts 100 --disable-ignore-eos"
	# The newer lines (issue 33): vLLM's float rate in the file name, --metadata given twice, the older
	# names, --num-prompts -1, spec_bench; SGLang's LoRA distributions, --pd-separated, random cut to
	# tokens from a ShareGPT file.
	"vllm-rate-metadata|vllm|--backend vllm --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --random-input-len 32 --random-output-len 8 --request-rate 20 --num-prompts 40 --save-result --metadata gpu=h100 tp=1 --metadata version=0.11"
	"vllm-custom-all|vllm|--endpoint-type vllm --model meta-llama/Llama-3.1-8B-Instruct --dataset-name custom --dataset-path <path-to-your-data-jsonl> --custom-skip-chat-template --custom-output-len 8 --num-prompts -1 --save-result --result-filename all.json"
	"vllm-spec-bench|vllm|--backend vllm --model meta-llama/Llama-3.1-8B-Instruct --dataset-name spec_bench --dataset-path <spec bench questions> --spec-bench-category coding --spec-bench-output-len 8 --num-prompts -1 --save-result --result-filename spec.json"
	"sglang-lora-skewed|sglang|--backend sglang --port 30000 --dataset-name random --random-input-len 64 --random-output-len 8 --num-prompts 50 --lora-name a b c --lora-request-distribution skewed --lora-zipf-alpha 2 --output-file lora.jsonl"
	"sglang-pd-separated|sglang|--backend sglang --base-url http://127.0.0.1:30000 --dataset-name random --random-input-len 32 --random-output-len 8 --num-prompts 20 --pd-separated --profile"
	"sglang-pd-profile|sglang|--backend sglang --base-url http://127.0.0.1:30000 --dataset-name random --random-input-len 32 --random-output-len 8 --num-prompts 20 --pd-separated --profile --profile-prefill-url http://127.0.0.1:8000 --profile-decode-url http://127.0.0.1:9001"
	"sglang-random-path|sglang|--backend sglang --dataset-name random --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --random-input 128 --random-output 8 --random-range-ratio 1 --num-prompts 40 --output-file random128.jsonl --output-details"
	# Taken since: vLLM's probe requests beside the run, and its timed_trace replayed at the trace's
	# times (a Mooncake trace in ms, as the runners that script vLLM pass it).
	"vllm-probe-requests|vllm|--backend vllm --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --random-input-len 32 --random-output-len 64 --num-prompts 40 --max-concurrency 4 --probe-request-rate 10 --save-result --result-filename probe.json"
	"vllm-timed-trace|vllm|--backend openai --endpoint /v1/completions --model meta-llama/Llama-3.1-8B-Instruct --dataset-name timed_trace --dataset-path <mooncake trace> --num-prompts 4 --self-timed --timed-trace-chunk-hash-size 16 --timed-trace-sec-multiplier 0.001 --ignore-eos --disable-shuffle --temperature 0 --save-result --save-detailed --result-dir . --result-filename timed.json"
	"vllm-openai-responses|vllm|--backend openai-responses --endpoint /v1/responses --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --random-input-len 32 --random-output-len 8 --num-prompts 20 --save-result --result-filename responses.json"
	# SGLang's multi-turn generated-shared-prefix (its test_gsp_multi_turn, sizes as there).
	"sglang-gsp-multi-turn|sglang|--backend sglang-oai-chat --base-url http://127.0.0.1:30000 --dataset-name generated-shared-prefix --gsp-num-groups 2 --gsp-prompts-per-group 2 --gsp-system-prompt-len 64 --gsp-question-len 16 --gsp-output-len 16 --gsp-num-turns 3 --output-file turns.jsonl"
	"sglang-mooncake|sglang|--backend sglang --host 127.0.0.1 --port 30000 --model model-name --dataset-name mooncake-conversation --dataset-path <mooncake trace> --mooncake-slowdown-factor 1.0 --mooncake-num-rounds 1 --use-trace-timestamps true --random-output-len 256"
)

# The files each case must leave (a glob in its directory) and their format: vllm, vllm-detailed,
# sglang, sglang-details; "-" checks the report only.
expect() {
	local mmdd='[0-9][0-9][0-9][0-9]' # SGLang's %m%d (a glob: a run may cross midnight)
	case $1 in
	vllm-cli-online|vllm-cli-sampling) echo "- -" ;;
	vllm-cli-timeline) echo "vllm-infqps-Llama-3.1-8B-Instruct-*.json vllm-detailed" ;;
	vllm-cli-custom) echo "log/vllm-infqps-concurrency1-Llama-3.1-8B-Instruct-*.json vllm-detailed" ;;
	vllm-profiling) echo "- profiled" ;;
	sglang-docstring) echo "sglang_${mmdd}_10_sharegpt.jsonl sglang" ;;
	sglang-quickstart-native) echo "sglang_${mmdd}_1000_sharegpt.jsonl sglang" ;;
	sglang-quickstart-oai|sglang-e2e-oai-sharegpt) echo "vllm_${mmdd}_1000_sharegpt.jsonl sglang" ;;
	sglang-e2e-native-random) echo "sglang_random.jsonl sglang-details" ;;
	sglang-e2e-chat) echo "vllm-chat_${mmdd}_500_1024_1024.jsonl sglang" ;;
	sglang-e2e-tokenized) echo "sglang_${mmdd}_1000_2048_256.jsonl sglang" ;;
	sglang-e2e-profile-flush) echo "sglang_${mmdd}_1000_sharegpt.jsonl sglang-profiled" ;;
	vllm-cli-prefix-repetition) echo "- -" ;;
	sglang-gsp) echo "sglang_${mmdd}_1024_generated-shared-prefix.jsonl sglang" ;;
	sglang-trt) echo "trt_${mmdd}_100_1024_1024.jsonl sglang" ;;
	sglang-mooncake) echo "sglang_${mmdd}_*_mooncake-conversation.jsonl sglang" ;;
	vllm-rate-metadata) echo "vllm-20.0qps-Llama-3.1-8B-Instruct-*.json vllm-rate-metadata" ;;
	vllm-custom-all) echo "all.json vllm-completed100" ;;
	vllm-spec-bench) echo "spec.json vllm-completed4" ;;
	sglang-lora-skewed) echo "lora.jsonl sglang" ;;
	sglang-pd-separated) echo "sglang_${mmdd}_20_32_8.jsonl sglang-unprofiled" ;;
	sglang-pd-profile) echo "sglang_${mmdd}_20_32_8.jsonl sglang-pdprofiled" ;;
	sglang-random-path) echo "random128.jsonl sglang-details-input5120" ;;
	vllm-probe-requests) echo "probe.json vllm-probes" ;;
	vllm-timed-trace) echo "timed.json vllm-completed4" ;;
	sglang-gsp-multi-turn) echo "turns.jsonl sglang-completed12" ;;
	vllm-openai-responses) echo "responses.json vllm-completed20" ;;
	esac
}

# Checks one output file's keys (python3: the peers' readers are Python).
check_file() { # path format
	python3 - "$1" "$2" <<'PY'
import json, sys
path, fmt = sys.argv[1], sys.argv[2]
VLLM = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
        "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
        "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
        "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests", "mean_ttft_ms",
        "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms",
        "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms"]
VLLM_DETAILED = ["input_lens", "output_lens", "ttfts", "itls", "start_times", "generated_texts", "errors"]
SGLANG = ["tag", "backend", "dataset_name", "request_rate", "max_concurrency", "sharegpt_output_len",
          "random_input_len", "random_output_len", "random_range_ratio", "server_info", "duration", "completed",
          "total_input_tokens", "total_input_text_tokens", "total_input_vision_tokens", "total_output_tokens",
          "total_output_tokens_retokenized", "request_throughput", "input_throughput", "output_throughput",
          "total_throughput", "mean_e2e_latency_ms", "median_e2e_latency_ms", "std_e2e_latency_ms",
          "p90_e2e_latency_ms", "p95_e2e_latency_ms", "p99_e2e_latency_ms", "mean_ttft_ms", "median_ttft_ms",
          "std_ttft_ms", "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms",
          "std_tpot_ms", "p90_tpot_ms", "p95_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms",
          "std_itl_ms", "p90_itl_ms", "p95_itl_ms", "p99_itl_ms", "concurrency", "accept_length",
          "max_output_tokens_per_s", "max_concurrent_requests"]
SGLANG_DETAILS = ["input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"]
text = open(path).read()
if fmt == "vllm-rate-metadata":  # vLLM: f"{request_rate}qps", json.dump of floats, nargs store, no e2el
    import re
    o = json.loads(text)
    for key, want in (("request_rate", "20.0"), ("burstiness", "1.0")):
        m = re.search(r'"%s":\s*([^,\s}]+)' % key, text)
        if not m or m.group(1) != want:
            sys.exit(f"{path}: {key} written {m.group(1) if m else None}, vLLM writes {want}")
    if "gpu" in o or "tp" in o or o.get("version") != "0.11":
        sys.exit(f"{path}: --metadata twice keeps the last flag's pairs only (vLLM's nargs store)")
    if [k for k in o if "e2el" in k]:
        sys.exit(f"{path}: E2EL keys without --percentile-metrics (vLLM's default is ttft,tpot,itl)")
    fmt = "vllm"
if fmt == "vllm-probes":  # vLLM's probe_stats keys, probes sent while the run went on
    o = json.loads(text)
    keys = ["probe_completed", "probe_failed", "probe_median_e2el_ms", "probe_p99_e2el_ms", "probe_max_e2el_ms"]
    if [k for k in keys if k not in o] or o["probe_completed"] < 1 or o["completed"] != 40:
        sys.exit(f"{path}: probe keys {[k for k in keys if k in o]}, completed {o.get('completed')}")
    fmt = "vllm"
if fmt.startswith("sglang-completed"):  # multi-turn: every turn of every conversation
    n = int(fmt[len("sglang-completed"):])
    got = json.loads([l for l in text.split("\n") if l.strip()][-1])["completed"]
    if got != n:
        sys.exit(f"{path}: completed {got}, want {n}")
    fmt = "sglang"
if fmt.startswith("vllm-completed"):  # --num-prompts -1: every prompt of the file
    n = int(fmt[len("vllm-completed"):])
    if json.loads(text)["completed"] != n:
        sys.exit(f"{path}: completed {json.loads(text)['completed']}, the file has {n} prompts")
    fmt = "vllm"
if fmt.endswith("-input5120"):  # SGLang cuts each prompt to its 128 tokens: 40 x 128
    line = [l for l in text.split("\n") if l.strip()][-1]
    if json.loads(line)["total_input_tokens"] != 5120:
        sys.exit(f"{path}: total_input_tokens {json.loads(line)['total_input_tokens']}, SGLang sends 5120")
    fmt = fmt[:-len("-input5120")]
if fmt.startswith("vllm"):
    objs, want = [json.loads(text)], VLLM + (VLLM_DETAILED if fmt == "vllm-detailed" else [])
else:
    lines = [l for l in text.split("\n") if l.strip()]
    if len(lines) != 1:
        sys.exit(f"{path}: {len(lines)} JSONL lines, want 1 per run")
    objs = [json.loads(lines[0])]  # Python reads SGLang's Infinity too
    want = SGLANG + (SGLANG_DETAILS if fmt == "sglang-details" else [])
for o in objs:
    missing = [k for k in want if k not in o]
    if missing:
        sys.exit(f"{path}: missing {missing}")
    if not o["completed"]:
        sys.exit(f"{path}: completed 0")
    if "details" in fmt or fmt == "vllm-detailed":
        n = o["completed"] + o.get("failed", 0)
        if len(o["ttfts"]) != n or len(o["itls"]) != n:
            sys.exit(f"{path}: {len(o['ttfts'])} ttfts for {n} requests")
print(f"{path}: {fmt} keys ok, completed {objs[0]['completed']}")
PY
}

# A ShareGPT file of short conversations (answers of 4..40 words) and a JSONL of prompts.
make_data() { # dir
	python3 - "$1" <<'PY'
import json, random, sys
d = sys.argv[1]
rng = random.Random(7)
words = "the of serving latency token batch prefill decode cache stream request model engine queue".split()
def text(n): return " ".join(rng.choice(words) for _ in range(n))
conv = [{"id": str(i), "conversations": [{"from": "human", "value": text(rng.randint(8, 60))},
                                          {"from": "gpt", "value": text(rng.randint(4, 40))}]} for i in range(64)]
for name in ("ShareGPT_V3_unfiltered_cleaned_split.json", "sharegpt.json"):
    json.dump(conv, open(f"{d}/{name}", "w"))
with open(f"{d}/data.jsonl", "w") as f:
    for i in range(100):
        f.write(json.dumps({"prompt": "What is the capital of country number %d? %s" % (i, text(10))}) + "\n")
PY
}

run_case() { # name harness args
	local name=$1 harness=$2 args=$3 dir=$SCRATCH/$1 rc files fmt f
	mkdir -p "$dir"
	args=${args//<your data path>/$SCRATCH}
	args=${args//<path-to-your-data-jsonl>/$SCRATCH/data.jsonl}
	args=${args//<mooncake trace>/$ROOT/tests/fixtures/peer/mooncake.jsonl}
	args=${args//<spec bench questions>/$ROOT/tests/fixtures/peer/spec_bench.jsonl}
	[ "$name" = vllm-profiling ] && cp "$SCRATCH/sharegpt.json" "$dir/"
	local start=$SECONDS
	(
		cd "$dir" || exit 1
		eval "set -- $args"
		if [ "$harness" = sglang ]; then
			exec timeout -k 5 $CASE_TIMEOUT_S "$BIN" bench --harness sglang "$@"
		else
			exec timeout -k 5 $CASE_TIMEOUT_S "$BIN" bench "$@"
		fi
	) >"$dir/out.log" 2>&1
	rc=$?
	read -r files fmt < <(expect "$name")
	if [ $rc -ne 0 ]; then
		echo "FAIL  $name: exit $rc ($((SECONDS - start)) s)"
		tail -8 "$dir/out.log" | sed 's/^/      | /'
		return 1
	fi
	if ! grep -q "Serving Benchmark Result" "$dir/out.log"; then
		echo "FAIL  $name: no result block"
		return 1
	fi
	case $fmt in *pdprofiled) # SGLang's _call_profile_pd: each worker, by kind and index
		for want in "Profiler started for Prefill-0 worker at http://127.0.0.1:8000" \
			"Profiler started for Decode-0 worker at http://127.0.0.1:9001" \
			"Profiler stopped for Prefill-0 worker at http://127.0.0.1:8000" \
			"Profiler stopped for Decode-0 worker at http://127.0.0.1:9001"; do
			grep -qF "$want" "$dir/out.log" || { echo "FAIL  $name: no \"$want\""; return 1; }
		done
		fmt=${fmt%-pdprofiled} ;;
	*unprofiled)
		! grep -q "Profiler started" "$dir/out.log" ||
			{ echo "FAIL  $name: --profile --pd-separated started the profiler (SGLang skips it)"; return 1; }
		fmt=${fmt%-unprofiled} ;;
	*profiled)
		grep -q "Profiler started" "$dir/out.log" && grep -q "Profiler stopped" "$dir/out.log" ||
			{ echo "FAIL  $name: --profile did not start and stop the profiler"; return 1; }
		fmt=${fmt%-profiled}; [ "$fmt" = profiled ] && fmt=- ;;
	esac
	if [ "$files" != - ]; then
		# shellcheck disable=SC2086 # the glob is the point
		f=$(cd "$dir" && ls -1 $files 2>/dev/null | head -1)
		if [ -z "$f" ]; then
			echo "FAIL  $name: no $files written (files: $(cd "$dir" && ls | tr '\n' ' '))"
			return 1
		fi
		check_file "$dir/$f" "$fmt" >"$dir/check.log" 2>&1 ||
			{ echo "FAIL  $name: $(cat "$dir/check.log")"; return 1; }
	fi
	echo "ok    $name ($((SECONDS - start)) s)${files:+ $files}"
}

if [ "${1:-}" = --inside ]; then # in the private network namespace the parent made
	ip link set lo up || { echo "FAIL: cannot bring lo up in a private network namespace"; exit 1; }
	SCRATCH=$2
	export TMPDIR=$SCRATCH # where SGLang's cached ShareGPT file is found
	make_data "$SCRATCH" || { echo "FAIL: cannot write the datasets"; exit 1; }
	# Eight tokens a frame (--accept-len 8, two-point: exactly 8): the lines ask for up to 2,000 x
	# 1,024 tokens, and a frame a token cost ~50 s of CPU (client and sims) for the SSE events alone.
	# Nothing here reads frames, only the flags, the exit and the files' keys and counts (SGLang's
	# ITL lists stay one per token; vLLM's are one per frame, as against a speculative server).
	sims=()
	for port in 8000 9001 30000; do
		"$BIN" sim --port $port --step-ms 0.2 --prefill-token-us 0 --max-batch 4096 --accept-len 8 \
			--accept-dist two-point --quiet \
			>"$SCRATCH/sim-$port.log" 2>&1 &
		sims+=($!)
	done
	trap 'kill -TERM "${sims[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
	for port in 8000 9001 30000; do
		for _ in $(seq 100); do
			curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
			sleep 0.1
		done
	done
	# Two cases at a time (nothing here is timed): the 2,000-prompt line at 100 req/s takes ~25 s
	# alone (20 s of arrivals), the others run beside it. Each case's lines are printed in the list's order.
	failed=0 pids=() names=()
	running() { local n=0 p; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo $n; }
	for c in "${CASES[@]}"; do
		IFS='|' read -r name harness args <<<"$c"
		[[ $name =~ ^(${LATSCOPE_PEER_CASES:-.*})$ ]] || continue # a subset, e.g. 'sglang-.*'
		while [ "$(running)" -ge 2 ]; do sleep 0.2; done
		run_case "$name" "$harness" "$args" >"$SCRATCH/$name.result" 2>&1 &
		pids+=($!) names+=("$name")
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || failed=$((failed + 1))
		cat "$SCRATCH/${names[$i]}.result"
	done
	echo "${#CASES[@]} peer command lines, $failed failed"
	[ $failed -eq 0 ]
	exit
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "needs root: the peers' command lines use fixed ports (8000, 30000), run in a private network namespace"
	exit 77
fi
if ! why=$(unshare -n true 2>&1); then
	echo "cannot make a private network namespace (unshare -n: ${why:-failed})"
	exit 77
fi
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make all)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is missing (it reads the peers' output files)"; exit 77; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/latscope-peers.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
unshare -n bash "$0" --inside "$scratch"
