#!/bin/bash
# tools/weft-gdb.py against gdb_target: attached to the live process, then
# on a core of it made with gcore.
#
# usage: test_weft_gdb.sh GDB_TARGET WEFT_GDB_PY asm|ucontext
#
# Checks that `info weft-threads` lists every ULT of gdb_target.c with its
# name, state, worker and what it waits on; that `weft-thread ID bt` of each
# starts at the context switch (parked, runnable) or in the ULT's own code
# (running), passes the functions gdb_target.c blocks in, in order, and ends
# at the ULT's entry; and that gdb's selected thread/frame and the threads'
# registers are the same afterwards. Exit status 77 (skipped) when gdb, its
# Python or gcore is missing, or when this environment forbids ptrace and
# the kernel writes no core we could read instead.
set -u

target=$(realpath "$1")
script=$(realpath "$2")
backend=$3
switch_fn=$([ "$backend" = ucontext ] && echo wf_ucswap || echo wf_ctx_jump)

skip() {
	echo "SKIP: $*"
	exit 77
}
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

command -v gdb > /dev/null || skip "gdb not installed"
command -v gcore > /dev/null || skip "gcore not installed"
timeout 60 gdb -batch -nx -ex 'python print("py-" + "ok")' 2>&1 | grep -q py-ok ||
	skip "this gdb has no Python"

tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null && wait "$pid" 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# The target ends itself after 200 s whatever happens here. No preemption:
# the yielder, alone on worker 1 until busy arrives, could be preempted
# between two yields instead of leaving in weft_yield, and its frames
# would then show the preemption's handler (both are right; the listing
# below expects one).
(cd "$tmp" && ulimit -c unlimited 2> /dev/null
	exec env WEFT_CONTEXT="$backend" WEFT_PREEMPT_NS=0 WEFT_GDB_TARGET_SECONDS=200 "$target" > "$tmp/out" 2>&1) &
pid=$!
for _ in $(seq 100); do
	grep -qs "^READY" "$tmp/out" && break
	kill -0 "$pid" 2> /dev/null || break
	sleep 0.1
done
grep -q '^READY' "$tmp/out" || {
	cat "$tmp/out"
	echo "FAIL: gdb_target did not get ready"
	exit 1
}
echo "target: pid $pid, $(cat "$tmp/out")"

# id of a ULT by name, from the READY line
id() {
	sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$tmp/out"
}

