#!/usr/bin/env bash
# watch_tls.sh — the Python client over TLS (`latscope sim --tls`, its self-signed certificate,
# the client's --insecure): Python's ssl module drives SSL_do_handshake / SSL_write_ex through
# memory BIOs, and watch ties each handshake to its socket: one handshake per connection, > 0
# long; as many exchanges as requests (TLS's own bytes, session tickets and close_notify, are not
# requests); each first frame's kernel arrival after the truth's write of it.
. "$(dirname "$0")/watch_lib.bash"
need_probes
need_python
start_sim --tls --step-ms 10
timeout 120 "$BIN" watch --record "$TMP/rec.jsonl" --output "$TMP/out.txt" -- "$PY" "$CLIENT" \
	--base-url "https://127.0.0.1:$PORT" --insecure --model latscope-sim --num-prompts 8 \
	--max-concurrency 4 --output-len 8 --ignore-eos >"$TMP/client.out" 2>"$TMP/watch.err"
rc=$?
[ $rc -eq 0 ] || fail "watch exited $rc: $(tail -3 "$TMP/watch.err")"
py_check "$TMP/rec.jsonl" "$TMP/truth.jsonl" <<'PY' || fail "see above"
import json, sys
rec = [json.loads(l) for l in open(sys.argv[1])]
truth = {t["id"]: t for t in map(json.loads, open(sys.argv[2]))}
conns = [r for r in rec if r.get("type") == "connection"]
reqs = [r for r in rec if r.get("type") == "request"]
print(f"{len(conns)} connections, {len(reqs)} requests, handshakes {[c['handshakes'] for c in conns]}, "
      f"ms {[round((c['tls_end_ns'] - c['tls_start_ns']) / 1e6, 3) for c in conns]}")
assert 1 <= len(conns) <= 4 and len(reqs) == 8 == len(truth), (len(conns), len(reqs), len(truth))
for c in conns:
    assert c["handshakes"] == 1, c
    assert 0 < c["tls_start_ns"] < c["tls_end_ns"] and c["established_ns"] <= c["tls_start_ns"] + 1000000, c
    assert c["connect_ns"] <= c["tls_start_ns"], c
# Each request's first frame: after its truth write, within 2 ms of one (the requests are not
# named in the kernel: match each to the nearest truth first-frame write).
firsts = sorted(min(f["t"] for f in t["frames"] if f["kind"] == "tokens") for t in truth.values())
for x in reqs:
    d = min((x["first_frame_ns"] - t for t in firsts if t <= x["first_frame_ns"]), default=None)
    assert d is not None and d < 2000000, f"first frame {x['first_frame_ns']} is no truth write's (+{d})"
    assert x["sent_ns"] > 0 and x["request_bytes"] > 0
    assert x["head_apart"] == 1, "the head (not TLS 1.3 session tickets) is the first burst"
PY
grep -q "4 TLS handshake\|[1-4] TLS handshake" "$TMP/out.txt" || fail "the summary does not count the handshakes"
echo "ok: TLS handshakes tied to their connections"
