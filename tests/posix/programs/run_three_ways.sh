#!/bin/sh
# Runs one pthread program in each available mode and checks that every mode prints exactly
# what the glibc build prints.
#
#   run_three_ways.sh [--timeout S] [--env VAR=VALUE]... --glibc BIN [--header BIN2]
#                     [--preload LIB] -- [args...]
#
# Modes:
#   glibc    BIN args                      the program built against glibc's pthreads
#   header   BIN2 args                     the same source built against weft's wrapper headers
#                                          (-I include/weft/compat, linked with libweft-pthread)
#   preload  env LD_PRELOAD=LIB BIN args   the glibc build with weft's pthreads preloaded
#
# --env VAR=VALUE (repeatable) sets VAR in the weft modes only (header and preload), such as
# WEFT_WORKERS=1: the glibc reference runs in the environment the script was given.
# glibc is required; header and preload run when given (an empty value skips the mode, so a
# caller can pass a path that may not exist yet). Each run is limited by `timeout` (S seconds,
# default $PX_TIMEOUT or 120). The script fails, showing the evidence, if any mode exits
# non-zero, times out, or prints a stdout different from glibc's. stderr is not compared.
set -u

usage() {
	echo "usage: $0 [--timeout S] [--env VAR=VALUE]... --glibc BIN [--header BIN2]" \
		"[--preload LIB] -- [args...]" >&2
	exit 2
}

timeout_s=${PX_TIMEOUT:-120}
glibc_bin=
header_bin=
preload_lib=
# The --env assignments, each single-quoted for eval (a value may hold spaces or quotes).
weft_env=
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) [ $# -ge 2 ] || usage; timeout_s=$2; shift 2 ;;
	--env)
		[ $# -ge 2 ] || usage
		case $2 in
		[A-Za-z_]*=*) ;;
		*) echo "run_three_ways: --env $2: not VAR=VALUE" >&2; exit 2 ;;
		esac
		weft_env="$weft_env '$(printf '%s' "$2" | sed "s/'/'\\\\''/g")'"
		shift 2
		;;
	--glibc) [ $# -ge 2 ] || usage; glibc_bin=$2; shift 2 ;;
	--header) [ $# -ge 2 ] || usage; header_bin=$2; shift 2 ;;
	--preload) [ $# -ge 2 ] || usage; preload_lib=$2; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[ -n "$glibc_bin" ] || usage
for f in "$glibc_bin" ${header_bin:+"$header_bin"}; do
	[ -x "$f" ] || { echo "run_three_ways: $f: not an executable" >&2; exit 2; }
done
if [ -n "$preload_lib" ] && [ ! -r "$preload_lib" ]; then
	echo "run_three_ways: $preload_lib: no such library" >&2
	exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/px_three_ways.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

failed=0

# run MODE CMD... : runs one mode, leaves $tmp/MODE.out and MODE.err, reports a bad exit.
run() {
	mode=$1
	shift
	start=$(date +%s)
	# timeout makes itself a process group with the program; a process the
	# program forked and left behind (a child stuck after a failed fork) is
	# killed with that group once the run is over.
	timeout -k 10 "$timeout_s" "$@" >"$tmp/$mode.out" 2>"$tmp/$mode.err" &
	tpid=$!
	wait $tpid
	rc=$?
	kill -KILL -- -$tpid 2>/dev/null
	secs=$(($(date +%s) - start))
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "FAIL [$mode] timed out after ${timeout_s} s: $*"
	elif [ $rc -ne 0 ]; then
		echo "FAIL [$mode] exit status $rc: $*"
	else
		echo "ok   [$mode] ${secs} s: $*"
		return 0
	fi
	echo "--- [$mode] stdout"
	cat "$tmp/$mode.out"
	echo "--- [$mode] stderr"
	cat "$tmp/$mode.err"
	failed=1
	return 1
}

# compare MODE: diffs MODE's stdout against glibc's.
compare() {
	if diff -u --label "glibc" --label "$1" "$tmp/glibc.out" "$tmp/$1.out" >"$tmp/$1.diff"; then
		echo "same [$1] output identical to glibc"
	else
		echo "FAIL [$1] output differs from glibc:"
		cat "$tmp/$1.diff"
		echo "--- [$1] stderr"
		cat "$tmp/$1.err"
		failed=1
	fi
}

if ! run glibc "$glibc_bin" "$@"; then
	exit 1
fi
echo "--- [glibc] stdout"
cat "$tmp/glibc.out"

# The weft modes run under env with the --env assignments ahead of the command; eval
# re-splits $weft_env into its quoted words and leaves "$@" (the program's arguments) as is.
if [ -n "$header_bin" ] &&
	eval "run header ${weft_env:+env$weft_env} \"\$header_bin\" \"\$@\""; then
	compare header
fi
if [ -n "$preload_lib" ] &&
	eval "run preload env$weft_env LD_PRELOAD=\"\$preload_lib\" \"\$glibc_bin\" \"\$@\""; then
	compare preload
fi
exit $failed
