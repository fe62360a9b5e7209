#!/usr/bin/env bash
# tests/integration/client_check.sh — the `client` check (issue 32) on real runs, against the
# simulator's truth: each token frame's client delay is the record's arrival stamp less the
# truth's write of that frame (same host, same clock), a source apart from the probes and from
# the loop's own lag, which the check reads.
# 1. A light run (16 streams, the client alone on its core): truth delay P99 under 2 ms, the
#    check ok in the result JSON and the text, the probes' client delay P99 within 1 ms of the
#    truth's.
# 2. The same run starved on purpose (a CPU hog on the client's core, the client at nice 10):
#    truth delay P99 over half the median ITL, and the check not ok, naming the probes' client
#    delay as a share of the median ITL, in the JSON, the text and the HTML page; the probes'
#    P99 within 25 % of the truth's (the loopback's few us apart).
# 3. Starved without probes (--probes off: the check has only the loop's lag and CPU), with more
#    prompts than slots: not ok, the requests' late start said.
# Bugs caught: a check that says ok whatever the client did, a delay read from another clock
# (started vs kernel arrival), a verdict left out of the JSON or the page, the check firing on a
# light run. Needs 2 cores (the sim on one, the client and the hog on the other); probes need
# root and BTF (else part 3 alone). ~25 s.
set -u
ROOT=${LATSCOPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${LATSCOPE_BIN:-$ROOT/build/latscope}
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built (make all)"; exit 1; }
command -v python3 >/dev/null || { echo "skip: python3 is missing (it reads the records)"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "skip: needs 2 cores (the sim apart from the client)"; exit 77; }
. "$ROOT/tests/lib/sim.bash"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/latscope-clientcheck.XXXXXX") || exit 1
HOG=0
stop_hog() { [ "$HOG" -gt 0 ] && { kill "$HOG" 2>/dev/null; wait "$HOG" 2>/dev/null; }; HOG=0; }
trap 'stop_hog; ls_sim_stop; rm -rf "$tmp"' EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
PROBES=1
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	PROBES=0
	echo "note: not root or no BTF: the probes' parts (1, 2) skipped"
fi
PIN_SIM="taskset -c 1"

run() { # name nice probes(on|off) prompts step_ms -- runs bench on core 0 against a fresh sim
	local name=$1 niceness=$2 probes=$3 prompts=$4 step=$5 d=$tmp/$1
	mkdir -p "$d"
	ls_sim_start "$d/truth.jsonl" "$d/sim.log" --step-ms "$step" --prefill-token-us 0 --decode-token-us 0 \
		|| { bad "$name: the simulator did not start"; return 1; }
	(cd "$d" && timeout -k 5 120 taskset -c 0 nice -n "$niceness" "$BIN" bench --base-url "http://127.0.0.1:$PORT" \
		--model latscope-sim --dataset-name random --random-input-len 16 --random-output-len 30 --ignore-eos \
		--num-prompts "$prompts" --max-concurrency 16 --seed 3 --disable-tqdm --probes "$probes" \
		--record R.jsonl --save-result --result-filename A.json --html page.html >bench.out 2>bench.err)
	local rc=$?
	ls_sim_stop
	[ $rc = 0 ] || { bad "$name: bench exited $rc"; tail -3 "$d/bench.err"; return 1; }
}

hog() { # a busy loop on the client's core, at the default nice (the client runs at nice 10)
	taskset -c 0 sh -c 'while :; do :; done' &
	HOG=$!
}

check() { # name expect(ok|slow|late) probes(on|off)
	python3 - "$tmp/$1" "$2" "$3" <<'PY'
import json, os, re, sys
sys.path.insert(0, os.path.join(os.environ.get("ROOT", "."), "tests", "lib"))
from numpy_pct import pct
d, expect, probes = sys.argv[1], sys.argv[2], sys.argv[3]
fails = []
lines = [json.loads(l) for l in open(f"{d}/R.jsonl")]
base = int(lines[0]["base_ns"])
tag = lines[0]["run_tag"]
truth = {}
for l in open(f"{d}/truth.jsonl"):
    t = json.loads(l)
    truth[t["id"]] = [f["t"] for f in t.get("frames", []) if f.get("kind") == "tokens"]
delays, n_req = [], 0
for r in lines[1:]:
    if r.get("type", "request") != "request" or "frames" not in r or r.get("warmup"):
        continue
    tf = truth.get(f"{tag}-{r['id']}")
    if tf is None:
        fails.append(f"request {r['id']} has no truth line")
        continue
    mine = [f[0] for f in r["frames"] if f[3] > 0]  # frames that added text: the token frames
    if len(mine) != len(tf):
        fails.append(f"request {r['id']}: {len(mine)} token frames, the truth wrote {len(tf)}")
        continue
    n_req += 1
    delays += [(base + a - t) / 1e6 for a, t in zip(mine, tf)]
if not delays:
    fails.append("no token frame joined to the truth")
    delays = [0.0]
truth_p99 = pct(sorted(delays), 99)
res = json.load(open(f"{d}/A.json"))
ls = res["latscope"]
chk = {c["check"]: c for c in ls["checks"]}["client"]
itl_med = ls["metrics"]["itl_frame"]["median_ms"] if "metrics" in ls and "itl_frame" in ls["metrics"] else None
out = open(f"{d}/bench.out").read()
page = open(f"{d}/page.html").read()
m = re.search(r"client delay P99 ([0-9.]+) ms", chk["text"]) or re.search(r"frames read ([0-9.]+) ms after", chk["text"])
probes_p99 = float(m.group(1)) if m else None
print(f"  {os.path.basename(d)}: {len(delays)} frames of {n_req} requests; client delay from the truth P99 "
      f"{truth_p99:.3f} ms; probes' P99 {probes_p99}; check ok={chk['ok']}: {chk['text']}")
itl = None
mi = re.search(r"median ITL \(([0-9.]+) ms\)", chk["text"])
if mi:
    itl = float(mi.group(1))
else:  # an ok verdict does not name the ITL: the truth's median gap between token frames
    gaps = []
    for v in truth.values():
        gaps += [(b - a) / 1e6 for a, b in zip(v, v[1:])]
    itl = pct(gaps, 50) if gaps else None
print(f"    median ITL {itl} ms; truth delay P99 = {truth_p99 / itl * 100 if itl else 0:.0f}% of it")
# The verdict agrees with the truth outside a band: quiet under 40 % of the median ITL, fired
# over 60 % (the check's line is 50 %, on its own figure).
if itl and truth_p99 < 0.4 * itl and not chk["ok"]:
    fails.append(f"the check fired while the truth says the client read frames within {truth_p99:.3f} ms: {chk['text']}")
if itl and truth_p99 > 0.6 * itl and chk["ok"]:
    fails.append(f"the check said ok while the truth says frames waited {truth_p99:.3f} ms in the client: {chk['text']}")
if expect != "ok":
    if not itl or truth_p99 <= 0.6 * itl:
        fails.append(f"the hog did not starve the client (truth delay P99 {truth_p99:.3f} ms, median ITL {itl} ms)")
    if chk["text"][:60] not in out.replace("\n", " "):
        fails.append("the text report does not carry the check's verdict")
    if chk["text"][:40] not in page:
        fails.append("the HTML page does not carry the check's verdict")
if expect == "slow" and "client delay P99" not in chk["text"]:
    fails.append(f"the verdict does not name the probes' client delay: {chk['text']}")
if expect == "stalled" and "client loop lag P99" not in chk["text"]:
    fails.append(f"without probes the verdict does not name the loop's lag: {chk['text']}")
if expect == "ok" and probes == "off" and "its loop's turns started within" not in chk["text"]:
    fails.append(f"without probes an ok verdict does not give the loop's lag: {chk['text']}")
if probes == "on":
    if probes_p99 is None:
        fails.append(f"the check gives no probe figure with probes on: {chk['text']}")
    elif abs(probes_p99 - truth_p99) > max(1.0, 0.25 * truth_p99):
        fails.append(f"the probes' client delay P99 {probes_p99:.3f} ms is not the truth's {truth_p99:.3f} ms")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
}
export ROOT

# Light runs at 20 ms a step (a loaded machine's few ms stay under half of it); starved ones at
# 5 ms (the hog's slices are longer than that).
if [ $PROBES = 1 ]; then
	run light 0 on 16 20 && { check light ok on || failures=$((failures + 1)); }
	hog
	run starved 10 on 48 5 && { check starved slow on || failures=$((failures + 1)); }
	stop_hog
fi
run light_noprobes 0 off 16 20 && { check light_noprobes ok off || failures=$((failures + 1)); }
hog
run starved_noprobes 10 off 48 5 && { check starved_noprobes stalled off || failures=$((failures + 1)); }
stop_hog
[ $failures = 0 ] && echo "ok: the client check against the truth" || exit 1
