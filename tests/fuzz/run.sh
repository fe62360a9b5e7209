#!/usr/bin/env bash
# tests/fuzz/run.sh — `make fuzz`: runs every libFuzzer target (build/fuzz/bin/*, built by
# `make fuzz-bins`) for FUZZ_SECONDS each (default 60), one after the other, from its seed corpus
# (tests/fuzz/corpus/NAME, read only) plus a work corpus (build/fuzz/corpus/NAME) where new
# inputs go. A crash leaves its input in build/fuzz/crashes/ and fails the run.
#   FUZZ_SECONDS=300 make fuzz           longer
#   tests/fuzz/run.sh sse sim_http       only these targets
#   build/fuzz/bin/sse build/fuzz/crashes/crash-...   replay one crash
#   tests/fuzz/run.sh --merge [NAME...]  no fuzzing: add to tests/fuzz/corpus/NAME the inputs of
#                                        the work corpus that reach edges it does not (-merge=1
#                                        -use_counters=0 keeps it to tens of files a target)
# Ends with one line per target: executions, corpus size, crashes.
set -u
cd "$(dirname "$0")/../.." || exit 1
SECONDS_EACH=${FUZZ_SECONDS:-60}
merge=0
[ "${1:-}" = --merge ] && { merge=1; shift; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for src in tests/fuzz/fuzz_*.c; do
		n=${src#tests/fuzz/fuzz_}
		targets+=("${n%.c}")
	done
fi
mkdir -p build/fuzz/crashes build/fuzz/logs
failed=0
if [ "$merge" = 1 ]; then
	for t in "${targets[@]}"; do
		before=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
		build/fuzz/bin/"$t" -merge=1 -use_counters=0 -close_fd_mask=3 "tests/fuzz/corpus/$t" \
			"build/fuzz/corpus/$t" >"build/fuzz/logs/$t.merge.log" 2>&1 || { failed=1; echo "merge $t failed"; }
		echo "$t: $before -> $(find "tests/fuzz/corpus/$t" -type f | wc -l) inputs"
	done
	exit $failed
fi
summary=()
for t in "${targets[@]}"; do
	bin=build/fuzz/bin/$t
	if [ ! -x "$bin" ]; then
		echo "fuzz: $bin is not built (make fuzz-bins)"; failed=1; continue
	fi
	mkdir -p "build/fuzz/corpus/$t"
	log=build/fuzz/logs/$t.log
	echo "==> fuzz $t for ${SECONDS_EACH} s"
	# close_fd_mask=3: the loaders' error lines are noise here; sanitizer reports still print.
	"$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
		-print_final_stats=1 -artifact_prefix="build/fuzz/crashes/$t-" \
		"build/fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	corpus=$(ls "build/fuzz/corpus/$t" | wc -l)
	crashes=$(ls build/fuzz/crashes/ 2>/dev/null | grep -c "^$t-")
	if [ "$rc" -ne 0 ]; then
		failed=1
		grep -m1 -E "ERROR: |runtime error|deadly signal" "$log" | sed 's/^/    /'
		echo "    log: $log"
	fi
	summary+=("$(printf '%-10s %12s executions  %5s corpus inputs  %s crash files  exit %s' "$t" "${execs:-?}" \
		"$corpus" "$crashes" "$rc")")
done
echo "---- fuzz summary (${SECONDS_EACH} s per target)"
printf '%s\n' "${summary[@]}"
exit $failed
