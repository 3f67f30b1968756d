//! The list of policies and how one is built from `ID[:key=value,...]`.

use crate::params::{parse_duration, ParamError, ParamKind, ParamSpec, Params};
use crate::policies;
use crate::scheduler::{HostCost, Scheduler};
use nvsched_core::{Nanos, TenantTree};
use std::fmt;

/// A check across a policy's parameters.
pub type Validate = fn(&Params) -> Result<(), String>;

/// What a policy makes of the cgroups the jobs are in (their tree: tenants 1, 2, ... in
/// order): a warning when they leave it nothing to do, such as a protected cgroup that no
/// job is in. Engines pass the warning on; the run goes ahead.
pub type CheckCgroups = fn(&Params, &TenantTree) -> Option<String>;

/// How a policy treats cgroups (`cgroup=`, `cgroup_weight=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupModel {
    /// It does not schedule by cgroup.
    Ignored,
    /// Every cgroup is a group directly below the root: `a/b` is a sibling of `a`.
    Flat,
    /// Cgroups share within their parent's share, as cgroup v2 nests them.
    Nested,
}

/// Everything known about a policy before building it: the single source for
/// `--sched` parsing, validation and the `nvsched policies` listing.
pub struct PolicyInfo {
    pub id: &'static str,
    /// One line: what it does.
    pub summary: &'static str,
    /// Where it comes from (paper or kernel file).
    pub source: &'static str,
    /// Choices nvsched made where the source is silent.
    pub notes: &'static str,
    pub params: &'static [ParamSpec],
    /// Default host CPU/path cost per dispatch and per completion.
    pub host_cost: HostCost,
    /// A complete `--sched` value for this policy (listings, tests).
    pub example: &'static str,
    /// Checks across parameters (e.g. one of two must be given).
    pub validate: Option<Validate>,
    /// For policies that schedule by cgroup: a warning when the jobs' cgroups leave the
    /// policy nothing to do.
    pub check_cgroups: Option<CheckCgroups>,
    /// How it sees the jobs' cgroups.
    pub cgroups: CgroupModel,
    pub build: fn(&Params) -> Box<dyn Scheduler>,
}

/// Every policy nvsched ships, in listing order.
pub static POLICIES: &[&PolicyInfo] = &[
    &policies::none::INFO,
    &policies::mq_deadline::INFO,
    &policies::kyber::INFO,
    &policies::cfq::INFO,
    &policies::bfq::INFO,
    &policies::iolatency::INFO,
    &policies::iocost::INFO,
    &policies::k2::INFO,
    &policies::k2_adaptive::INFO,
    &policies::prio_token::INFO,
    &policies::veloces::INFO,
    &policies::tabs::INFO,
    &policies::mts::INFO,
];

/// Parameters every policy accepts, on top of its own.
pub static COMMON_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "dispatch_cost",
        kind: ParamKind::Duration { min: Nanos::ZERO, max: Nanos::from_ms(10) },
        default: "policy's own",
        help: "host CPU/path time charged per dispatch",
    },
    ParamSpec {
        name: "complete_cost",
        kind: ParamKind::Duration { min: Nanos::ZERO, max: Nanos::from_ms(10) },
        default: "policy's own",
        help: "host CPU/path time charged per completion",
    },
];

/// Other names Linux accepts for a policy, so job files and sysfs habits work as they are:
/// `deadline` is mq-deadline's elevator alias; `noop` is the legacy single-queue FIFO that
/// blk-mq's `none` replaced.
pub static ALIASES: &[(&str, &str)] = &[("deadline", "mq-deadline"), ("noop", "none")];

/// The jobs' cgroups in words, for [`CheckCgroups`] warnings: "no cgroup",
/// "1 cgroup (db)", "2 cgroups (a, b)".
pub(crate) fn cgroup_list(tree: &TenantTree) -> String {
    let cgroups: Vec<&str> = tree.cgroups().map(|(_, n)| n.name.as_str()).collect();
    match cgroups.len() {
        0 => "no cgroup".to_string(),
        1 => format!("1 cgroup ({})", cgroups[0]),
        n => format!("{n} cgroups ({})", cgroups.join(", ")),
    }
}

/// The policy named `id` or one of its aliases.
pub fn find(id: &str) -> Option<&'static PolicyInfo> {
    let id = ALIASES.iter().find(|(alias, _)| *alias == id).map_or(id, |(_, real)| real);
    POLICIES.iter().copied().find(|p| p.id == id)
}

/// A policy ready to run.
pub struct BuiltPolicy {
    pub scheduler: Box<dyn Scheduler>,
    pub host_cost: HostCost,
    pub info: &'static PolicyInfo,
    pub params: Params,
    /// The spec as given, normalised (`k2:bound=1`).
    pub spec: String,
}

