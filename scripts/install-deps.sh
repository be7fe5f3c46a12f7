#!/usr/bin/env bash
# Install everything weft's build, tests and benchmarks need on Debian 12.
# Idempotent: packages already installed are left alone. Run as root (or
# with sudo available).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

# Native build and tests.
PKGS=(build-essential cmake ninja-build pkg-config libcmocka-dev clang-format
      valgrind gdb strace python3 python3-matplotlib)
# Real programs the tests run under LD_PRELOAD (tests/posix/programs).
PKGS+=(ripgrep memcached pbzip2 lbzip2)
# aarch64 tests (scripts/test-aarch64.sh): cross compilers, qemu-user, cmocka for arm64.
PKGS+=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64)
# Peers measured by weft-bench (Go's rows need the go command, which Debian's
# golang package or an upstream install in /usr/local/go provides; without
# it they are left out).
PKGS+=(libboost-context-dev libboost-fiber-dev libst-dev)
# The SystemC 2.3.4 peer of weft-bench sim (bench/sim/systemc_models.cc).
PKGS+=(libsystemc-dev)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all packages present"
	exit 0
fi

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	$SUDO dpkg --add-architecture arm64
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
