//! An experiment as data: `experiments/NAME/manifest.toml` names the job file, device,
//! policies, variants (job-file variables), drive states, repetitions and the paper's
//! numbers and claims, so users can copy and modify a reproduction without code.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub title: String,
    /// The paper, as cited.
    pub paper: String,
    /// Which analysis computes the metrics (k2, prio-nice, tabs, mts, veloces).
    pub kind: String,
    pub device: String,
    #[serde(default)]
    pub device_set: BTreeMap<String, String>,
    /// Job file, relative to the manifest.
    pub job: String,
    pub policies: Vec<String>,
    pub variants: Vec<Variant>,
    pub states: Vec<State>,
    pub full: Mode,
    pub quick: Mode,
    #[serde(default)]
    pub paper_values: Vec<PaperValue>,
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// Free text for the report (model choices, known differences).
    #[serde(default)]
    pub notes: String,
    #[serde(skip)]
    pub dir: PathBuf,
    /// Set when `repro --device`/`--device-set` moved the experiment to another drive: the
    /// manifest's own device and settings, as [`describe_device`] writes them.
    #[serde(skip)]
    pub own_device: Option<String>,
}

/// A profile and its overrides as the reports name them: `NAME (KEY=VALUE, ...)`.
pub fn describe_device(device: &str, set: &BTreeMap<String, String>) -> String {
    format!("{device}{}", settings(set))
}

/// ` (KEY=VALUE, ...)`, or nothing without overrides.
pub fn settings(set: &BTreeMap<String, String>) -> String {
    if set.is_empty() {
        return String::new();
    }
    let v: Vec<String> = set.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(" ({})", v.join(", "))
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// This variant's own job file (default: the manifest's).
    #[serde(default)]
    pub job: Option<String>,
    /// `${VAR}` values for the job file.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// Restricts the policies of this variant (default: all).
    #[serde(default)]
    pub policies: Option<Vec<String>>,
    /// Full-mode `${RUNTIME}` of this variant per state name, instead of the state's
    /// (e.g. reads on a full drive need no 1000 s garbage-collection run).
    #[serde(default)]
    pub full_runtime: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub name: String,
    pub precondition: String,
    /// `${RUNTIME}` in full and quick mode.
    pub runtime: String,
    pub quick_runtime: String,
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mode {
    pub repetitions: u32,
    /// Extra `${VAR}` values in this mode.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
}

/// A number the paper reports for one cell.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperValue {
    /// `variant/state/policy/metric`
    pub cell: String,
    pub value: f64,
}

/// One checkable statement of the paper.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub text: String,
    /// factor: a/b within +-tolerance of `paper`; less: a < b; greater: a > b;
    /// at_least: a >= paper * b; at_most: a <= paper * b; between: lo <= a <= hi;
    /// choice: the value of `a` equals `paper` (e.g. a tuner's chosen bound).
    pub kind: String,
    pub a: String,
    #[serde(default)]
    pub b: Option<String>,
    #[serde(default)]
    pub paper: Option<f64>,
    #[serde(default)]
    pub tolerance: Option<f64>,
    #[serde(default)]
    pub lo: Option<f64>,
    #[serde(default)]
    pub hi: Option<f64>,
}

impl Manifest {
    pub fn load(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join("manifest.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut m: Manifest = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        m.dir = dir.to_path_buf();
        if m.variants.is_empty() || m.states.is_empty() || m.policies.is_empty() {
            return Err(format!("{}: needs variants, states and policies", path.display()));
        }
        for v in &m.variants {
            if let Some(state) = v.full_runtime.keys().find(|k| !m.states.iter().any(|s| &s.name == *k)) {
                return Err(format!(
                    "{}: variant '{}': full_runtime names state '{state}', which is not one of the states",
                    path.display(),
                    v.name
                ));
            }
        }
        for p in m.policies.iter().chain(m.variants.iter().flat_map(|v| v.policies.iter().flatten())) {
            nvsched_policy::build(p).map_err(|e| format!("{}: policy '{p}': {e}", path.display()))?;
        }
        Ok(m)
    }

    /// The experiment on another drive (`repro --device PROFILE --device-set KEY=VALUE`):
    /// `profile` replaces the manifest's device and drops the drive's settings of the
    /// manifest's `device_set`, chosen for that drive, keeping those of the host
    /// (`host.*`: the paper's machine, such as k2-analysis' one CPU); `set` overrides
    /// profile fields on top. The profile is loaded once here, so a bad one fails before
    /// anything runs.
    pub fn on_device(&mut self, profile: Option<&str>, set: &[(String, String)]) -> Result<(), String> {
        if profile.is_none() && set.is_empty() {
            return Ok(());
        }
        self.own_device = Some(describe_device(&self.device, &self.device_set));
        if let Some(profile) = profile {
            self.device = profile.to_string();
            self.device_set.retain(|key, _| key.starts_with("host."));
        }
        self.device_set.extend(set.iter().cloned());
        let on = describe_device(&self.device, &self.device_set);
        let profile = self.profile().map_err(|e| format!("{}: on device {on}: {e}", self.name))?;
        if matches!(profile.model, nvsched_ssd::ModelConfig::Simple(_)) {
            let states: Vec<String> = self.states.iter().map(|s| format!("{} ({})", s.name, s.precondition)).collect();
            return Err(format!(
                "{}: on device {on}: the experiment's drive states, {}, need the flash model (a profile with \
                 [nand]), and '{}' is the simple model (as `calibrate` fits), which has no FTL; start from a \
                 shipped flash profile and set its fields with --device-set",
                self.name,
                states.join(" and "),
                self.device
            ));
        }
        Ok(())
    }

    /// The manifest's profile overrides (`device_set`), in order, as `--device-set` pairs.
    pub fn overrides(&self) -> Vec<(String, String)> {
        self.device_set.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The experiment's profile with its overrides (no drive state).
    pub fn profile(&self) -> Result<nvsched_ssd::DeviceProfile, String> {
        nvsched_ssd::load_profile(&self.device, &self.overrides()).map_err(|e| e.to_string())
    }

    pub fn job_path(&self) -> PathBuf {
        self.dir.join(&self.job)
    }

    pub fn job_path_of(&self, v: &Variant) -> PathBuf {
        self.dir.join(v.job.as_deref().unwrap_or(&self.job))
    }

    pub fn policies_of<'a>(&'a self, v: &'a Variant) -> &'a [String] {
        v.policies.as_deref().unwrap_or(&self.policies)
    }

    pub fn paper_value(&self, cell: &str) -> Option<f64> {
        self.paper_values.iter().find(|p| p.cell == cell).map(|p| p.value)
    }
}
