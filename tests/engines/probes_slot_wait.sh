#!/usr/bin/env bash
# engines/probes_slot_wait: latscope bench with the eBPF probes on the client and on llama-server
# (--server-pid), 16 requests in flight at once on 2 slots (none waits in the client): the attribution's server part of each TTFT
# against the engine's own prompt time, and the wait for a slot inside the server reported as
# server time, not client time (engine_check.py --attribution).
. "$(dirname "$0")/engine_lib.bash"
need_engine
[ "$(id -u)" -eq 0 ] || skip "not root: the eBPF probes need root"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF (/sys/kernel/btf/vmlinux): the probes cannot load"
start_server 2
bench probes --backend openai --dataset-name random --random-input-len 32 --random-output-len 16 \
	--num-prompts 16 --max-concurrency 16 --ignore-eos --connection per-request \
	--probes on --server-pid "$SRV"
sed -n '/Where the latency went/,/^(percentiles/p' "$TMP/probes.out" | head -24
check probes --slots 2 --concurrency 16 --output-len 16 --input-len 32 --attribution
