#!/usr/bin/env bash
# Install weft from a build tree into a temporary prefix, then build the
# README's example against it three ways - pkg-config (shared), pkg-config
# --static, and a CMake project using find_package(weft) - and run each.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/weft.h include/weft/version.h include/weft/sync.h \
	include/weft/compat/pthread.h lib/libweft.a lib/pkgconfig/weft.pc \
	lib/pkgconfig/weft-pthread.pc lib/cmake/weft/weftConfig.cmake bin/weft-bench \
	include/weft/sim.h include/weft/context.h lib/pkgconfig/weft-sim.pc lib/libweftsim.a \
	bin/weft-sim-run; do
	[ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
ls "$prefix"/lib/libweft.so* >/dev/null || { echo "FAIL: libweft.so not installed"; exit 1; }
ls "$prefix"/lib/libweft-pthread.so* >/dev/null ||
	{ echo "FAIL: libweft-pthread.so not installed"; exit 1; }
if [ -n "$(find "$prefix"/include/weft -type f ! -name '*.h')" ]; then
	echo "FAIL: something other than headers under include/weft"; exit 1
fi

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc "$src/examples/hello.c" -o "$tmp/hello_pc" $(pkg-config --cflags --libs weft)
LD_LIBRARY_PATH=$prefix/lib "$tmp/hello_pc" | grep -q "hello from ULT"
echo "ok: pkg-config, shared"

cc "$src/examples/hello.c" -o "$tmp/hello_pc_static" $(pkg-config --cflags weft) \
	"$prefix/lib/libweft.a" $(pkg-config --libs --static weft | sed 's/-lweft//')
"$tmp/hello_pc_static" | grep -q "hello from ULT"
echo "ok: static archive"

cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
	-DEXAMPLE="$src/examples/hello.c" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH=$prefix/lib "$tmp/consumer/hello_shared" | grep -q "hello from ULT"
"$tmp/consumer/hello_static" | grep -q "hello from ULT"
echo "ok: find_package(weft), shared and static"

# A pthread program two ways: compiled against the wrapper headers
# (pkg-config weft-pthread), and unmodified under LD_PRELOAD. Each must run
# its threads as ULTs: pthread_self() of a thread is a weft id (top bit).
cat >"$tmp/px.c" <<'PX'
#include <pthread.h>
#include <stdio.h>
static void *run(void *a) { return (void *)pthread_self(); }
int main(void)
{
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, run, NULL) || pthread_join(t, &r))
		return 1;
	printf("%s\n", (unsigned long)r >> 63 ? "ult" : "kernel thread");
	return 0;
}
PX
cc "$tmp/px.c" -o "$tmp/px_hdr" $(pkg-config --cflags --libs weft-pthread)
[ "$(LD_LIBRARY_PATH=$prefix/lib "$tmp/px_hdr")" = ult ] || { echo "FAIL: weft-pthread header build"; exit 1; }
echo "ok: pkg-config weft-pthread (wrapper headers)"
cc "$tmp/px.c" -o "$tmp/px_plain" -pthread
[ "$("$tmp/px_plain")" = "kernel thread" ] || { echo "FAIL: plain build"; exit 1; }
[ "$(LD_PRELOAD=$prefix/lib/libweft-pthread.so "$tmp/px_plain")" = ult ] ||
	{ echo "FAIL: LD_PRELOAD=libweft-pthread.so"; exit 1; }
echo "ok: LD_PRELOAD=libweft-pthread.so"

# weft-sim: the README's example through pkg-config weft-sim, on two backends.
ls "$prefix"/lib/libweftsim.so* >/dev/null || { echo "FAIL: libweftsim.so not installed"; exit 1; }
cc "$src/examples/sim_hello.c" -o "$tmp/sim_hello" $(pkg-config --cflags --libs weft-sim)
for b in quick hybrid; do
	out=$(WEFT_SIM_BACKEND=$b LD_LIBRARY_PATH=$prefix/lib "$tmp/sim_hello" | tr '\n' ' ')
	[ "$out" = "t=10 got 0 t=20 got 1 t=30 got 2 " ] ||
		{ echo "FAIL: sim_hello on $b printed: $out"; exit 1; }
done
echo "ok: pkg-config weft-sim"
leaks=$(nm -D --defined-only "$prefix"/lib/libweftsim.so | awk '{print $3}' | grep -v '^wsim_' || true)
if [ -n "$leaks" ]; then
	echo "FAIL: non-wsim_ symbols exported from libweftsim: $leaks"; exit 1
fi

# Nothing internal is exported from the shared library.
leaks=$(nm -D --defined-only "$prefix"/lib/libweft.so | awk '{print $3}' | grep -v '^weft_' || true)
if [ -n "$leaks" ]; then
	echo "FAIL: non-weft_ symbols exported: $leaks"; exit 1
fi
echo "ok: only weft_* symbols exported"

# The installed programs find weft's libraries by themselves (run path
# $ORIGIN/../lib), with no LD_LIBRARY_PATH: weft-bench, and the
# weft-sim-run that weft-bench sim starts for each row.
env -u LD_LIBRARY_PATH "$prefix/bin/weft-bench" --help >/dev/null ||
	{ echo "FAIL: installed weft-bench does not run"; exit 1; }
out=$(env -u LD_LIBRARY_PATH "$prefix/bin/weft-sim-run" prodcons quick 1 0.01) ||
	{ echo "FAIL: installed weft-sim-run does not run: $out"; exit 1; }
out=$(env -u LD_LIBRARY_PATH "$prefix/bin/weft-bench" sim --quick --only prodcons --systems quick 2>&1)
if echo "$out" | grep -q "error while loading shared libraries"; then
	echo "FAIL: installed weft-bench sim: $out"; exit 1
fi
# weft-bench runs the Go peer installed beside it, where Go was found.
if [ -x "$prefix/bin/weft-peer-go" ]; then
	out=$(env -u LD_LIBRARY_PATH "$prefix/bin/weft-bench" micro --quick --only create_join \
		--systems go --json 2>&1)
	if ! echo "$out" | grep -q '"system": "go".*"median": [0-9]'; then
		echo "FAIL: installed weft-bench's go row: $out"; exit 1
	fi
fi
# weft-trace finds the weft-trace-scan installed in libexec/weft beside its
# bin/: a program built against the prefix traces itself to a .wft, which
# the installed weft-trace summarises.
if [ -x /usr/bin/python3 ]; then
	[ -x "$prefix/bin/weft-trace" ] && [ -x "$prefix/libexec/weft/weft-trace-scan" ] ||
		{ echo "FAIL: weft-trace or libexec/weft/weft-trace-scan not installed"; exit 1; }
	out=$(cd "$tmp" && env -u LD_LIBRARY_PATH -u WEFT_TRACE_SCAN WEFT_TRACE="$tmp/t.wft" \
		"$tmp/hello_pc_static" 2>&1) || { echo "FAIL: traced hello: $out"; exit 1; }
	out=$(env -u WEFT_TRACE_SCAN PATH=/usr/bin:/bin "$prefix/bin/weft-trace" summary "$tmp/t.wft" 2>&1) ||
		{ echo "FAIL: installed weft-trace summary: $out"; exit 1; }
	echo "$out" | grep -q "program hello_pc_static" ||
		{ echo "FAIL: installed weft-trace summary: $out"; exit 1; }
fi
echo "ok: installed programs run from the prefix"
echo "PASSED"
