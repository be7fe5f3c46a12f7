# Thin wrapper over CMake. The README's two commands:
#   make test    build and run the whole test suite (plus ASan+UBSan and TSan builds)
#   make bench   build in Release and run the benchmarks (micro, the sim table, then io)
# Others: make build, make install PREFIX=..., make format, make format-check,
# make check-layers.

PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE ?= cmake
GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

# A test that times out prints every kernel thread's and every ULT's stack
# before it is killed (tests/core/harness.h).
export WEFT_TEST_GDB ?= $(CURDIR)/tools/weft-gdb.py

.PHONY: all build test test-main test-asan test-tsan test-aarch64 bench release install format format-check check-layers clean

all: build

build:
	$(CMAKE) -S . -B build $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	$(CMAKE) --build build -j $(JOBS)

release:
	$(CMAKE) -S . -B build-release $(GEN) -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF
	$(CMAKE) --build build-release -j $(JOBS)

test: format-check check-layers test-aarch64 test-asan test-tsan test-main

test-main: build
	cd build && ctest --output-on-failure -j $(JOBS) -LE stress

test-asan:
	$(CMAKE) -S . -B build-asan $(GEN) -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=address,undefined -DWEFT_BUILD_BENCH=OFF
	$(CMAKE) --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE "stress|noasan"

# ThreadSanitizer over the core and sync tests and tests/tsan (docs/sanitizers.md);
# any report fails its test (exit status 66). The core tests run in two of
# their four variants (both schedulers, both context backends between them)
# to keep the time down. Left out: the POSIX layer's tests (its preload mode
# and TSan's interceptors cannot both own pthread_*; its header mode passes but
# for 10,000 threads alive at once, past TSan's mappings, at a minute more).
TSAN_RUN = TSAN_OPTIONS="halt_on_error=1 exitcode=66" ctest --output-on-failure -j $(JOBS) -LE stress

test-tsan:
	$(CMAKE) -S . -B build-tsan $(GEN) -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=thread -DWEFT_BUILD_BENCH=OFF
	$(CMAKE) --build build-tsan -j $(JOBS) --target tsan_suite
	cd build-tsan/tests/core && $(TSAN_RUN) -R '\.(steal_asm|share_ucontext)$$'
	cd build-tsan/tests/sync && $(TSAN_RUN)
	cd build-tsan/tests/tsan && $(TSAN_RUN)

test-aarch64:
	scripts/test-aarch64.sh

bench: release
	./build-release/bench/weft-bench micro
	./build-release/bench/weft-bench sim
	./build-release/bench/weft-bench io

install: release
	$(CMAKE) --install build-release --prefix $(PREFIX)

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cc' '*.cpp' 2>/dev/null)

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

# Dependencies point down the layers (docs/ARCHITECTURE.md).
check-layers:
	scripts/check-layers.sh

clean:
	rm -rf build build-asan build-tsan build-release build-aarch64
