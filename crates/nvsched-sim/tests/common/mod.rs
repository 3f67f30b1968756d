//! What the engine's integration tests share: a job file's jobs, a `simple-nvme`
//! profile with overrides, and a run under a policy.

use nvsched_sim::{simulate, NoObserver, Observer, SimInput, SimOutcome};
use nvsched_ssd::{load_profile, DeviceProfile};
use nvsched_workload::jobfile::HostEnvironment;
use nvsched_workload::{parse_job_str, JobSpec, ParseOptions};
use std::path::Path;

pub fn jobs(text: &str) -> Vec<JobSpec> {
    parse_job_str(text, Path::new("test.fio"), &HostEnvironment, ParseOptions::default()).unwrap().jobs
}

pub fn profile(overrides: &[(&str, &str)]) -> DeviceProfile {
    let o: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    load_profile("simple-nvme", &o).unwrap()
}

pub fn run_with(text: &str, sched: &str, p: &DeviceProfile, seed: u64, obs: &mut dyn Observer) -> SimOutcome {
    let built = nvsched_policy::build(sched).unwrap();
    let specs = jobs(text);
    simulate(
        SimInput {
            jobs: &specs,
            device: p.build(seed).unwrap(),
            host: p.host.clone(),
            scheduler: built.scheduler,
            host_cost: built.host_cost,
            seed,
            clock_ms: 0,
        },
        obs,
    )
    .unwrap()
}

#[allow(dead_code)] // not every test file runs on the default profile
pub fn run(text: &str, sched: &str) -> SimOutcome {
    run_with(text, sched, &profile(&[]), 0, &mut NoObserver)
}
