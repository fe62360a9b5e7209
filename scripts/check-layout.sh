#!/usr/bin/env bash
# check-layout.sh — keeps the tree as docs/ARCHITECTURE.md draws it: no .c directly in
# userspace/ but main.c, every stage folder has a header <stage>/<stage>.h that opens with
# "Takes:" and "Gives:", and no #include points up the pipeline. Exit 0 clean, 1 with the
# offending lines listed.
set -u
cd "$(dirname "$0")/../userspace"
# Stage ranks, bottom of the pipeline first: a file may include its own stage and lower ones.
# gpu/common (the GPU/user boundary, like bpf/events.h) counts as the bottom. sim and lab are
# commands beside the pipeline: they use base/ only.
declare -A RANK=([common]=0 [base]=0 [workload]=1 [driver]=2 [server]=2 [probes]=2
	[mpi]=2
	[metrics]=3 [attribution]=4 [watch]=4 [config]=5 [report]=6 [cmd]=7 [sim]=7 [lab]=7)
declare -A ONLY=([sim]="base sim" [lab]="base lab")
bad=0
say() { echo "check-layout: $*" >&2; bad=1; }

for f in *.c; do [ "$f" = main.c ] || say "userspace/$f: only main.c stands in userspace/; put it in its stage folder"; done
for d in */; do
	d=${d%/}
	[ -n "${RANK[$d]+x}" ] || { say "userspace/$d/: not a known stage (add it to scripts/check-layout.sh and docs/ARCHITECTURE.md)"; continue; }
	h=$d/$d.h
	if [ ! -f "$h" ]; then
		say "userspace/$h: missing (each stage has a header that says what it takes and gives)"
	elif ! head -8 "$h" | grep -q 'Takes:' || ! head -8 "$h" | grep -q 'Gives:'; then
		say "userspace/$h: its first lines must say 'Takes:' and 'Gives:'"
	fi
	while IFS=: read -r file line inc; do
		to=${inc#*\"}; to=${to%%/*}
		[[ $inc == *\"*/* ]] || continue  # same-folder or bpf/gpu include without a folder
		if [ -z "${RANK[$to]+x}" ]; then
			say "userspace/$file:$line: includes unknown folder '$to'"
		elif [ -n "${ONLY[$d]+x}" ] && [[ " ${ONLY[$d]} " != *" $to "* ]]; then
			say "userspace/$file:$line: $d/ may include only ${ONLY[$d]}: $inc"
		elif [ "${RANK[$to]}" -gt "${RANK[$d]}" ]; then
			say "userspace/$file:$line: $d/ (rank ${RANK[$d]}) includes $to/ (rank ${RANK[$to]}), up the pipeline: $inc"
		fi
	done < <(grep -Hn '^#include "' "$d"/*.[ch] | sed 's/:#include /:/')
done
[ $bad -eq 0 ] && echo "  LAYOUT   ok: $(ls -d */ | wc -l) stage folders, includes point down the pipeline"
exit $bad
