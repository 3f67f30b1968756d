# nvsched — the two commands of the quick start, and a few more.
#
#   make repro   the main job: the K2 analysis reproduced on the 970 EVO Plus profile (quick)
#   make test    every test, then rustfmt and clippy (what .ci/run runs)

CARGO ?= cargo

.PHONY: repro repro-full repro-all demo test lint bench fuzz

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

test:
	$(CARGO) test --workspace
	$(CARGO) fmt --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

bench:
	$(CARGO) build --release
	./target/release/nvsched bench

# One minute of libFuzzer on the job-file parser (stable toolchain via RUSTC_BOOTSTRAP).
fuzz:
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run jobfile -- -max_total_time=60 -max_len=2048
