#!/bin/sh
# pbzip2 and lbzip2 (Debian's) under LD_PRELOAD=libweft-pthread.so, on one
# worker and on two: each compresses a file with 4 threads and decompresses
# it again, and gives back exactly the original. Both hung before weft made
# blocking calls in system call sections: lbzip2's main thread waits in
# sigsuspend, pbzip2's signal thread in sigwait until main pthread_kills it
# (docs/posix-coverage.md, "Blocking system calls").
# Then Ctrl-C: pbzip2 blocks SIGINT in every thread and takes it in its
# signal thread with sigwait, deletes its partial output and exits 1. Under
# weft that needs the kernel threads to block what their ULTs block (else
# SIGINT's default action ends the process and leaves a truncated file).
# usage: check_compressors.sh LIBWEFT_PTHREAD
# Exit 77 (skipped) if neither is installed (scripts/install-deps.sh installs both).
set -eu
lib=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# 4 MB of text that compresses in several blocks: the same every run.
awk 'BEGIN { for (i = 0; i < 120000; i++) printf "line %d of the weft test, %d\n", i, (i * 7919) % 10007 }' >"$tmp/in"
ran=0
for tool in "pbzip2 -p4" "lbzip2 -n4"; do
	name=${tool%% *}
	command -v "$name" >/dev/null 2>&1 || { echo "$name not installed: not run"; continue; }
	ran=1
	# The reference: the same tool on glibc round-trips the data.
	timeout 60 $tool -c <"$tmp/in" | timeout 60 $tool -dc >"$tmp/glibc"
	cmp -s "$tmp/in" "$tmp/glibc" || { echo "FAIL: $name on glibc does not round-trip"; exit 1; }
	for w in 1 2; do
		rc=0
		WEFT_WORKERS=$w timeout 60 env LD_PRELOAD="$lib" $tool -c <"$tmp/in" >"$tmp/z" 2>"$tmp/err" || rc=$?
		if [ $rc != 0 ]; then
			echo "FAIL: $name -c on $w worker(s) exited $rc (124: timed out)"
			cat "$tmp/err"
			exit 1
		fi
		WEFT_WORKERS=$w timeout 60 env LD_PRELOAD="$lib" $tool -dc <"$tmp/z" >"$tmp/out" 2>"$tmp/err" || rc=$?
		if [ $rc != 0 ]; then
			echo "FAIL: $name -dc on $w worker(s) exited $rc (124: timed out)"
			cat "$tmp/err"
			exit 1
		fi
		cmp -s "$tmp/in" "$tmp/out" || { echo "FAIL: $name on $w worker(s) gave other bytes back"; exit 1; }
		echo "ok: $name on $w worker(s) round-trips $(wc -c <"$tmp/in") bytes"
	done
done
# Ctrl-C in the middle of pbzip2's compression of 40 MB that does not
# compress: on glibc, exit 1 and no output file; the same under weft.
if command -v pbzip2 >/dev/null 2>&1; then
	head -c 40000000 /dev/urandom >"$tmp/big"
	for mode in glibc 1 2; do
		rm -f "$tmp/big.bz2"
		if [ "$mode" = glibc ]; then pre=; else pre=$lib; fi
		WEFT_WORKERS=${mode#glibc} timeout 60 env LD_PRELOAD="$pre" pbzip2 -p4 -k -f "$tmp/big" 2>"$tmp/err" &
		pid=$!
		# Once it writes its output, it is well under way.
		i=0
		while [ ! -s "$tmp/big.bz2" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
		kill -INT $pid
		rc=0
		wait $pid || rc=$?
		if [ "$rc" != 1 ] || [ -e "$tmp/big.bz2" ]; then
			echo "FAIL: pbzip2 ($mode) after SIGINT exited $rc, output file $([ -e "$tmp/big.bz2" ] && echo left || echo removed)"
			cat "$tmp/err"
			exit 1
		fi
		echo "ok: pbzip2 ($mode) after SIGINT exited 1 and removed its output"
	done
fi
[ "$ran" = 1 ] || exit 77
