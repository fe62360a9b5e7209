#!/usr/bin/env bash
# tests/integration/peer_request.sh — what the peers' request flags put on the wire, as a server
# sees it: a small Python server (loopback, a port the kernel picks) records every request's
# headers and body and answers with an OpenAI completions stream. Checks vLLM's --header,
# --request-id-prefix, sampling flags, --logprobs, --extra-body, --served-model-name and
# --lora-modules round-robin; SGLang's payload defaults (temperature 0.0, best_of 1) and
# --lora-name (model and lora_path); every sampling flag at its zero or boundary value (temperature
# 0, top_p 1, top_k -1, penalties 0, seed 0 in the extra body, max_tokens 1); and that the record file names the headers without
# their values; the headers go to GET /v1/models too, as vLLM sends them there.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make all)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is missing (the capturing server is Python)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-peerreq.XXXXXX") || exit 1
server_pid=''
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

python3 - "$tmp" <<'PY' &
import http.server, json, sys, threading
out = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, code, ctype, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        if self.path == "/v1/models":
            with open(out + "/models.jsonl", "a") as f:
                f.write(json.dumps({k.lower(): v for k, v in self.headers.items()}) + "\n")
            return self.reply(200, "application/json", b'{"data":[{"id":"m","root":"m"}]}')
        self.reply(404, "application/json", b"{}")
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/completions":
            return self.reply(404, "application/json", b"{}")
        with open(out + "/requests.jsonl", "a") as f:
            f.write(json.dumps({"headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": json.loads(body)}) + "\n")
        frames = [{"choices": [{"index": 0, "text": t, "finish_reason": None}]} for t in ("a", "b")]
        frames.append({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}})
        sse = "".join("data: %s\n\n" % json.dumps(f) for f in frames) + "data: [DONE]\n\n"
        self.reply(200, "text/event-stream", sse.encode())
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(out + "/port", "w").write(str(srv.server_address[1]))
srv.serve_forever()
PY
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "FAIL: the capturing server did not start"; exit 1; }
url=http://127.0.0.1:$(cat "$tmp/port")

common=(--base-url "$url" --model m --dataset-name random --random-input-len 4 --random-output-len 2
	--random-vocab-size 100 --num-prompts 4 --probes off --skip-initial-test --disable-tqdm)
if ! "$BIN" bench "${common[@]}" --header x-additional-info=0.3.3 "Authorization=Bearer s3cret" \
	--request-id-prefix bench-abc- --temperature 0.5 --top-k 7 --logprobs 2 \
	--extra-body '{"chat_template_kwargs": {"enable_thinking": false}}' --served-model-name served \
	--lora-modules l1 l2 --lora-assignment round-robin --record "$tmp/rec.jsonl" >"$tmp/vllm.log" 2>&1; then
	echo "FAIL: the vLLM-flag run exited non-zero"; tail -5 "$tmp/vllm.log"; exit 1
fi
mv "$tmp/requests.jsonl" "$tmp/vllm.jsonl"
mv "$tmp/models.jsonl" "$tmp/vllm-models.jsonl"
if ! "$BIN" bench --harness sglang --backend vllm "${common[@]}" --lora-name ad1 --warmup-requests 0 \
	--output-file "$tmp/sg.jsonl" >"$tmp/sglang.log" 2>&1; then
	echo "FAIL: the SGLang-flag run exited non-zero"; tail -5 "$tmp/sglang.log"; exit 1
fi
mv "$tmp/requests.jsonl" "$tmp/sglang.jsonl"
# Every sampling flag at its zero or boundary value, and max_tokens 1: each is on the wire.
if ! "$BIN" bench "${common[@]}" --random-output-len 1 --temperature 0 \
	--top-p 1 --top-k -1 --min-p 0 --frequency-penalty 0 --presence-penalty 0 --repetition-penalty 1 \
	--extra-body '{"seed": 0}' >"$tmp/zero.log" 2>&1; then
	echo "FAIL: the zero-value run exited non-zero"; tail -5 "$tmp/zero.log"; exit 1
fi
mv "$tmp/requests.jsonl" "$tmp/zero.jsonl"

python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def load(name): return [json.loads(l) for l in open(f"{d}/{name}")]
fails = []
def want(cond, what):
    if not cond: fails.append(what)
v = load("vllm.jsonl")
want(len(v) == 4, f"vLLM run: {len(v)} requests seen, want 4")
ids = sorted(r["headers"].get("x-request-id", "") for r in v)
want(ids == [f"bench-abc-{i}" for i in range(4)], f"x-request-id {ids}")
for r in v:
    h, b = r["headers"], r["body"]
    want(h.get("x-additional-info") == "0.3.3", f"x-additional-info {h.get('x-additional-info')}")
    want(h.get("authorization") == "Bearer s3cret", f"authorization {h.get('authorization')}")
    want(b.get("temperature") == 0.5 and b.get("top_k") == 7, f"sampling {b}")
    want(b.get("logprobs") == 2, f"logprobs {b.get('logprobs')}")
    want(b.get("chat_template_kwargs") == {"enable_thinking": False}, f"extra body {b}")
    want("top_p" not in b, "top_p sent without --top-p")
gets = [json.loads(l) for l in open(f"{d}/vllm-models.jsonl")]
want(gets and all(g.get("x-additional-info") == "0.3.3" for g in gets), "--header missing on GET /v1/models")
models = sorted(r["body"]["model"] for r in v)
want(models == ["l1", "l1", "l2", "l2"], f"round-robin LoRA models {models}")
s = load("sglang.jsonl")
want(len(s) == 4, f"SGLang run: {len(s)} requests seen, want 4")
for r in s:
    b = r["body"]
    want(b.get("temperature") == 0.0 and b.get("best_of") == 1, f"SGLang defaults {b}")
    want(b.get("model") == "ad1" and b.get("lora_path") == "ad1", f"SGLang LoRA {b}")
    want(b.get("ignore_eos") is True, f"SGLang ignore_eos {b.get('ignore_eos')}")
z = load("zero.jsonl")
want(len(z) == 4, f"zero-value run: {len(z)} requests seen, want 4")
zero = {"temperature": 0, "top_p": 1, "top_k": -1, "min_p": 0, "frequency_penalty": 0, "presence_penalty": 0,
        "repetition_penalty": 1, "seed": 0, "max_tokens": 1}
for r in z:
    b = r["body"]
    got = {k: b.get(k) for k in zero}
    want(got == zero and all(type(b.get(k)) in (int, float) for k in zero), f"zero values sent {got}")
head = json.loads(open(f"{d}/rec.jsonl").readline())
req = head.get("request", {})
want(req.get("headers", {}).get("Authorization") == "<redacted>", f"record headers {req.get('headers')}")
want("s3cret" not in open(f"{d}/rec.jsonl").read(), "a header value is in the record file")
want(req.get("sampling") == {"temperature": 0.5, "top_k": 7}, f"record sampling {req.get('sampling')}")
sg = json.loads(open(f"{d}/sg.jsonl").readline())
want(sg.get("backend") == "vllm" and sg.get("completed") == 4, f"SGLang JSONL {sg.get('backend')} {sg.get('completed')}")
if fails:
    print("FAIL: " + "; ".join(fails[:6]))
    sys.exit(1)
print("ok: headers, request ids, sampling (and at zero), logprobs, extra body, LoRA (vLLM and SGLang), record redaction")
PY
