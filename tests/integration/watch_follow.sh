#!/usr/bin/env bash
# watch_follow.sh — what watch attaches to and what it returns: `--pid` on a client already
# running (its requests after the attach are seen, watch ends when it exits); a client started
# through `sh -c` (a forked child) is followed; the command's exit status is watch's; watch's own
# failures exit 1 with one line; without root the command is not run.
. "$(dirname "$0")/watch_lib.bash"
need_probes
need_python
start_sim --step-ms 10
# --pid: a client of 30 requests, 2 at a time, ~3 s; attached 1 s in.
"$PY" "$CLIENT" --base-url "http://127.0.0.1:$PORT" --model latscope-sim --num-prompts 30 \
	--max-concurrency 2 --output-len 20 --ignore-eos >"$TMP/bg.out" 2>&1 &
bg=$!
sleep 1
timeout 60 "$BIN" watch --pid "$bg" --record "$TMP/pid.jsonl" --output "$TMP/pid.txt" 2>"$TMP/pid.err"
rc=$?
wait "$bg"
[ $rc -eq 0 ] || fail "--pid: watch exited $rc: $(tail -2 "$TMP/pid.err")"
n=$(grep -c '"type":"request"' "$TMP/pid.jsonl")
[ "$n" -ge 2 ] && [ "$n" -le 30 ] || fail "--pid: $n requests seen (expected some of the 30)"
grep -q "pid $bg" "$TMP/pid.txt" || fail "--pid: the report does not name pid $bg"
echo "--pid: $n of 30 requests seen after the attach"
# --pid --duration: watch stops before the client does (~6 s; loading the probes takes ~1-2 s).
"$PY" "$CLIENT" --base-url "http://127.0.0.1:$PORT" --model latscope-sim --num-prompts 60 \
	--max-concurrency 2 --output-len 20 --ignore-eos >/dev/null 2>&1 &
bg=$!
start=$(date +%s%N)
timeout 60 "$BIN" watch --pid "$bg" --duration 0.5 --output "$TMP/dur.txt" 2>/dev/null || fail "--duration: watch failed"
took=$((($(date +%s%N) - start) / 1000000))
kill -0 "$bg" 2>/dev/null || fail "--duration 0.5: the client ended first (it runs ~6 s)"
wait "$bg"
[ "$took" -lt 5000 ] || fail "--duration 0.5: watch took $took ms"
echo "--pid --duration 0.5: watch ended after $took ms, the client still running"
# sh -c: the client is sh's child.
timeout 60 "$BIN" watch --record "$TMP/sh.jsonl" --output "$TMP/sh.txt" -- sh -c "\"$PY\" \"$CLIENT\" \
	--base-url http://127.0.0.1:$PORT --model latscope-sim --num-prompts 4 --max-concurrency 2 \
	--output-len 4 --ignore-eos; true" >/dev/null 2>"$TMP/sh.err" || fail "sh -c: watch failed: $(tail -2 "$TMP/sh.err")"
n=$(grep -c '"type":"request"' "$TMP/sh.jsonl")
[ "$n" -eq 4 ] || fail "sh -c: $n requests seen, expected the child's 4"
echo "sh -c: the child's 4 requests seen"
# Exit codes.
timeout 30 "$BIN" watch --output /dev/null -- sh -c 'exit 7'
[ $? -eq 7 ] || fail "the command's exit status 7 is not watch's"
timeout 30 "$BIN" watch --output /dev/null -- sh -c 'kill -TERM $$'
[ $? -eq 143 ] || fail "a command killed by SIGTERM: expected 143"
timeout 30 "$BIN" watch -- /nonexistent/command 2>"$TMP/nx.err"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$TMP/nx.err")" -eq 1 ] || fail "a command that cannot run: rc $rc, stderr: $(cat "$TMP/nx.err")"
timeout 30 "$BIN" watch 2>/dev/null
[ $? -eq 2 ] || fail "no command and no --pid: expected the usage status 2"
echo "exit codes: 7, 143, 1 (cannot run), 2 (usage)"
# Not root: one line, exit 1, the command not run.
if command -v setpriv >/dev/null; then
	chmod 755 "$TMP"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$BIN" watch -- sh -c "touch $TMP/ran" 2>"$TMP/nr.err"
	rc=$?
	[ $rc -eq 1 ] || fail "not root: rc $rc"
	[ ! -e "$TMP/ran" ] || fail "not root: the command ran"
	[ "$(wc -l <"$TMP/nr.err")" -eq 1 ] || fail "not root: more than one line: $(cat "$TMP/nr.err")"
	echo "not root: $(cat "$TMP/nr.err")"
fi
echo "ok: --pid, sh -c, exit codes"
