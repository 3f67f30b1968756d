//! Randomised parser harness (the stable-toolchain twin of `fuzz/`): job files built from
//! real option names with random, often invalid, values must parse or fail with an error
//! naming the file, never panic; whatever parses must also build its generators.

use nvsched_core::Nanos;
use nvsched_workload::jobfile::Environment;
use nvsched_workload::{parse_job_str, IoGenerator, JobDriver, ParseOptions, Poll, Region, OPTIONS};
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;

struct NoEnv;
impl Environment for NoEnv {
    fn var(&self, _: &str) -> Option<String> {
        Some("4k".into())
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        (name == "pagesize").then_some(4096)
    }
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,6}",
        "[0-9]{1,4}[kmgKMG]?(i?[bB])?",
        "-?[0-9]{1,3}(\\.[0-9]{1,2})?(us|ms|s|m|h)?",
        "[0-9]{1,3}%",
        "\\([0-9*+/^ -]{1,10}\\)",
        "(zipf|pareto|normal|random|zoned):[0-9.]{0,4}(:[0-9.]{0,3})?",
        "(read|write|randread|randwrite|randrw|rw|trim|sideways)",
        "([0-9]{1,3}k/[0-9]{0,3}:?){1,4}",
        "[0-9]{0,3}k?-[0-9]{0,3}k?,?[0-9]{0,3}",
        "(psync|io_uring|libaio|sync|spdk|null)",
        "\\$\\{[A-Z]{1,4}\\}|\\$[a-z]{1,8}",
        ".{0,12}",
    ]
}

fn line() -> impl Strategy<Value = String> {
    let names: Vec<&'static str> =
        OPTIONS.iter().flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied())).collect();
    prop_oneof![
        8 => (prop::sample::select(names.clone()), value()).prop_map(|(k, v)| format!("{k}={v}")),
        2 => prop::sample::select(names).prop_map(str::to_string),
        1 => "\\[[a-z ]{0,8}\\]?".prop_map(|s| s),
        1 => "[;#].{0,10}",
        1 => ".{0,20}",
    ]
}

fn job_file() -> impl Strategy<Value = String> {
    (prop::collection::vec(line(), 0..12), prop::collection::vec(line(), 0..12))
        .prop_map(|(g, j)| format!("[global]\n{}\n[job]\n{}\n", g.join("\n"), j.join("\n")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(text in job_file(), ignore in any::<bool>()) {
        match parse_job_str(&text, Path::new("fuzz.fio"), &NoEnv, ParseOptions { ignore_unsupported: ignore }) {
            Err(e) => prop_assert!(e.to_string().starts_with("fuzz.fio"), "{}", e),
            Ok(file) => {
                for spec in file.jobs {
                    let spec = Arc::new(spec);
                    let region = Region { start: 0, len: 1 << 30 };
                    if let Ok(mut g) = IoGenerator::new(&spec, region, 1) {
                        for _ in 0..64 {
                            let u = g.next_unit();
                            prop_assert!(u.offset_bytes + u64::from(u.len_bytes) <= 1 << 30);
                        }
                    }
                    if let Ok(mut d) = JobDriver::new(spec, 0, region, 1) {
                        d.start(Nanos::ZERO);
                        let mut out = Vec::new();
                        for _ in 0..16 {
                            if d.poll(Nanos(1000), &mut out) != Poll::Ready { break; }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = parse_job_str(&text, Path::new("fuzz.fio"), &NoEnv, ParseOptions::default());
    }
}
