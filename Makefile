# nvsched — the two commands of the quick start, and a few more.
#
#   make repro   the main job: the K2 analysis reproduced on the 970 EVO Plus profile (quick)
#   make test    every test (Rust, then the Python package's), then rustfmt, clippy and a
#                build check of the fuzz targets
#                (what .ci/run runs)
#   make python  the Python package (PyO3, built by maturin) into ./.venv, with Ray

CARGO ?= cargo
PYTHON ?= python3
VENV ?= .venv
PY_DEPS = 'maturin>=1.5,<2' 'pytest>=7' 'ray>=2.9'

.PHONY: repro repro-full repro-all demo test test-python python lint bench fuzz

repro:
	$(CARGO) build --release
	./target/release/nvsched repro k2-analysis --quick

repro-full:
	$(CARGO) build --release
	./target/release/nvsched repro k2-analysis

repro-all:
	$(CARGO) build --release
	./target/release/nvsched repro all --quick

demo:
	$(CARGO) build --release
	./target/release/nvsched run examples/k2-mix.fio --sched none
	./target/release/nvsched run examples/k2-mix.fio --sched k2:bound=1

# The fuzz targets live outside the workspace: checking them here keeps them building.
test:
	$(CARGO) test --workspace
	$(MAKE) test-python
	$(CARGO) fmt --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) check -q --manifest-path fuzz/Cargo.toml

$(VENV)/.deps:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check $(PY_DEPS)
	touch $@

python: $(VENV)/.deps
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop -q -m crates/nvsched-py/Cargo.toml

# The CLI binary too: one test checks that Python and the command line report alike.
test-python: python
	$(CARGO) build -q -p nvsched --bin nvsched
	NVSCHED_BIN=$(abspath target/debug/nvsched) $(VENV)/bin/pytest -q crates/nvsched-py/tests

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

bench:
	$(CARGO) build --release
	./target/release/nvsched bench

# A minute of libFuzzer on the job-file parser, one on the trace readers, one on whole
# simulated runs and one on runs on real files through io_uring, in a scratch directory
# under $TMPDIR (stable toolchain via RUSTC_BOOTSTRAP; `cargo install cargo-fuzz` first).
# Simulated runs go without AddressSanitizer (-s none): the simulator is safe Rust, and
# ASan's allocator made them ten times slower; overflow checks and assertions stay on.
# The io_uring engine has unsafe code (buffers the kernel fills), so it keeps ASan.
fuzz:
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run jobfile -- -max_total_time=60 -max_len=2048
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run trace -- -max_total_time=60 -max_len=4096
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run -s none simulate -- -max_total_time=60 -max_len=4096 -timeout=20
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run device -- -max_total_time=60 -max_len=2048 -timeout=20
