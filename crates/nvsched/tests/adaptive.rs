//! k2-adaptive against static K2 bounds on the K2 analysis workload (random reads, one
//! host CPU), and its reaction to a step in background load.

use nvsched::run::{run_sim, RunSpec};
use nvsched_report::JobStats;
use nvsched_sim::{NoObserver, SimOutcome};
use nvsched_ssd::load_profile;
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, ParseOptions};
use std::path::Path;

fn k2_job(extra: &str) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/k2-analysis/k2.fio"))
            .unwrap();
    text.replace("${OP}", "randread").replace("${RUNTIME}", "10").replace("${RAMP}", "0") + extra
}

fn run(text: &str, sched: &str) -> (Vec<JobStats>, SimOutcome) {
    let jobs = parse_job_str(text, Path::new("k2.fio"), &HostEnvironment, ParseOptions::default()).unwrap();
    let overrides: Vec<(String, String)> = [
        ("host.cpus", "1"),
        ("host.submit_cpu_ns", "3000"),
        ("host.complete_cpu_ns", "4000"),
        ("nand.precondition", "partial:0.5"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let profile = load_profile("970evoplus-250g", &overrides).unwrap();
    let policy = nvsched_policy::build(sched).unwrap();
    let (report, out) =
        run_sim(RunSpec { jobs: &jobs, policy, profile: &profile, seed: 1 }, &mut NoObserver, 0).unwrap();
    (report.jobs, out)
}

fn rt_p999_us(jobs: &[JobStats]) -> f64 {
    jobs[0].dirs[0].clat_hist.percentile(99.9) as f64 / 1e3
}

fn total_mbps(jobs: &[JobStats]) -> f64 {
    jobs.iter().map(|j| j.dirs[0].io_bytes as f64 / j.runtime.as_secs_f64()).sum::<f64>() / 1e6
}

#[test]
fn adaptive_meets_static_targets_with_most_of_their_bandwidth() {
    let text = k2_job("");
    let statics: Vec<(u32, f64, f64)> = [2u32, 4, 8, 16, 32]
        .iter()
        .map(|b| {
            let (jobs, _) = run(&text, &format!("k2:bound={b}"));
            (*b, rt_p999_us(&jobs), total_mbps(&jobs))
        })
        .collect();
    // (target = static bound's p99.9, slack on the target, share of the best bandwidth).
    // The tightest target, K2-4's own tail, is met only within 10%: the controller's
    // probes of bound 5 add the rarest latencies (see the issue notes).
    for (target_bound, slack, min_share) in [(4u32, 1.10, 0.85), (16, 1.0, 0.90)] {
        let target = statics.iter().find(|s| s.0 == target_bound).unwrap().1;
        // the best static bound meeting the target: the most bandwidth among those at or under it
        let best = statics.iter().filter(|s| s.1 <= target).map(|s| s.2).fold(0.0, f64::max);
        let (jobs, out) = run(&text, &format!("k2-adaptive:target_p999={}ns", (target * 1e3) as u64));
        let (p, bw) = (rt_p999_us(&jobs), total_mbps(&jobs));
        assert!(p <= slack * target, "target K2-{target_bound} {target:.0} us: adaptive p99.9 {p:.0} us");
        assert!(
            bw >= min_share * best,
            "target K2-{target_bound}: adaptive {bw:.0} MB/s vs best static {best:.0} MB/s"
        );
        assert!(out.policy.series("bound").unwrap().points.len() > 20, "the bound over time is reported");
    }
}

#[test]
fn adaptive_reconverges_after_a_step_in_background_load() {
    // two more background readers join at 3 s
    let text = k2_job(
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
