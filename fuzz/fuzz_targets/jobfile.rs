//! Fuzzes the fio job-file parser: any input must parse or return an error, never panic;
//! whatever parses must build its generators and drivers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvsched_core::Nanos;
use nvsched_workload::jobfile::Environment;
use nvsched_workload::{parse_job_str, IoGenerator, JobDriver, ParseOptions, Region};
use std::path::Path;
use std::sync::Arc;

struct FixedEnv;
impl Environment for FixedEnv {
    fn var(&self, _: &str) -> Option<String> {
        Some("4k".into())
    }
    fn keyword(&self, name: &str) -> Option<u64> {
        (name == "pagesize").then_some(4096)
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let opts = ParseOptions { ignore_unsupported: data.first().is_some_and(|b| b & 1 == 1) };
    if let Ok(file) = parse_job_str(&text, Path::new("fuzz.fio"), &FixedEnv, opts) {
        for spec in file.jobs {
            let spec = Arc::new(spec);
            let region = Region { start: 0, len: 1 << 24 };
            if let Ok(mut g) = IoGenerator::new(&spec, region, 1) {
                for _ in 0..8 {
                    let _ = g.next_unit();
                }
            }
            if let Ok(mut d) = JobDriver::new(spec, 0, region, 1) {
                d.start(Nanos::ZERO);
                let mut out = Vec::new();
                let _ = d.poll(Nanos(1), &mut out);
            }
        }
    }
});
