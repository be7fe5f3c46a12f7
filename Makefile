# Thin wrapper over CMake. The README's two commands:
#   make test    build and run the whole test suite (plus an ASan+UBSan build)
#   make bench   build in Release and run the benchmarks (micro, then the sim table)
# Others: make build, make install PREFIX=..., make format, make format-check.

PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE ?= cmake
GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all build test test-main test-asan test-aarch64 bench release install format format-check clean

all: build

build:
	$(CMAKE) -S . -B build $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	$(CMAKE) --build build -j $(JOBS)

release:
	$(CMAKE) -S . -B build-release $(GEN) -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF
	$(CMAKE) --build build-release -j $(JOBS)

test: format-check test-aarch64 test-asan test-main

test-main: build
	cd build && ctest --output-on-failure -j $(JOBS) -LE stress

test-asan:
	$(CMAKE) -S . -B build-asan $(GEN) -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=address,undefined -DWEFT_BUILD_BENCH=OFF
	$(CMAKE) --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE "stress|noasan"

test-aarch64:
	scripts/test-aarch64.sh

bench: release
	./build-release/bench/weft-bench micro
	./build-release/bench/weft-bench sim

install: release
	$(CMAKE) --install build-release --prefix $(PREFIX)

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cc' '*.cpp' 2>/dev/null)

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf build build-asan build-release build-aarch64
