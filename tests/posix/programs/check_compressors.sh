#!/bin/sh
# pbzip2 and lbzip2 (Debian's) under LD_PRELOAD=libweft-pthread.so, on one
# worker and on two: each compresses a file with 4 threads and decompresses
# it again, and gives back exactly the original. Both hung before weft made
# blocking calls in system call sections: lbzip2's main thread waits in
# sigsuspend, pbzip2's signal thread in sigwait until main pthread_kills it
# (docs/posix-coverage.md, "Blocking system calls").
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
		if ! WEFT_WORKERS=$w timeout 60 env LD_PRELOAD="$lib" $tool -c <"$tmp/in" >"$tmp/z" 2>"$tmp/err"; then
			echo "FAIL: $name -c on $w worker(s) exited $? (124: timed out)"
			cat "$tmp/err"
			exit 1
		fi
		if ! WEFT_WORKERS=$w timeout 60 env LD_PRELOAD="$lib" $tool -dc <"$tmp/z" >"$tmp/out" 2>"$tmp/err"; then
			echo "FAIL: $name -dc on $w worker(s) exited $? (124: timed out)"
			cat "$tmp/err"
			exit 1
		fi
		cmp -s "$tmp/in" "$tmp/out" || { echo "FAIL: $name on $w worker(s) gave other bytes back"; exit 1; }
		echo "ok: $name on $w worker(s) round-trips $(wc -c <"$tmp/in") bytes"
	done
done
[ "$ran" = 1 ] || exit 77
