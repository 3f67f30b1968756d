//! k2-adaptive against static K2 bounds on the K2 analysis workload and device model
//! (experiments/k2-analysis), and its reaction to a step in background load.

use nvsched::repro::Manifest;
use nvsched::run::{run_sim, RunSpec};
use nvsched_report::JobStats;
use nvsched_sim::{NoObserver, SimOutcome};
use nvsched_ssd::load_profile;
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, ParseOptions};
use std::path::Path;

/// The K2 workload, measured for 10 s after `ramp_s` seconds.
fn k2_job(op: &str, ramp_s: u32, extra: &str) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/k2-analysis/k2.fio"))
            .unwrap();
    text.replace("${OP}", op).replace("${RUNTIME}", "10").replace("${RAMP}", &ramp_s.to_string()) + extra
}

fn run(text: &str, sched: &str) -> (Vec<JobStats>, SimOutcome) {
    let jobs = parse_job_str(text, Path::new("k2.fio"), &HostEnvironment, ParseOptions::default()).unwrap();
    // the reproduction's host and drive model, partially occupied drive
    let manifest =
        Manifest::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/k2-analysis")).unwrap();
    let mut overrides: Vec<(String, String)> = manifest.device_set.into_iter().collect();
    overrides.push(("nand.precondition".into(), "partial:0.5".into()));
    let profile = load_profile("970evoplus-250g", &overrides).unwrap();
    let policy = nvsched_policy::build(sched).unwrap();
    let (report, out) =
        run_sim(RunSpec { jobs: &jobs, policy, profile: &profile, seed: 1, drive_states: None }, &mut NoObserver, 0)
            .unwrap();
    (report.jobs, out)
}

fn dir_of(op: &str) -> usize {
    usize::from(op.contains("write"))
}

fn rt_p999_us(jobs: &[JobStats], dir: usize) -> f64 {
    jobs[0].dirs[dir].clat_hist.percentile(99.9) as f64 / 1e3
}

fn total_mbps(jobs: &[JobStats], dir: usize) -> f64 {
    jobs.iter().map(|j| j.dirs[dir].io_bytes as f64 / j.runtime.as_secs_f64()).sum::<f64>() / 1e6
}

/// O1 with the target set to a static bound's own p99.9: the adaptive policy must meet it
/// (within `slack`: p99.9 is read from fio's histogram, whose buckets are 3% wide here) and
/// keep `min_share` of the bandwidth of the best static bound that meets it.
fn check_o1(op: &str, ramp_s: u32, cases: &[(u32, f64, f64)]) {
    let dir = dir_of(op);
    let text = k2_job(op, ramp_s, "");
    let statics: Vec<(u32, f64, f64)> = [1u32, 2, 4, 8, 16, 32]
        .iter()
        .map(|b| {
            let (jobs, _) = run(&text, &format!("k2:bound={b}"));
            (*b, rt_p999_us(&jobs, dir), total_mbps(&jobs, dir))
        })
        .collect();
    for &(target_bound, slack, min_share) in cases {
        let target = statics.iter().find(|s| s.0 == target_bound).unwrap().1;
        let best = statics.iter().filter(|s| s.1 <= target).map(|s| s.2).fold(0.0, f64::max);
        let (jobs, out) = run(&text, &format!("k2-adaptive:target_p999={}ns", (target * 1e3) as u64));
        let (p, bw) = (rt_p999_us(&jobs, dir), total_mbps(&jobs, dir));
        eprintln!("{op} after {ramp_s} s: target K2-{target_bound} {target:.0} us: adaptive {p:.0} us, {bw:.0} MB/s (best static {best:.0} MB/s)");
        assert!(p <= slack * target, "{op}, target K2-{target_bound} {target:.0} us: adaptive p99.9 {p:.0} us");
        assert!(
            bw >= min_share * best,
            "{op}, target K2-{target_bound}: adaptive {bw:.0} MB/s vs best static {best:.0} MB/s"
        );
        assert!(out.policy.series("bound").unwrap().points.len() > 20, "the bound over time is reported");
    }
}

// Random reads: both targets within one or two histogram buckets, >= 90% of the bandwidth.
#[test]
fn adaptive_o1_random_reads() {
    check_o1("randread", 0, &[(4, 1.07, 0.90), (16, 1.04, 0.90)]);
}

// The same after 25 s of running (the reproduction's quick mode measures from there). At
// K2-4's own tail every miss at bound 4 sets a ceiling there, so the controller spends time
// at 3 (83% of K2-4's bandwidth here). Before `patience`, the recent maxima at bound 1-2
// left no headroom to probe the ceiling again and the bound stayed at 1 for good (47 MB/s,
// 27%): this checks that it does not.
#[test]
fn adaptive_o1_random_reads_in_a_long_run() {
    check_o1("randread", 25, &[(4, 1.03, 0.75), (16, 1.03, 0.90)]);
}

