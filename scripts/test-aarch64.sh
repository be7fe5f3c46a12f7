#!/usr/bin/env bash
# Cross-build the context layer (src/context, src/arch/switch_aarch64_aapcs.S)
# with its cmocka test for aarch64 and run it under qemu-user, so the aarch64
# switch is tested by every `make test` without arm64 hardware.
#
# Needs these Debian packages (scripts/install-deps.sh installs them):
#   gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
#   libcmocka-dev:arm64, through multiarch:
#     dpkg --add-architecture arm64 && apt-get update &&
#     apt-get install libcmocka-dev:arm64
# The test runs against the arm64 multiarch runtime that libcmocka0:arm64
# brings in (libc6:arm64 in /usr/lib/aarch64-linux-gnu), so qemu needs no -L.
#
# Exits non-zero if anything is missing, fails to build, fails a test, or
# runs longer than the timeout.
set -euo pipefail
cd "$(dirname "$0")/.."

CC=${AARCH64_CC:-aarch64-linux-gnu-gcc}
QEMU=${QEMU_AARCH64:-qemu-aarch64}
TIMEOUT=${AARCH64_TEST_TIMEOUT:-120}
OUT=build-aarch64
MULTIARCH_LIB=/usr/lib/aarch64-linux-gnu
CMOCKA_SO=$MULTIARCH_LIB/libcmocka.so
CMOCKA_H=/usr/include/cmocka.h

fail() {
	echo "test-aarch64: FAILED: $*" >&2
	exit 1
}

command -v "$CC" >/dev/null || fail "$CC not found (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"
command -v "$QEMU" >/dev/null || fail "$QEMU not found (apt-get install qemu-user)"
[ -e "$CMOCKA_SO" ] && [ -e "$CMOCKA_H" ] ||
	fail "arm64 cmocka not found (dpkg --add-architecture arm64; apt-get update; apt-get install libcmocka-dev:arm64)"

mkdir -p "$OUT/include"
# The cross compiler does not search /usr/include; expose cmocka.h alone
# rather than every host header.
ln -sf "$CMOCKA_H" "$OUT/include/cmocka.h"

echo "test-aarch64: building $OUT/test_context with $CC"
"$CC" -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter \
	-D_GNU_SOURCE -fvisibility=hidden -Isrc -I"$OUT/include" \
	src/arch/switch_aarch64_aapcs.S src/context/context.c src/util/panic.c \
	tests/arch/test_context.c \
	"$CMOCKA_SO" -Wl,-rpath-link,"$MULTIARCH_LIB" \
	-o "$OUT/test_context" ||
	fail "cross build"

echo "test-aarch64: running under $QEMU (timeout ${TIMEOUT}s)"
status=0
timeout "$TIMEOUT" "$QEMU" "$OUT/test_context" || status=$?
if [ "$status" -eq 124 ]; then
	fail "timed out after ${TIMEOUT}s"
elif [ "$status" -ne 0 ]; then
	fail "test_context exited with status $status"
fi
echo "test-aarch64: PASSED (context switch tests on aarch64, both backends)"
