#!/bin/sh
# A CPython program under LD_PRELOAD=libweft-pthread.so, on one worker and on
# two, prints what it prints on glibc. py_threads.py (the default): a thread
# pool running child processes through pipes, a bounded Queue, Events,
# time.sleep - the interpreter's threads spend their time blocked in the
# kernel (pipe reads, waitpid, the GIL), so this needs blocked workers to be
# handed on. py_fork.py: fork with threads running (a multiprocessing pool
# whose forked workers start threads, os.fork from a thread).
# usage: check_python.sh LIBWEFT_PTHREAD [SCRIPT]
# Exit 77 (skipped) if python3 is not installed (scripts/install-deps.sh installs it).
set -eu
lib=$1
script=${2:-py_threads.py}
[ -r "$lib" ] || { echo "FAIL: $lib: no such library"; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skipped"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
# The interpreter itself, not a wrapper script in front of it (pyenv's shims
# are shell scripts): only the interpreter's threads are the subject here.
py=$(python3 -c 'import sys; print(sys.executable)') ||
	{ echo "FAIL: python3 does not run"; exit 1; }
[ -x "$py" ] || { echo "FAIL: python3 gave no interpreter path ($py)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

timeout -k 10 60 "$py" "$here/$script" >"$tmp/glibc" 2>"$tmp/glibc.err" ||
	{ echo "FAIL: glibc run exited $?"; cat "$tmp/glibc.err"; exit 1; }
echo "--- glibc ($py)"
cat "$tmp/glibc"
cat "$tmp/glibc.err"
failed=0
for workers in 1 2; do
	rc=0
	WEFT_WORKERS=$workers timeout -k 10 60 env LD_PRELOAD="$lib" "$py" "$here/$script" \
		>"$tmp/weft" 2>"$tmp/weft.err" || rc=$?
	if [ $rc -ne 0 ]; then
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			echo "FAIL [WEFT_WORKERS=$workers] timed out after 60 s"
		else
			echo "FAIL [WEFT_WORKERS=$workers] exit status $rc"
		fi
		cat "$tmp/weft"
		cat "$tmp/weft.err"
		failed=1
	elif ! diff -u --label glibc --label "weft WEFT_WORKERS=$workers" "$tmp/glibc" "$tmp/weft"; then
		echo "FAIL [WEFT_WORKERS=$workers] output differs from glibc"
		cat "$tmp/weft.err"
		failed=1
	else
		echo "ok   [WEFT_WORKERS=$workers] output identical to glibc"
		cat "$tmp/weft.err"
	fi
done
exit $failed
