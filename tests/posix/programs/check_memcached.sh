#!/bin/sh
# memcached (Debian's; -t 4 worker threads, each in libevent's epoll_wait,
# beside its listener, LRU crawler and maintainer threads sleeping in the
# kernel or on condition variables) under LD_PRELOAD=libweft-pthread.so
# answers a client's sets and gets as it does on glibc. The client
# (px_memcached_client, on glibc) checks every reply.
# usage: check_memcached.sh LIBWEFT_PTHREAD PX_MEMCACHED_CLIENT [CONNECTIONS OPS]
# Runs memcached once without weft (the reference), then under weft with its
# default number of workers and with WEFT_WORKERS=1. Everything listens on
# 127.0.0.1 only. Exit 77 (skipped) if memcached is not installed
# (scripts/install-deps.sh installs it).
set -u
lib=$1 client=$2 conns=${3:-8} ops=${4:-2000}
command -v memcached >/dev/null 2>&1 || { echo "memcached not installed: skipped"; exit 77; }
[ -r "$lib" ] || { echo "FAIL: $lib: no such library"; exit 1; }
[ -x "$client" ] || { echo "FAIL: $client: not an executable"; exit 1; }
tmp=$(mktemp -d)
mc_pid=
# stop: ends the memcached this script started, by its pid: SIGTERM, then
# SIGKILL if it is still there after 5 s (one hung under weft may not act on
# SIGTERM).
stop() {
	[ -n "$mc_pid" ] || return 0
	kill "$mc_pid" 2>/dev/null
	i=0
	while kill -0 "$mc_pid" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -9 "$mc_pid" 2>/dev/null
	wait "$mc_pid" 2>/dev/null
	mc_pid=
}
trap 'stop; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
# memcached refuses to run as root unless told which user to be.
user_opt=
[ "$(id -u)" -ne 0 ] || user_opt="-u root"

failed=0
# serve NAME [VAR=VALUE...]: starts memcached in the environment given, runs the
# client against it, stops it; NAME's client output is left in $tmp/NAME.out.
serve() {
	name=$1
	shift
	port=
	# A port that was free a moment ago may be taken by the time memcached
	# binds it (memcached then exits): a few tries.
	for try in 1 2 3; do
		port=$("$client" free-port) || { echo "FAIL: no free port"; exit 1; }
		# env execs memcached, so $! is memcached's own pid.
		env "$@" memcached -t 4 -U 0 -l 127.0.0.1 -p "$port" -m 64 $user_opt \
			>"$tmp/$name.mc" 2>&1 &
		mc_pid=$!
		"$client" wait "$port" 10 2>"$tmp/$name.wait" && break
		# Still running but not listening: stuck, not beaten to the port.
		running=no
		kill -0 "$mc_pid" 2>/dev/null && running=yes
		stop
		port=
		[ $running = no ] || break
	done
	if [ -z "$port" ]; then
		echo "FAIL [$name] memcached did not start listening in 10 s"
		cat "$tmp/$name.wait" "$tmp/$name.mc"
		failed=1
		return 1
	fi
	rc=0
	timeout -k 5 40 "$client" run "$port" "$conns" "$ops" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
		rc=$?
	# memcached must still be alive after the run (not crashed under it).
	alive=yes
	kill -0 "$mc_pid" 2>/dev/null || alive=no
	stop
	if [ $rc -ne 0 ] || [ $alive = no ]; then
		echo "FAIL [$name] client exit status $rc, memcached alive after the run: $alive"
		cat "$tmp/$name.out" "$tmp/$name.err"
		echo "--- memcached's output"
		cat "$tmp/$name.mc"
		failed=1
		return 1
	fi
	echo "ok   [$name] $(cat "$tmp/$name.err")"
}

serve glibc || exit 1
cat "$tmp/glibc.out"
for mode in "weft" "weft_1w"; do
	if [ $mode = weft ]; then
		serve $mode LD_PRELOAD="$lib" || continue
	else
		serve $mode WEFT_WORKERS=1 LD_PRELOAD="$lib" || continue
	fi
	if ! diff -u --label glibc --label "$mode" "$tmp/glibc.out" "$tmp/$mode.out"; then
		echo "FAIL [$mode] client output differs from glibc's"
		failed=1
	fi
done
exit $failed
