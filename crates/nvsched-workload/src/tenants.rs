//! What every engine derives the same way from a job file: tenants (fio `cgroup` with
//! `cgroup_weight`, and nvsched's `cgroup_io_latency`), each job clone's random seed,
//! which jobs report per priority, and which ones a finishing `exitall` job stops.

use crate::spec::{ExitWhat, JobSpec};
use nvsched_core::rng::mix64;
use nvsched_core::{TenantTree, DEFAULT_WEIGHT};

/// Tenants in order of first appearance, a cgroup's ancestors before it; tenant 0 is
/// "no cgroup" (the root, weight 100).
#[derive(Clone, Debug, Default)]
pub struct Tenants {
    pub tree: TenantTree,
}

impl Tenants {
    /// The tenant of a job and its weight, registering its cgroup (and the cgroups above
    /// it) on first sight.
    pub fn tenant_of(&mut self, spec: &JobSpec) -> (u32, u32) {
        let Some(name) = &spec.cgroup else { return (0, DEFAULT_WEIGHT) };
        let tenant = self.tree.add(name, Some(spec.cgroup_weight));
        if let Some(target) = spec.cgroup_io_latency {
            self.tree.set_latency_target(tenant, target);
        }
        (tenant, self.tree.node(tenant).map_or(DEFAULT_WEIGHT, |n| n.weight))
    }
}

/// The cgroup tree of the jobs, as the engines number it.
pub fn tenant_tree(jobs: &[JobSpec]) -> TenantTree {
    let mut tenants = Tenants::default();
    for spec in jobs {
        tenants.tenant_of(spec);
    }
    tenants.tree
}

/// For each job, the earlier job it waits for (`wait_for`), by index: the parser checked
/// the name, so `None` means it waits for none (or for a job `--section` left out).
pub fn wait_for_targets(jobs: &[JobSpec]) -> Vec<Option<usize>> {
    jobs.iter()
        .enumerate()
        .map(|(i, job)| job.wait_for.as_ref().and_then(|name| jobs[..i].iter().position(|j| &j.name == name)))
        .collect()
}

/// The seed of a job clone's generators: from the job's `randseed`, the clone's ordinal
/// in the job file (1, 2, ...) and the run's seed, so simulated and real runs of the same
/// job file issue the same offsets.
pub fn clone_seed(spec: &JobSpec, ordinal: u64, run_seed: u64) -> u64 {
    mix64(spec.randseed ^ mix64(ordinal)) ^ mix64(run_seed.wrapping_add(0x5eed))
}

/// Each job's reporting group (fio's `groupid`): a job with `stonewall` or `new_group`
/// opens the next one.
pub fn reporting_groups(jobs: &[JobSpec]) -> Vec<u32> {
    let mut group = 0;
    (jobs.iter().enumerate())
        .map(|(i, spec)| {
            if i > 0 && (spec.stonewall || spec.new_group) {
                group += 1;
            }
            group
        })
        .collect()
}

/// For each job: whether its completion latencies are also reported per priority (fio's
/// `prios` blocks), which fio does when its reporting group's I/Os carry more than one
/// priority (jobs with different `prioclass`/`prio`, or `cmdprio_percentage`).
pub fn per_prio_reporting(jobs: &[JobSpec]) -> Vec<bool> {
    let groups = reporting_groups(jobs);
    let mut group_prios: Vec<Vec<nvsched_core::IoPrio>> =
        vec![Vec::new(); groups.last().map_or(0, |g| *g as usize + 1)];
    for (spec, &g) in jobs.iter().zip(&groups) {
        let prios = &mut group_prios[g as usize];
        for p in spec.ioprios() {
            if !prios.contains(&p) {
                prios.push(p);
            }
        }
    }
    groups.iter().map(|&g| group_prios[g as usize].len() > 1).collect()
}

/// The clones (engine indices `0..count`) that clone `finishing` stops as it ends with
/// `exitall`: fio's `exit_what`. `running` are the clones of the current stonewall phase.
pub fn exit_targets(
    what: ExitWhat,
    finishing: u32,
    count: u32,
    reporting_group: impl Fn(u32) -> u32,
    running: &[u32],
) -> Vec<u32> {
    let group = reporting_group(finishing);
    let mut targets: Vec<u32> = match what {
        ExitWhat::Group => (0..count).filter(|&k| reporting_group(k) == group).collect(),
        ExitWhat::Stonewall => running.to_vec(),
        ExitWhat::All => (0..count).collect(),
    };
    targets.retain(|&k| k != finishing);
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroups_become_tenants_in_order_with_the_first_weight() {
        let text = "[global]\nsize=1m\n[none]\n[a]\ncgroup=a\ncgroup_weight=300\n\
                    [b]\ncgroup=b\ncgroup_weight=150\n[a2]\ncgroup=a\ncgroup_weight=999\n";
        let jobs = crate::parse_job_str(
            text,
            std::path::Path::new("t.fio"),
            &crate::HostEnvironment,
            crate::ParseOptions::default(),
        )
        .unwrap();
        let mut t = Tenants::default();
        let got: Vec<(u32, u32)> = jobs.jobs.iter().map(|j| t.tenant_of(j)).collect();
        // a cgroup keeps the weight it was first given
        assert_eq!(got, vec![(0, 100), (1, 300), (2, 150), (1, 300)]);
    }
}