impl BuiltPolicy {
    /// The policy's warnings about the jobs' cgroups, if any.
    pub fn check_cgroups(&self, tree: &TenantTree) -> Vec<String> {
        let own = self.info.check_cgroups.and_then(|check| check(&self.params, tree));
        let nested = tree.cgroups().find_map(|(_, c)| c.name.rsplit_once('/').map(|(parent, _)| (&c.name, parent)));
        let flattened = nested.filter(|_| self.info.cgroups == CgroupModel::Flat).map(|(cgroup, parent)| {
            let nesting: Vec<&str> =
                POLICIES.iter().filter(|p| p.cgroups == CgroupModel::Nested).map(|p| p.id).collect();
            let nesting = match nesting.split_last() {
                Some((last, [])) => last.to_string(),
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                None => "none".to_string(),
            };
            format!(
                "policy '{}' puts every cgroup directly below the root: {cgroup} shares with the other cgroups as \
                 their sibling, not within '{parent}' ({nesting} nest cgroups)",
                self.info.id
            )
        });
        own.into_iter().chain(flattened).collect()
    }
}

impl fmt::Debug for BuiltPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltPolicy").field("spec", &self.spec).finish()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicySpecError {
    UnknownPolicy { id: String, known: Vec<&'static str> },
    Param(ParamError),
}

impl fmt::Display for PolicySpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySpecError::UnknownPolicy { id, known } => {
                write!(f, "unknown policy '{id}'; known policies: {}", known.join(", "))
            }
            PolicySpecError::Param(e) => e.fmt(f),
        }
    }
}
impl std::error::Error for PolicySpecError {}

/// Builds a policy from `ID` or `ID:key=value,key=value`.
pub fn build(spec: &str) -> Result<BuiltPolicy, PolicySpecError> {
    let spec = spec.trim();
    let (id, list) = spec.split_once(':').unwrap_or((spec, ""));
    let info = find(id).ok_or_else(|| PolicySpecError::UnknownPolicy {
        id: id.to_string(),
        known: POLICIES.iter().map(|p| p.id).collect(),
    })?;
    let mut host_cost = info.host_cost;
    let mut own = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = item.split_once('=').unwrap_or((item, ""));
        let slot = match key.trim() {
            "dispatch_cost" => &mut host_cost.dispatch,
            "complete_cost" => &mut host_cost.complete,
            _ => {
                own.push(item);
                continue;
            }
        };
        *slot = parse_duration(value).map_err(|why| {
            PolicySpecError::Param(ParamError(format!(
                "policy '{}', parameter '{}': {why}; accepted: {}",
                info.id,
                key.trim(),
                COMMON_PARAMS[0].accepted()
            )))
        })?;
    }
    let params = Params::parse(info.id, info.params, &own.join(",")).map_err(PolicySpecError::Param)?;
    if let Some(validate) = info.validate {
        validate(&params).map_err(|e| PolicySpecError::Param(ParamError(e)))?;
    }
    Ok(BuiltPolicy {
        scheduler: (info.build)(&params),
        host_cost,
        info,
        params,
        spec: if list.trim().is_empty() { info.id.to_string() } else { format!("{}:{}", info.id, list.trim()) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_every_policy_with_defaults() {
        for info in POLICIES {
            let built = build(info.example).unwrap_or_else(|e| panic!("{}: {e}", info.id));
            assert_eq!(built.scheduler.id(), info.id);
            assert_eq!(built.host_cost, info.host_cost);
        }
    }

    #[test]
    fn unknown_policy_lists_known_ones() {
        let e = build("cfqq").unwrap_err().to_string();
        assert!(e.contains("unknown policy 'cfqq'") && e.contains("none"), "{e}");
    }

    #[test]
    fn cost_override() {
        let b = build("none:dispatch_cost=2us,complete_cost=1us").unwrap();
        assert_eq!(b.host_cost, HostCost { dispatch: Nanos(2000), complete: Nanos(1000) });
        let e = build("none:dispatch_cost=2").unwrap_err().to_string();
        assert!(e.contains("needs a unit"), "{e}");
    }

    #[test]
    fn linux_aliases_build_the_real_policy() {
        let b = build("deadline:fifo_batch=8").unwrap();
        assert_eq!((b.info.id, b.spec.as_str()), ("mq-deadline", "mq-deadline:fifo_batch=8"));
        assert_eq!(build("noop").unwrap().scheduler.id(), "none");
        for (alias, real) in ALIASES {
            assert!(find(alias).is_some_and(|p| p.id == *real) && find(real).is_some(), "{alias}");
        }
    }

    #[test]
    fn ids_are_unique() {
        let mut ids: Vec<_> = POLICIES.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), POLICIES.len());
    }
}
