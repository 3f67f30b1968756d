//! Many runs of one job file under several policies and seeds, for `sweep` and `tune`:
//! simulated in parallel, or on real files and devices (io_uring) one after another.

use crate::progress::RunProgress;
use crate::run::{run_sim_whole, run_uring, RunSpec};
use nvsched_report::RunReport;
use nvsched_ssd::{DeviceProfile, DriveStates};
use nvsched_uring::UringOptions;
use nvsched_workload::JobFile;
use rayon::prelude::*;

/// Where the runs happen.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// The simulated drive of this profile; the runs share its preconditioned states.
    Simulated(&'a DeviceProfile),
    /// Real files or devices through io_uring, with these options (each run sets the
    /// seed).
    Device(&'a UringOptions),
}

/// Runs `jobs` under each (policy spec, seed) of `runs` and hands each report to
/// `measure`; the results come back in the order of `runs`, and an error names its run.
///
/// Simulated runs go in parallel. Runs on a device go one at a time, the seeds
/// outermost, so that each policy's repetitions alternate with the others' rather than
/// meeting one stretch of a drifting device (or of its neighbours' noise) each. Files
/// the first run creates stay for the later ones, which may write them as their own,
/// and are removed at the end.
pub fn run_each<T: Send>(
    jobs: &JobFile,
    target: Target<'_>,
    runs: &[(&str, u64)],
    progress: &RunProgress,
    measure: impl Fn(&RunReport) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let named = |(spec, seed): (&str, u64), e: String| run_error(spec, seed, e);
    let results = match target {
        Target::Simulated(profile) => {
            let drive_states = DriveStates::new();
            runs.par_iter()
                .map(|&(spec, seed)| {
                    let policy = nvsched_policy::build(spec).map_err(|e| e.to_string())?;
                    let run = RunSpec { jobs, policy, profile, seed, drive_states: Some(&drive_states) };
                    let (report, _) = run_sim_whole(run)?;
                    progress.inc();
                    measure(&report)
                })
                .enumerate()
                .map(|(i, r)| r.map_err(|e| named(runs[i], e)))
                .collect()
        }
        Target::Device(opts) => on_device(jobs, opts, runs, progress, &measure, &named),
    };
    progress.finish();
    results
}

fn on_device<T>(
    jobs: &JobFile,
    opts: &UringOptions,
    runs: &[(&str, u64)],
    progress: &RunProgress,
    measure: &dyn Fn(&RunReport) -> Result<T, String>,
    named: &dyn Fn((&str, u64), String) -> String,
) -> Result<Vec<T>, String> {
    let mut device = DeviceRuns::new(opts);
    let mut results: Vec<Option<T>> = runs.iter().map(|_| None).collect();
    for i in interleaved(runs) {
        let (spec, seed) = runs[i];
        let report = device.run(jobs, spec, seed, 0).map_err(|e| named(runs[i], e))?;
        results[i] = Some(measure(&report).map_err(|e| named(runs[i], e))?);
        progress.inc();
    }
    Ok(results.into_iter().map(|r| r.expect("every run ran")).collect())
}

/// Runs on real files or devices, one after another. The files the first run creates
/// stay for the later ones, which may write them as their own, and are removed when
/// this is dropped (however the runs end), unless the options keep them.
pub struct DeviceRuns {
    own: OwnFiles,
}

impl DeviceRuns {
    pub fn new(opts: &UringOptions) -> DeviceRuns {
        // the files each run creates join the options' own files, which the guard removes
        DeviceRuns { own: OwnFiles { opts: UringOptions { keep_files: true, ..opts.clone() }, keep: opts.keep_files } }
    }

    /// One run of `jobs` under the policy `spec` with `seed`; an I/O error or a stop
    /// fails it.
    pub fn run(&mut self, jobs: &JobFile, spec: &str, seed: u64, timestamp_ms: u64) -> Result<RunReport, String> {
        let opts = &mut self.own.opts;
        opts.seed = seed;
        let policy = nvsched_policy::build(spec).map_err(|e| e.to_string())?;
        let (report, outcome) = run_uring(jobs, policy, opts, timestamp_ms)?;
        opts.safety.own_files.extend(outcome.targets.iter().filter(|t| t.created).map(|t| t.path.clone()));
        if let Some(e) = outcome.io_errors.first() {
            return Err(format!("I/O error: {e}"));
        }
        if outcome.interrupted {
            return Err(crate::run::RUNS_STOPPED.into());
        }
        Ok(report)
    }
}

/// An error of the run of `spec` with `seed`, naming the run.
pub fn run_error(spec: &str, seed: u64, e: String) -> String {
    format!("{spec} (seed {seed}): {e}")
}

/// The order of the runs on a device: by seed (in the order the seeds first appear),
/// then as given.
pub fn interleaved(runs: &[(&str, u64)]) -> Vec<usize> {
    let mut seeds: Vec<u64> = Vec::new();
    for &(_, seed) in runs {
        if !seeds.contains(&seed) {
            seeds.push(seed);
        }
    }
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| seeds.iter().position(|&s| s == runs[i].1));
    order
}

/// The options of the runs on a device, whose own files (those the runs created) are
/// removed when the runs end however they end, unless the options keep them.
struct OwnFiles {
    opts: UringOptions,
    keep: bool,
}

impl Drop for OwnFiles {
    fn drop(&mut self) {
        if !self.keep {
            for p in &self.opts.safety.own_files {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_runs_go_seed_by_seed() {
        let runs = [("none", 1), ("none", 2), ("k2:bound=4", 1), ("k2:bound=4", 2), ("kyber", 1), ("kyber", 2)];
        assert_eq!(interleaved(&runs), [0, 2, 4, 1, 3, 5]);
    }
}
