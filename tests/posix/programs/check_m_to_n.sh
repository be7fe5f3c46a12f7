#!/bin/sh
# An unmodified pthread program keeps N threads alive at once under
# LD_PRELOAD=libweft-pthread.so, and /proc/self/status shows no more kernel
# threads than weft's workers and a few: it really runs M:N.
# usage: check_m_to_n.sh LIBWEFT_PTHREAD PX_MANY_THREADS N
set -eu
lib=$1 bin=$2 n=$3
workers=$(nproc)
out=$(WEFT_WORKERS=$workers timeout 120 env LD_PRELOAD="$lib" "$bin" --report-kernel-threads "$n")
echo "$out"
echo "$out" | grep -qx "alive=$n" || { echo "FAIL: not $n threads alive at once"; exit 1; }
kt=$(echo "$out" | sed -n 's/^kernel threads=//p')
[ -n "$kt" ] || { echo "FAIL: no kernel thread count"; exit 1; }
# weft's workers (main's kernel thread is worker 0) and a few of glibc's own.
limit=$((workers + 4))
[ "$kt" -le "$limit" ] || { echo "FAIL: $kt kernel threads for $n pthreads (limit $limit)"; exit 1; }
echo "ok: $n pthreads alive on $kt kernel threads"
