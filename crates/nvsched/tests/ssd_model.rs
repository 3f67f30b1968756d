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

/// A 970 PRO profile with its timings knocked off (a slower page read, program and
/// channel, a longer write latency) fits back to its datasheet within 2% on every figure
/// a knob answers for, and the written profile is the fitted one, comments kept.
#[test]
fn fitting_a_detuned_profile_brings_it_back_to_its_datasheet() {
    let text = nvsched_ssd::profile_text("970pro-512g").unwrap();
    let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
    doc["nand"]["t_read_us"] = toml_edit::value(75.0);
    doc["nand"]["t_prog_us"] = toml_edit::value(doc["nand"]["t_prog_us"].as_float().unwrap() * 1.4);
    doc["nand"]["channel_mbps"] = toml_edit::value(doc["nand"]["channel_mbps"].as_float().unwrap() * 0.6);
    doc["nand"]["ctrl_write_latency_ns"] = toml_edit::value(20_000);
    let path = std::env::temp_dir().join(format!("nvsched-fit-{}.toml", std::process::id()));
    std::fs::write(&path, doc.to_string()).unwrap();
    let detuned = load_profile(path.to_str().unwrap(), &[]).unwrap();
    let mut rounds_heard = Vec::new();
    let fit = nvsched::profile_fit::fit(&detuned, 8, 8, |round, _| rounds_heard.push(round)).unwrap();
    std::fs::remove_file(&path).unwrap();
    let far_before = fit.before.iter().filter(|c| c.error().abs() > 0.05).count();
    assert!(far_before >= 3, "the detuning shows: {:?}", fit.before);
    for c in &fit.after {
        assert!(c.error().abs() < 0.02, "{}: {:.0} vs {:.0}", c.name, c.measured, c.cited);
    }
    assert!(fit.unfitted.is_empty(), "every 970 PRO figure has a knob: {:?}", fit.unfitted);
    assert_eq!(rounds_heard, (0..=fit.rounds).collect::<Vec<_>>());
    assert!(fit.rounds <= 6, "{} rounds", fit.rounds);
    // the written profile: the fitted values, the template's comments, the new name
    let written = nvsched::profile_fit::fitted_toml(&doc.to_string(), "pro-fitted", "detuned.toml", &fit).unwrap();
    let reread = nvsched_ssd::parse_profile(&written, &[]).unwrap();
    assert_eq!(reread.name, "pro-fitted");
    let (nvsched_ssd::ModelConfig::Nand(fitted), nvsched_ssd::ModelConfig::Nand(reread)) =
        (&fit.profile.model, &reread.model)
    else {
        panic!("flash profiles")
    };
    assert_eq!(reread.ctrl_write_latency_ns, fitted.ctrl_write_latency_ns);
    assert!((reread.t_read_us - fitted.t_read_us).abs() < 0.01 && (reread.t_prog_us - fitted.t_prog_us).abs() < 0.01);
    assert!(written.starts_with("# pro-fitted: detuned.toml with its timings fitted"), "{written}");
    assert!(written.contains("# 970pro-512g"), "the template's own comments stay");
}

/// A figure after the SLC cache is measured after it even when the simulated drive writes
/// slower than its datasheet says (the run is made as long as the simulated rate needs),
/// so a profile that is off shows by how much.
#[test]
fn the_after_cache_write_figure_is_measured_past_the_cache_of_a_slower_drive() {
    // the datasheet claims twice the in-cache rate the model writes: filling the 13 GB
    // cache at the claimed rate would end the run inside it
    let overrides = [
        ("datasheet.seq_write_mbps".to_string(), "5000".to_string()),
        ("datasheet.rand_write_iops".to_string(), "1200000".to_string()),
    ];
    let profile = load_profile("970evoplus-250g", &overrides).unwrap();
    let checks = nvsched::calibration::verify(&profile, 8).unwrap();
    let figure = |name: &str| checks.iter().find(|c| c.name == name).unwrap();
    let seq = figure(nvsched::calibration::SEQ_WRITE_AFTER_CACHE);
    assert_eq!(seq.state, "clean, cache full");
    assert!((seq.measured / 400.0 - 1.0).abs() < 0.05, "TLC speed, 400 MB/s: {seq:?}");
    let rand = figure(nvsched::calibration::RANDOM_WRITE_AFTER_CACHE);
    assert!((rand.measured / 97_632.0 - 1.0).abs() < 0.05, "as with the shipped datasheet: {rand:?}");
}
