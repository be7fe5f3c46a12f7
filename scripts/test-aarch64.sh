#!/usr/bin/env bash
# Cross-build weft for aarch64 and run its tests that qemu-user can run, so
# the aarch64 context switch, the runtime and per-ULT thread-local storage
# (the switch of tpidr_el0) are tested by every `make test` without arm64
# hardware.
#
# Needs these Debian packages (scripts/install-deps.sh installs them):
#   gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
#   qemu-user, and libcmocka-dev:arm64 through multiarch:
#     dpkg --add-architecture arm64 && apt-get update &&
#     apt-get install libcmocka-dev:arm64
# The tests run against the arm64 multiarch runtime that libcmocka0:arm64
# brings in (libc6:arm64 in /usr/lib/aarch64-linux-gnu), so qemu needs no -L.
#
# What runs: the context layer (both backends), thread-local storage per
# ULT (every scheduler and backend), the POSIX layer's thread-locals and
# errno in the header mode, and a cross-section of the runtime (lifecycle,
# synchronization, parking, scheduling, preemption, stack overflow,
# foreign threads). What does not, and why: qemu-user aborts in a fork made
# while threads run (its own assertion, cpu == current_cpu), does not
# apply RLIMIT_AS to the program, and cannot exec an aarch64 binary from an
# emulated one (no binfmt_misc here), which rules out the fork, resource
# limit, LD_PRELOAD and program-running tests.
#
# Exits non-zero if anything is missing, fails to build, fails a test, or
# runs longer than the timeout.
set -euo pipefail
cd "$(dirname "$0")/.."

QEMU=${QEMU_AARCH64:-qemu-aarch64}
TIMEOUT=${AARCH64_TEST_TIMEOUT:-180}
OUT=build-aarch64
TOOLCHAIN=cmake/aarch64-linux-gnu.cmake

fail() {
	echo "test-aarch64: FAILED: $*" >&2
	exit 1
}

for cc in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++; do
	command -v "$cc" >/dev/null ||
		fail "$cc not found (apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross)"
done
command -v "$QEMU" >/dev/null || fail "$QEMU not found (apt-get install qemu-user)"
[ -e /usr/lib/aarch64-linux-gnu/libcmocka.so ] ||
	fail "arm64 cmocka not found (dpkg --add-architecture arm64; apt-get update; apt-get install libcmocka-dev:arm64)"

TESTS=(
	test_context.asm test_context.ucontext
	test_tls.steal_asm test_tls.share_asm test_tls.steal_ucontext test_tls.share_ucontext
	test_px_tls.header
	test_lifecycle.steal_asm test_sync_mutex.share_ucontext test_sync_cond.steal_asm
	test_sync_wait.share_asm test_park.steal_ucontext test_sched.share_asm
	test_handoff.steal_asm test_preempt.steal_asm test_stress.share_ucontext
	test_prio.steal_asm test_stack_fault.steal_asm test_foreign.steal_asm
)
TARGETS=(test_context test_tls tls_lib test_px_tls_weft test_lifecycle test_sync_mutex
	test_sync_cond test_sync_wait test_park test_sched test_handoff test_preempt
	test_stress test_prio test_stack_fault test_foreign)
regex="^($(printf '%s|' "${TESTS[@]}" | sed 's/|$//; s/\./\\./g'))\$"

mkdir -p "$OUT"
echo "test-aarch64: configuring $OUT"
cmake -S . -B "$OUT" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
	-DCMAKE_CROSSCOMPILING_EMULATOR="$QEMU" -DWEFT_BUILD_BENCH=OFF >"$OUT/test-aarch64.log" 2>&1 ||
	fail "configure (see $OUT/test-aarch64.log)"
echo "test-aarch64: building ${#TARGETS[@]} targets"
cmake --build "$OUT" --target "${TARGETS[@]}" >>"$OUT/test-aarch64.log" 2>&1 || fail "cross build (see $OUT/test-aarch64.log)"

echo "test-aarch64: running ${#TESTS[@]} tests under $QEMU"
n=$(ctest --test-dir "$OUT" -N -R "$regex" | sed -n 's/^Total Tests: //p')
[ "$n" = "${#TESTS[@]}" ] || fail "expected ${#TESTS[@]} tests, ctest lists ${n:-none}"
ctest --test-dir "$OUT" -R "$regex" -j2 --timeout "$TIMEOUT" --output-on-failure ||
	fail "tests failed"
echo "test-aarch64: PASSED (${#TESTS[@]} tests of the context layer, per-ULT TLS and the runtime on aarch64)"
