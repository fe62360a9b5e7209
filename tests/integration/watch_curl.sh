#!/usr/bin/env bash
# watch_curl.sh — `latscope watch -- curl -sN ...` (Debian's curl) for one streamed completion:
# the connection's connect() and ESTABLISHED, the request sent, the first byte, one read per
# frame the simulator wrote (frames written together are one), and the first frame's kernel
# arrival within 100 us after the truth's write of it. With --server-pid (the simulator), the
# server's read of the request and its write of the first frame, against the truth's.
. "$(dirname "$0")/watch_lib.bash"
need_probes
need_curl
start_sim --step-ms 10
body='{"model":"latscope-sim","prompt":"hello hello hello","max_tokens":8,"ignore_eos":true,"stream":true}'
for attempt in 1 2; do # the 100 us bound can be missed when another job takes the CPU: once more
	timeout 60 "$BIN" watch --server-pid "$SIM" --record "$TMP/rec.jsonl" --output "$TMP/out.txt" -- \
		curl -sN "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' -d "$body" \
		>"$TMP/curl.out" 2>"$TMP/watch.err"
	rc=$?
	[ $rc -eq 0 ] || fail "watch exited $rc: $(cat "$TMP/watch.err")"
	grep -q '^data: \[DONE\]' "$TMP/curl.out" || fail "curl's output has no [DONE]"
	if py_check "$TMP/rec.jsonl" "$TMP/truth.jsonl" <<'PY'
import json, sys
rec = [json.loads(l) for l in open(sys.argv[1])]
truth = [json.loads(l) for l in open(sys.argv[2])]
conns = [r for r in rec if r.get("type") == "connection"]
reqs = [r for r in rec if r.get("type") == "request"]
assert len(conns) == 1 and len(reqs) == 1, (len(conns), len(reqs))
c, x, t = conns[0], reqs[0], truth[-1]  # this attempt's request
assert 0 < c["connect_ns"] <= c["established_ns"] <= x["sent_ns"], c
assert x["sent_ns"] <= t["received"], "request sent after the server had it"
assert x["first_byte_ns"] >= t["headers"], "first byte before the server wrote its head"
frames = [f for f in t["frames"]]
bursts = []  # frames written within 200 us are one burst (one read)
for f in frames:
    if not bursts or f["t"] - bursts[-1] > 200000:
        bursts.append(f["t"])
first = bursts[0]
d = x["first_frame_ns"] - first
print({k: v for k, v in x.items() if k != "reads"}, x["reads"][:3])
print(f"first frame: truth write {first}, kernel arrival +{d / 1e3:.1f} us; reads {len(x['reads'])}, "
      f"bursts written {len(bursts)} (+ the head: {x['head_apart']})")
assert x["head_apart"] == 1, "the simulator writes its head before the first frame"
assert 0 <= d <= 100000, f"first frame arrived {d} ns after the truth's write (bound 100 us)"
assert len(x["reads"]) == len(bursts) + 1, (len(x["reads"]), len(bursts))
assert x["bursts"] == len(bursts) + 1
# The server's side (its own sockets): read the request before the truth's `received` stamp
# (taken after the read), wrote the first frame just after the truth's stamp before the write.
r, w = x["server_read_ns"] - t["received"], x["server_write_ns"] - first
print(f"server: read {r / 1e3:+.1f} us from the truth's received, first write {w / 1e3:+.1f} us after its stamp")
assert -1000000 <= r <= 0, "server read of the request not just before the truth's received"
assert 0 <= w <= 100000, "server write of the first frame not within 100 us after the truth's stamp"
PY
	then
		grep -q "TTFT: request sent -> first frame arrived" "$TMP/out.txt" || fail "no kernel TTFT line"
		grep -q "With the server watched" "$TMP/out.txt" || fail "no server parts with --server-pid"
		echo "ok: curl watched"
		exit 0
	fi
	echo "attempt $attempt failed"
done
fail "watch of curl did not match the truth"
