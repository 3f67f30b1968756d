//! Fuzzes the fio job-file parser: any input must parse or return an error, never panic;
//! whatever parses must build its generators and drivers. Lines starting with `@` are
//! `--job-set` options (set in every job) instead of lines of the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvsched_core::Nanos;
use nvsched_fuzz::FixedEnv;
use nvsched_workload::{command_line_options, parse_job_str_with, IoGenerator, JobDriver, ParseOptions, Poll, Region};
use std::path::Path;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let opts = ParseOptions { ignore_unsupported: data.first().is_some_and(|b| b & 1 == 1) };
    let (set, lines): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.starts_with('@'));
    let set: Vec<String> = set.iter().map(|l| l[1..].to_string()).collect();
    let Ok(every_job) = command_line_options("--job-set", &set, &FixedEnv) else { return };
    let text = lines.join("\n");
    let Ok(file) = parse_job_str_with(&text, Path::new("fuzz.fio"), &FixedEnv, opts, &every_job) else { return };
    // the simulator's layout of every file on a 1 GiB device: an error or regions, never a panic
    let regions = nvsched_sim::layout::place(&file.jobs, 1 << 30).ok().map(|(_, r)| r);
    for (k, spec) in file.jobs.into_iter().enumerate() {
        let spec = Arc::new(spec);
        let fixed = vec![Region::new(0, 1 << 24)];
        let placed = regions.as_ref().map_or(&fixed, |r| &r[k][0]);
        if let Ok(mut g) = IoGenerator::new(&spec, placed[0], 1) {
            for _ in 0..8 {
                let _ = g.next_unit();
            }
        }
        if let Ok(mut d) = JobDriver::new(spec, 0, placed, 1) {
            d.start(Nanos::ZERO);
            // a few rounds of issuing and completing (every fifth one failing)
            let mut out = Vec::new();
            let mut now = Nanos(1);
            for round in 0..32u64 {
                out.clear();
                match d.poll(now, &mut out) {
                    Poll::Finished => break,
                    Poll::WaitUntil(t) if t > now => now = t,
                    _ => {}
                }
                for (i, u) in out.iter().enumerate() {
                    now = Nanos(now.0 + 1000);
                    d.landed(u.op, u.file, u.offset_bytes, u.len_bytes);
                    if (round + i as u64) % 5 == 4 {
                        let _ = d.on_error(now, u.op, 28);
                    } else {
                        let _ = d.on_complete(now, u.op, u.len_bytes, Nanos(1000));
                    }
                }
                now = Nanos(now.0 + 1000);
            }
        }
    }
});
