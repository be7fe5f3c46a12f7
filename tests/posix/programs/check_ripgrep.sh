#!/bin/sh
# ripgrep (Debian's, a Rust program) searching with 4 threads under
# LD_PRELOAD=libweft-pthread.so finds what it finds on glibc. Rust's
# standard library keeps per-thread state in thread-locals and asserts that
# a new thread's slot is empty: with thread-locals shared by the ULTs of a
# worker it aborted ("thread_info.is_none()").
# usage: check_ripgrep.sh LIBWEFT_PTHREAD DIR
# Exit 77 (skipped) if rg is not installed (scripts/install-deps.sh installs it).
set -eu
lib=$1 dir=$2
command -v rg >/dev/null 2>&1 || { echo "rg not installed: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Every line that names a wf_ function, in a tree that does not change.
timeout 60 rg -j4 -n --no-config 'wf_[a-z_]+\(' "$dir" | sort >"$tmp/glibc"
n=$(wc -l <"$tmp/glibc")
[ "$n" -gt 100 ] || { echo "FAIL: glibc run found only $n lines"; exit 1; }
for run in 1 2 3; do
	WEFT_WORKERS=2 timeout 60 env LD_PRELOAD="$lib" rg -j4 -n --no-config 'wf_[a-z_]+\(' "$dir" \
		>"$tmp/weft" 2>"$tmp/err" || { echo "FAIL: run $run exited $?"; cat "$tmp/err"; exit 1; }
	sort -o "$tmp/weft" "$tmp/weft"
	cmp -s "$tmp/glibc" "$tmp/weft" || { echo "FAIL: run $run differs from glibc"; diff "$tmp/glibc" "$tmp/weft" | head; exit 1; }
done
echo "ok: rg -j4 found the same $n lines as on glibc, 3 runs"