# All ULT checks on one gdb output file. $1: the file, $2: live or core.
check_output() {
	local out=$1 what=$2
	# The listing: name, state, worker, what it waits on.
	local rows=(
		"main running 0 \(bound\)"
		"finished exited .*"
		"mutex-waiter parked .* mutex 0x[0-9a-f]+ <gt_mutex>"
		"cond-waiter parked .* cond 0x[0-9a-f]+ <gt_cond>"
		"parker parked .* park"
		"joiner parked .* join ult $(id parker) \"parker\""
		"sleeper parked .* sleep"
		"yielder runnable 1 \(bound\)"
		"busy running 1 \(bound\)"
		"queued runnable 1 \(bound\)"
	)
	local r
	for r in "${rows[@]}"; do
		local name=${r%% *} rest=${r#* }
		local re="^[ *] +$(id "$name") +$name +${rest// / +}\$"
		grep -Eq -- "$re" "$out" || fail "$what: no listing line for $name matching /$re/"
	done
	grep -q "^10 ULTs; workers 0: LWP [0-9]*, 1: LWP [0-9]*; context backend: $backend" "$out" ||
		fail "$what: listing footer"

	# Backtraces: first frame, then these functions in this order.
	check_bt "$out" "$what" mutex-waiter "$switch_fn" weft_mutex_lock gt_wait_on_mutex \
		gt_mutex_waiter_main ult_entry
	check_bt "$out" "$what" cond-waiter "$switch_fn" weft_cond_wait gt_wait_on_cond \
		gt_cond_waiter_main ult_entry
	check_bt "$out" "$what" parker "$switch_fn" wf_park weft_park gt_park_forever \
		gt_parker_main ult_entry
	check_bt "$out" "$what" joiner "$switch_fn" weft_join gt_join_the_parker \
		gt_joiner_main ult_entry
	check_bt "$out" "$what" sleeper "$switch_fn" weft_nanosleep gt_sleep_long \
		gt_sleeper_main ult_entry
	check_bt "$out" "$what" yielder "$switch_fn" weft_yield gt_yield_forever \
		gt_yielder_main ult_entry
	# A running ULT's frame #0 is wherever its kernel thread is (mostly
	# in nanosleep, but it may be between two calls).
	check_bt "$out" "$what" busy ".*" gt_busy_forever gt_busy_main ult_entry
	check_bt "$out" "$what" main ".*" gt_main_holds_the_mutex main
	grep -A1 "^ULT $(id finished) \"finished\" (exited" "$out" | grep -q "has exited" ||
		fail "$what: finished: no 'has exited'"
	grep -A1 "^ULT $(id queued) \"queued\" (runnable" "$out" |
		grep -q "has not run yet; it will start in .*<gt_queued_main>" ||
		fail "$what: queued: no 'has not run yet'"
	# weft-thread all: every ULT once
	local n
	n=$(sed -n '/^=== all$/,$p' "$out" | grep -c '^ULT [0-9]* "')
	[ "$n" = 10 ] || fail "$what: weft-thread all showed $n ULTs, not 10"
	# Any gdb command, in the ULT's frame #1 (not the borrowed placeholder).
	grep -A3 "^=== locals" "$out" | grep -q "^#[1-9]" ||
		fail "$what: weft-thread ID frame did not select a frame of the ULT"
}

# check_bt FILE WHAT NAME FIRST FN...: the first `weft-thread ID bt` section
# of ULT NAME has frame #0 in FIRST (an ERE), then the FNs in order, and
# after the last FN only the context's start frames.
check_bt() {
	local out=$1 what=$2 name=$3 first=$4
	shift 4
	local uid
	uid=$(id "$name")
	# Frames that may follow the entry: the context's or the process's start.
	local starts="wf_ctx_trampoline|uc_entry|__start_context|__libc_start_call_main"
	starts="^($starts|__libc_start_main_impl|__libc_start_main|_start|[?][?]|)$"
	awk -v hdr="ULT $uid \"$name\" (" -v first="$first" -v fns="$*" -v starts="$starts" '
		function fname(line,   s) {
			# "#3  0x... in fn (args) at f:l", "#3  fn (args) at f:l"
			s = line
			sub(/^#[0-9]+ +/, "", s)
			sub(/^0x[0-9a-f]+ in /, "", s)
			sub(/ .*/, "", s)
			return s
		}
		index($0, hdr) == 1 && !done { inside = 1; n = split(fns, want, " "); k = 1; nf = 0; next }
		inside && /^#[0-9]/ {
			f = fname($0)
			if (nf++ == 0 && f !~ "^(" first ")$") { print "frame #0 is " f ", not " first; bad = 1 }
			if (k <= n && f == want[k]) { k++; next }
			if (k > n && f !~ starts) { print "frame after " want[n] ": " f; bad = 1 }
			next
		}
		inside { inside = 0; done = 1 }
		END {
			if (!done && !inside) { print "no backtrace"; exit 1 }
			if (k <= n) { print "missing " want[k] " (in order: " fns ")"; bad = 1 }
			exit bad
		}' "$out" > "$tmp/why" || fail "$what: bt of $name: $(tr '\n' ';' < "$tmp/why")"
}

# The gdb commands for one run; the ULT ids come from the READY line.
gdb_cmds() {
	local args=(-ex 'info weft-threads')
	local n
	for n in main finished mutex-waiter cond-waiter parker joiner sleeper yielder busy queued; do
		args+=(-ex "weft-thread $(id "$n") bt")
	done
	args+=(-ex 'echo === locals\n' -ex "weft-thread $(id joiner) frame")
	args+=(-ex 'echo === all\n' -ex 'weft-thread all bt 1')
	printf '%s\n' "${args[@]}"
}
mapfile -t cmds < <(gdb_cmds)

# Selection and registers, taken before and after the commands on the live
# process. (Loading the script flushes gdb's frame cache, which selects frame
# #0: it is loaded before thread 2's frame #1 is selected.)
sel='print("SEL %d %d" % (gdb.selected_thread().num, gdb.selected_frame().level()))'
snapshot=(-ex "python $sel"
	-ex 'echo === regs\n' -ex 'thread apply all -q info registers rip rsp rbp rbx r12 r13 r14 r15'
	-ex 'echo === end\n')

live=1
timeout 60 gdb -batch -nx -p "$pid" -ex 'info threads' > "$tmp/attach" 2>&1
if ! grep -q 'Thread .*LWP' "$tmp/attach"; then
	live=0
	echo "note: gdb cannot attach here: $(grep -m1 -i 'ptrace\|permit' "$tmp/attach")"
fi

if [ $live = 1 ]; then
	echo "--- live process"
	timeout 120 gdb -batch -nx -p "$pid" -ex "source $script" -ex 'thread 2' -ex 'frame 1' \
		"${snapshot[@]}" "${cmds[@]}" "${snapshot[@]}" -ex "gcore $tmp/core" > "$tmp/live" 2>&1
	cat "$tmp/live"
	check_output "$tmp/live" live
	[ "$(grep -c '^SEL 2 1$' "$tmp/live")" = 2 ] ||
		fail "live: selected thread/frame not restored ($(grep '^SEL' "$tmp/live" | tr '\n' ' '))"
	# The two register dumps (before, after) must be identical.
	awk '/^=== regs$/ { n++; on = 1; next } /^=== end$/ { on = 0 } on { print > (FILENAME "." n) }' \
		"$tmp/live"
	cmp -s "$tmp/live.1" "$tmp/live.2" && [ -s "$tmp/live.1" ] ||
		fail "live: registers differ after the commands"
	core=$tmp/core
else
	# No ptrace: a core written by the kernel is the other real source.
	pattern=$(cat /proc/sys/kernel/core_pattern 2> /dev/null)
	case $pattern in
	'|'* | '') skip "no ptrace, and kernel cores go to a pipe ($pattern)" ;;
	esac
	kill -ABRT "$pid"
	wait "$pid" 2> /dev/null
	pid=
	core=$(ls -t "$tmp"/core* 2> /dev/null | head -1)
	[ -n "$core" ] || skip "no ptrace and no core file from the kernel"
fi

echo "--- core file"
[ -s "$core" ] || { fail "no core file"; exit 1; }
timeout 120 gdb -batch -nx "$target" "$core" -ex "source $script" "${cmds[@]}" \
	> "$tmp/core.out" 2>&1
cat "$tmp/core.out"
check_output "$tmp/core.out" core

[ $live = 1 ] || echo "note: live attach not tested (ptrace not permitted)"
if [ $fails != 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed ($backend)"
