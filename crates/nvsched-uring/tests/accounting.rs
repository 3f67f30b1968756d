//! The statistics of a real-device run account for every request the engine issued,
//! counted in the report or left out of it as fio leaves it out, also where requests
//! fail (injected errors) during warm-up, after the job failed, or as flushes.

use nvsched_uring::{run, UringOptions};
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, ParseOptions};
use std::path::Path;

/// Runs `body` on a new file in a scratch directory, every `every`th completion failing
/// with EIO; returns the requests issued and the statistics' count of them, and each
/// clone's error and total I/Os.
fn run_failing(name: &str, body: &str, every: u64) -> (u64, u64, Vec<(bool, u64)>) {
    let dir = std::env::temp_dir().join(format!("nvsched-accounting-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = format!("[j]\nfilename={}\n{body}", dir.join("data").display());
    let jobs = parse_job_str(&text, Path::new("accounting.fio"), &HostEnvironment, ParseOptions::default()).unwrap();
    let policy = nvsched_policy::build("none").unwrap().scheduler;
    let opts = UringOptions { inject_errors: Some((every, libc::EIO)), ..UringOptions::default() };
    let outcome = run(&jobs.jobs, policy, &opts).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let accounted = outcome.clones.iter().map(|c| c.stats.recorded() + c.stats.discarded()).sum();
    let jobs = outcome.clones.iter().map(|c| (c.stats.error.is_some(), c.stats.total_ios())).collect();
    (outcome.requests, accounted, jobs)
}

#[test]
fn failed_requests_are_counted_or_left_out_but_never_lost() {
    if let Err(why) = nvsched_uring::available() {
        eprintln!("skipped: {why}");
        return;
    }
    // the 10th completion fails the job; the 15 writes still in flight complete after it
    let (issued, accounted, jobs) =
        run_failing("fails", "rw=randwrite\nbs=4k\nsize=1m\ndirect=1\nioengine=io_uring\niodepth=16\n", 10);
    assert_eq!(jobs, [(true, 10)], "fio counts the failed write, and nothing after it");
    assert!(issued > 10);
    assert_eq!(accounted, issued);
    // going on past errors, some during warm-up, some of them flushes
    let (issued, accounted, jobs) = run_failing(
        "goes-on",
        "rw=randwrite\nbs=4k\nsize=1m\ndirect=1\nioengine=io_uring\niodepth=8\nfsync=3\n\
         continue_on_error=all\nramp_time=2ms\nruntime=20ms\ntime_based\n",
        7,
    );
    assert!(!jobs[0].0 && jobs[0].1 > 0, "{jobs:?}");
    assert_eq!(accounted, issued);
}
