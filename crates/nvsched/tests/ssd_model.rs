//! The SSD profiles through the whole simulator: datasheet calibration, and the write
//! behaviour of the 970 EVO Plus in its three drive states.

use nvsched::run::{run_sim, RunSpec};
use nvsched_sim::NoObserver;
use nvsched_ssd::{builtin_profiles, load_profile, DeviceCounters};
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, ParseOptions};
use std::path::Path;

#[test]
fn every_profile_reproduces_its_datasheet_within_15_percent() {
    let mut report = String::new();
    let mut bad = Vec::new();
    for p in builtin_profiles().into_iter().filter(|p| p.datasheet.is_some()) {
        let checks = nvsched::calibration::verify(&p, 8).unwrap();
        report.push_str(&nvsched::calibration::table(&p.name, &checks));
        bad.extend(checks.iter().filter(|c| c.error().abs() > 0.15).map(|c| format!("{}: {}", p.name, c.name)));
    }
    println!("{report}");
    assert!(bad.is_empty(), "off by more than 15%: {bad:?}\n{report}");
}

/// Random 4 KiB writes at QD32 on the 970 EVO Plus from `state`; returns per-second
/// MB/s and the device counters.
fn random_writes(state: &str, seconds: u32) -> (Vec<f64>, DeviceCounters) {
    let text = format!(
        "[global]\nfilename=/dev/nvme0n1\ndirect=1\ntime_based\nruntime={seconds}\n\
         [w]\nioengine=io_uring\niodepth=32\nrw=randwrite\nbs=4k\n"
    );
    let jobs = parse_job_str(&text, Path::new("w.fio"), &HostEnvironment, ParseOptions::default()).unwrap();
    let profile = load_profile("970evoplus-250g", &[("nand.precondition".into(), state.into())]).unwrap();
    let policy = nvsched_policy::build("none").unwrap();
    let (report, outcome) =
        run_sim(RunSpec { jobs: &jobs, policy, profile: &profile, seed: 3, drive_states: None }, &mut NoObserver, 0)
            .unwrap();
    let series = report.jobs[0].dirs[1].series.bytes.iter().map(|&b| b as f64 / 1e6).collect();
    (series, outcome.device)
}

#[test]
fn clean_drive_writes_have_no_amplification() {
    let (mbps, dev) = random_writes("clean", 3);
    assert!((dev.write_amplification - 1.0).abs() < 0.02, "WA {}", dev.write_amplification);
    assert_eq!(dev.gc_runs, 0);
    assert!(mbps[0] > 2000.0, "inside TurboWrite: {mbps:?}");
}

#[test]
fn half_full_drive_keeps_a_flat_bandwidth_after_the_cache() {
    let (mbps, dev) = random_writes("partial:0.5", 20);
    // 13 GB of TurboWrite at ~2.3 GB/s: the cache is full within 7 s
    assert!(mbps[0] > 4.0 * mbps[10], "cache transient: {mbps:?}");
    let after: Vec<f64> = mbps[8..19].to_vec();
    let mean = after.iter().sum::<f64>() / after.len() as f64;
    assert!(after.iter().all(|v| (v / mean - 1.0).abs() < 0.10), "flat after the cache: {after:?}");
    assert!((dev.write_amplification - 1.0).abs() < 0.05, "WA {}", dev.write_amplification);
}

#[test]
fn full_drive_bandwidth_collapses_once_gc_starts() {
    let (mbps, dev) = random_writes("full", 30);
    let before_gc = mbps[2];
    let late = mbps[25..29].iter().sum::<f64>() / 4.0;
    assert!(late < 0.4 * before_gc, "GC collapse: {mbps:?}");
    assert!(dev.write_amplification > 1.5, "WA {}", dev.write_amplification);
    assert!(dev.gc_runs > 100);
    let moved = dev.series.iter().find(|s| s.name == "gc_and_fold_pages_moved").unwrap();
    assert!(moved.values[0] < 0.05 * moved.values[25], "GC phase visible per second: {:?}", moved.values);
}

/// Hears the drive's preparation before a run, and asks to stop once it got to `stop_at`.
struct PreparationWatcher {
    heard: Vec<f64>,
    stop_at: f64,
    dispatched: u64,
}

impl nvsched_sim::Observer for PreparationWatcher {
    fn on_preparing(&mut self, done: f64) {
        self.heard.push(done);
    }
    fn on_dispatch(&mut self, _: nvsched_core::Nanos, _: &nvsched_policy::Request, _: u32) {
        self.dispatched += 1;
    }
    fn stop_requested(&mut self) -> bool {
        self.heard.last().is_some_and(|&done| done >= self.stop_at)
    }
}

#[test]
fn a_run_hears_its_drive_prepared_and_may_be_abandoned_before_it_starts() {
    let text = "[r]\nioengine=io_uring\niodepth=8\nrw=randread\nsize=1g\nruntime=100ms\ntime_based\n";
    let jobs = parse_job_str(text, Path::new("r.fio"), &HostEnvironment, ParseOptions::default()).unwrap();
    let profile = load_profile("970evoplus-250g", &[("nand.precondition".into(), "partial:0.2".into())]).unwrap();
    let run = |stop_at: f64| {
        let mut watcher = PreparationWatcher { heard: Vec::new(), stop_at, dispatched: 0 };
        let policy = nvsched_policy::build("none").unwrap();
        let spec = RunSpec { jobs: &jobs, policy, profile: &profile, seed: 1, drive_states: None };
        (run_sim(spec, &mut watcher, 0).map(|(_, outcome)| outcome), watcher)
    };
    let (whole, watcher) = run(f64::INFINITY);
    assert!(!whole.unwrap().interrupted);
    assert!(watcher.heard.len() > 10 && watcher.heard.windows(2).all(|w| w[0] < w[1]), "{:?}", watcher.heard);
    assert_eq!(watcher.heard.last(), Some(&1.0));
    assert!(watcher.dispatched > 0);
    // asked to stop half way through the preparation: the run never starts
    let (abandoned, watcher) = run(0.5);
    assert_eq!(
        abandoned.err().as_deref(),
        Some("profile '970evoplus-250g': interrupted while preparing its partial:0.2 state")
    );
    assert!(watcher.heard.last().is_some_and(|&done| (0.5..1.0).contains(&done)) && watcher.dispatched == 0);
}
