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
else
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		$SUDO dpkg --add-architecture arm64
	fi
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
	echo "install-deps: installed ${missing[*]}"
fi

# Perfetto's generated trace protos and Google's protobuf runtime, from PyPI,
# for the python3 on PATH: the trace_perfetto test reads `weft-trace export`'s
# output with them (skipped where they are missing). Not fatal: the rest of
# the suite does not need them.
if command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1; then
	if python3 -c "import google.protobuf, perfetto.protos.perfetto.trace.perfetto_trace_pb2" 2>/dev/null; then
		echo "install-deps: perfetto and protobuf (PyPI) present"
	elif PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q perfetto protobuf; then
		echo "install-deps: installed perfetto and protobuf (PyPI)"
	else
		echo "install-deps: could not install perfetto and protobuf from PyPI; trace_perfetto will be skipped"
	fi
fi
