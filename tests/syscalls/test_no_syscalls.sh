#!/usr/bin/env bash
# A create/exit loop makes no system calls: run create_loop under strace with
# N and 100*N iterations (one worker, so no idle sibling sleeps and wakes) and
# require the same system-call count. usage: test_no_syscalls.sh BINARY
# WEFT_SYSCALL_NS=0 WEFT_PREEMPT_NS=0: no monitor thread (src/sched/carrier.c),
# whose start and stop race with a run this short and change the count by
# one or two, and which looks at a running worker every millisecond.
set -euo pipefail
bin=$1
command -v strace >/dev/null || { echo "SKIP: strace not installed"; exit 77; }
count() {
	local out
	out=$(mktemp)
	WEFT_WORKERS=1 WEFT_SYSCALL_NS=0 WEFT_PREEMPT_NS=0 strace -f -c -o "$out" "$bin" "$@" >/dev/null
	# The total line: "100.00 0.000123 1 61 1 total" (errors column optional).
	awk '/total$/ { if (NF == 6) print $4; else print $(NF-1) }' "$out"
	rm -f "$out"
}
for mode in joined detached; do
	small=$(count 1000 $mode)
	large=$(count 100000 $mode)
	echo "$mode: 1000 ULTs -> $small system calls, 100000 ULTs -> $large"
	if [ "$small" != "$large" ]; then
		echo "FAIL: the create/exit loop makes system calls ($mode)"
		exit 1
	fi
done
echo PASSED