// The same case with a miss budget of one per 1,000 real-time requests: misses at bound 4
// no longer set a ceiling there each time, so it buys bandwidth with tail (seeds 1-4: -1% to
// +40% bandwidth, tails 0.96-1.11x the target; seed 1 here).
#[test]
fn adaptive_o1_miss_budget_trades_tail_for_bandwidth() {
    let text = k2_job("randread", 25, "");
    let (k2_4, _) = run(&text, "k2:bound=4");
    let target_ns = (rt_p999_us(&k2_4, 0) * 1e3) as u64;
    let (strict, _) = run(&text, &format!("k2-adaptive:target_p999={target_ns}ns"));
    let (budget, _) = run(&text, &format!("k2-adaptive:target_p999={target_ns}ns,miss_budget=0.001"));
    let (bw_strict, bw_budget) = (total_mbps(&strict, 0), total_mbps(&budget, 0));
    eprintln!("K2-4's tail {target_ns} ns: strict {bw_strict:.0} MB/s, budget {bw_budget:.0} MB/s, K2-4 {:.0} MB/s, budget tail {:.0} us", total_mbps(&k2_4, 0), rt_p999_us(&budget, 0));
    assert!(bw_budget > 1.1 * bw_strict, "budget {bw_budget:.0} MB/s vs strict {bw_strict:.0} MB/s");
    assert!(bw_budget >= 0.95 * total_mbps(&k2_4, 0));
    assert!(rt_p999_us(&budget, 0) * 1e3 <= 1.12 * target_ns as f64);
}

// Writes (sequential and random behave alike here). In the first ~20 s the jobs write into
// the SLC cache: latencies are almost constant per bound and not monotonic in it (K2-1
// 38.7 us > K2-4 35.6 us > K2-2 29.6 us), so K2-4's tail is not checked there (the
// controller starts at bound 1, whose samples alone put the run's p99.9 at 39 us), only
// K2-16's. After the cache is full (25 s, where the reproduction's quick mode measures),
// the tail grows with the bound and both targets are met.
#[test]
fn adaptive_o1_writes() {
    check_o1("write", 0, &[(16, 1.0, 0.90)]);
}

#[test]
fn adaptive_o1_writes_after_the_slc_cache() {
    check_o1("write", 25, &[(4, 1.0, 0.90), (16, 1.0, 0.90)]);
}

// Sequential reads: K2-16's tail is met within one histogram bucket (3%) with >= 90% of
// its bandwidth. K2-4's tail is not checked: the tail is flat in the bound from 1 to 16
// (179-212 us, not monotonic: K2-2 206 us > K2-4 189 us), so at K2-4's own tail no bound
// leaves the controller headroom to grow; it stays at bound 1 (185 us, 45% of the
// bandwidth).
#[test]
fn adaptive_o1_sequential_reads() {
    check_o1("read", 0, &[(16, 1.03, 0.90)]);
}

#[test]
fn adaptive_reconverges_after_a_step_in_background_load() {
    // two more background readers join at 3 s
    let text = k2_job(
        "randread",
        0,
        "\n[late]\nioengine=libaio\niodepth=32\nnumjobs=2\noffset=64g\noffset_increment=16g\nsize=16g\nstartdelay=3\n",
    );
    let (_, out) = run(&text, "k2-adaptive:target_p999=290us");
    let points = &out.policy.series("bound").unwrap().points;
    let at = |t: f64| points.iter().rev().find(|(ns, _)| (*ns as f64) / 1e9 <= t).map(|p| p.1).unwrap();
    let settled: Vec<f64> = points.iter().filter(|(ns, _)| (*ns as f64) / 1e9 >= 5.0).map(|p| p.1).collect();
    let (lo, hi) = (settled.iter().copied().fold(f64::INFINITY, f64::min), settled.iter().copied().fold(0.0, f64::max));
    // within 2 s of the step the bound stays within one power-of-two band
    assert!(hi <= 2.0 * lo, "bound after 5 s between {lo} and {hi}");
    assert!(at(2.9) > 0.0 && settled.len() >= 5);
}

#[test]
fn adaptive_follows_a_load_step_and_leaves_a_bound_that_does_not_limit_alone() {
    // examples/k2-adaptive-step.fio: one light reader all along, three heavy ones from 3 s
    // to 7 s; the shipped profile as the example runs it
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/k2-adaptive-step.fio");
    let text = std::fs::read_to_string(&path).unwrap();
    let jobs = parse_job_str(&text, &path, &HostEnvironment, ParseOptions::default()).unwrap();
    let profile = load_profile("970evoplus-250g", &[("nand.precondition".into(), "partial:0.5".into())]).unwrap();
    let target_us = 300.0;
    let policy = nvsched_policy::build(&format!("k2-adaptive:target_p999={target_us}us")).unwrap();
    let (report, out) =
        run_sim(RunSpec { jobs: &jobs, policy, profile: &profile, seed: 1, drive_states: None }, &mut NoObserver, 0)
            .unwrap();
    let p = rt_p999_us(&report.jobs, 0);
    assert!(p <= 1.03 * target_us, "real-time p99.9 {p:.0} us over the {target_us} us target");
    let points = &out.policy.series("bound").unwrap().points;
    let between = |from: f64, to: f64| -> Vec<f64> {
        // the bound in force over [from, to): the last value set before `from`, and changes in it
        let mut v: Vec<f64> =
            points.iter().rev().find(|(ns, _)| (*ns as f64) / 1e9 <= from).map(|p| p.1).into_iter().collect();
        v.extend(points.iter().filter(|(ns, _)| (from..to).contains(&((*ns as f64) / 1e9))).map(|p| p.1));
        v
    };
    let light = between(1.0, 3.0);
    assert!(light.iter().all(|&b| b <= 8.0), "with 5 requests at most in flight the bound stays small: {light:?}");
    let heavy = between(5.0, 7.0);
    let (lo, hi) = (heavy.iter().copied().fold(f64::INFINITY, f64::min), heavy.iter().copied().fold(0.0, f64::max));
    assert!(lo > light.iter().copied().fold(0.0, f64::max), "grows once the heavy readers make it limit: {heavy:?}");
    assert!(hi <= 2.0 * lo, "settled within 2 s of the step: bound between {lo} and {hi} from 5 s to 7 s");
}
