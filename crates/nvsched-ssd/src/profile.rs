//! Device profiles: TOML files (shipped ones are built in) describing the host path and
//! one device model, overridable field by field (`--device-set simple.units=8`).

use crate::nand::config::NandConfig;
use crate::nand::{DriveStates, NandDevice, Watch};
use crate::simple::{SimpleConfig, SimpleDevice};
use crate::Device;
use nvsched_core::Nanos;
use serde::Deserialize;
use std::fmt;
use std::path::Path;

/// The shipped profiles: (name, TOML text).
const BUILTIN: &[(&str, &str)] = &[
    ("970evoplus-250g", include_str!("../../../profiles/970evoplus-250g.toml")),
    ("970pro-512g", include_str!("../../../profiles/970pro-512g.toml")),
    ("960pro-512g", include_str!("../../../profiles/960pro-512g.toml")),
    ("840pro-256g", include_str!("../../../profiles/840pro-256g.toml")),
    ("enterprise-nvme", include_str!("../../../profiles/enterprise-nvme.toml")),
    ("simple-nvme", include_str!("../../../profiles/simple-nvme.toml")),
];

/// Names and one-line descriptions of the shipped profiles.
pub fn builtin_profiles() -> Vec<DeviceProfile> {
    BUILTIN
        .iter()
        .map(|(name, text)| {
            parse_profile(text, &[]).unwrap_or_else(|e| panic!("built-in profile '{name}' is invalid: {e}"))
        })
        .collect()
}

/// The host side of the I/O path, part of a profile because calibration measures it too.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostPath {
    /// Application → scheduler (system call, block layer).
    pub submit_ns: u64,
    /// Device completion → application (interrupt, completion path).
    pub complete_ns: u64,
    /// Scheduler tags per device (`nr_requests`): requests allocated at once.
    #[serde(default = "default_nr_requests")]
    pub nr_requests: u32,
    /// Largest request the block layer builds by merging (`max_sectors_kb`).
    #[serde(default = "default_max_merge_bytes")]
    pub max_merge_bytes: u32,
    /// Host CPUs shared by all jobs for I/O processing; 0 = no CPU contention (the paths
    /// are pure latencies). With CPUs, submissions, dispatches and completions queue for
    /// a CPU (first come, first served).
    #[serde(default)]
    pub cpus: u32,
    /// CPU time per request on submission (system call, block layer), with `cpus` > 0.
    #[serde(default)]
    pub submit_cpu_ns: u64,
    /// CPU time per request on completion (interrupt, reaping), with `cpus` > 0.
    #[serde(default)]
    pub complete_cpu_ns: u64,
    /// The page cache that buffered jobs (`direct=0`) go through; off (`size_bytes = 0`)
    /// unless set, and then buffered I/O is simulated as direct I/O.
    #[serde(default)]
    pub page_cache: PageCacheConfig,
}

/// A page cache in front of the device, as Linux's for buffered I/O: writes dirty pages
/// and return, a flusher writes them back in the background, reads of cached pages do
/// not reach the device, and a sequential read miss reads ahead.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PageCacheConfig {
    /// Memory for cached pages; 0 turns the page cache off.
    pub size_bytes: u64,
    /// Background writeback starts above this share of the cache dirty
    /// (`vm.dirty_background_ratio`).
    pub dirty_background_percent: u32,
    /// Writers wait (`balance_dirty_pages`) while this share of the cache is dirty or
    /// under writeback (`vm.dirty_ratio`).
    pub dirty_percent: u32,
    /// Pages dirty for longer than this are written back even below the background
    /// threshold (`vm.dirty_expire_centisecs`).
    pub dirty_expire_ms: u64,
    /// How often the flusher looks for such pages (`vm.dirty_writeback_centisecs`).
    pub writeback_interval_ms: u64,
    /// Background writeback requests in flight at most (the block layer's writeback
    /// throttling keeps it shallow so reads are not starved).
    pub writeback_depth: u32,
    /// The largest read-ahead window (`read_ahead_kb`); the first is smaller, and each
    /// one after grows towards it.
    pub readahead_bytes: u32,
    /// Copying between the cache and the application, per KiB (memory bandwidth).
    pub copy_ns_per_kib: u64,
}

impl Default for PageCacheConfig {
    fn default() -> Self {
        PageCacheConfig {
            size_bytes: 0,
            dirty_background_percent: 10,
            dirty_percent: 20,
            dirty_expire_ms: 30_000,
            writeback_interval_ms: 5_000,
            writeback_depth: 16,
            readahead_bytes: 128 * 1024,
            copy_ns_per_kib: 100,
        }
    }
}

fn default_nr_requests() -> u32 {
    1023
}
fn default_max_merge_bytes() -> u32 {
    128 * 1024
}

impl HostPath {
    pub fn submit(&self) -> Nanos {
        Nanos(self.submit_ns)
    }
    pub fn complete(&self) -> Nanos {
        Nanos(self.complete_ns)
    }
}

/// Which model a profile uses, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelConfig {
    Simple(SimpleConfig),
    Nand(Box<NandConfig>),
}

/// The public figures a profile is calibrated to (`[datasheet]`), checked by
/// `nvsched devices --verify` and the calibration tests.
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Datasheet {
    /// Sequential 128 KiB read, QD32.
    pub seq_read_mbps: f64,
    /// Sequential 128 KiB write, QD32 (inside the SLC cache when there is one).
    pub seq_write_mbps: f64,
    /// Sequential write once the SLC cache is full.
    pub seq_write_after_cache_mbps: Option<f64>,
    /// Random 4 KiB read, QD32 x 4 jobs.
    pub rand_read_iops: f64,
    /// Random 4 KiB write, QD32 x 4 jobs (inside the cache, or in `rand_write_state`).
    pub rand_write_iops: f64,
    pub rand_write_after_cache_iops: Option<f64>,
    /// Drive state the random-write figure refers to: "clean" or "full".
    #[serde(default = "clean_state")]
    pub rand_write_state: String,
    /// Random 4 KiB read at QD1.
    pub qd1_read_iops: f64,
    pub qd1_write_iops: Option<f64>,
}

impl Datasheet {
    /// Every figure by its field name in the profile (None: not given).
    pub fn figures(&self) -> [(&'static str, Option<f64>); 8] {
        [
            ("seq_read_mbps", Some(self.seq_read_mbps)),
            ("seq_write_mbps", Some(self.seq_write_mbps)),
            ("seq_write_after_cache_mbps", self.seq_write_after_cache_mbps),
            ("rand_read_iops", Some(self.rand_read_iops)),
            ("rand_write_iops", Some(self.rand_write_iops)),
            ("rand_write_after_cache_iops", self.rand_write_after_cache_iops),
            ("qd1_read_iops", Some(self.qd1_read_iops)),
            ("qd1_write_iops", self.qd1_write_iops),
        ]
    }

    /// Every figure a positive number, and the random-write state one of the two.
    pub fn check(&self) -> Result<(), ProfileError> {
        if let Some((name, value)) =
            self.figures().iter().find_map(|(n, v)| v.filter(|v| !(v.is_finite() && *v > 0.0)).map(|v| (n, v)))
        {
            return Err(ProfileError(format!("datasheet.{name} = {value}: a figure is a positive number")));
        }
        if !["clean", "full"].contains(&self.rand_write_state.as_str()) {
            return Err(ProfileError(format!(
                "datasheet.rand_write_state = '{}': expected clean or full",
                self.rand_write_state
            )));
        }
        Ok(())
    }
}

fn clean_state() -> String {
    "clean".into()
}

/// A parsed, validated profile.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceProfile {
    pub name: String,
    pub description: String,
    pub capacity_bytes: u64,
    pub queue_depth: u32,
    pub host: HostPath,
    pub model: ModelConfig,
    pub datasheet: Option<Datasheet>,
    /// The overrides applied, as given.
    pub overrides: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    description: String,
    capacity_bytes: u64,
    queue_depth: u32,
    host: HostPath,
    simple: Option<SimpleConfig>,
    nand: Option<NandConfig>,
    datasheet: Option<Datasheet>,
}

impl DeviceProfile {
    /// Builds a fresh device in its initial (preconditioned) state; `seed` drives the
    /// random parts of preconditioning.
    pub fn build(&self, seed: u64) -> Result<Box<dyn Device>, ProfileError> {
        self.build_with(seed, None, &mut |_| true)
    }

    /// As `build`; with `states`, a preconditioned drive state built before for the same
    /// configuration and seed is copied instead of built again (for sweeps). `watch`
    /// hears how far preconditioning got (seconds to a minute for a full drive) and may
    /// stop it, an error.
    pub fn build_with(
        &self,
        seed: u64,
        states: Option<&DriveStates>,
        watch: &mut Watch<'_>,
    ) -> Result<Box<dyn Device>, ProfileError> {
        Ok(match &self.model {
            ModelConfig::Simple(cfg) => Box::new(SimpleDevice::new(cfg.clone(), self.queue_depth, self.capacity_bytes)),
            ModelConfig::Nand(cfg) => {
                let (cfg, qd, cap) = ((**cfg).clone(), self.queue_depth, self.capacity_bytes);
                let device = match states {
                    Some(states) => NandDevice::new_from(cfg, qd, cap, seed, states, watch),
                    None => NandDevice::new(cfg, qd, cap, seed, watch),
                };
                Box::new(device.map_err(|e| ProfileError(format!("profile '{}': {e}", self.name)))?)
            }
        })
    }

    pub fn model_name(&self) -> &'static str {
        match self.model {
            ModelConfig::Simple(_) => "simple",
            ModelConfig::Nand(_) => "nand",
        }
    }

    /// The drive state a run starts from.
    pub fn precondition(&self) -> &str {
        match &self.model {
            ModelConfig::Simple(_) => "clean",
            ModelConfig::Nand(cfg) => &cfg.precondition,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileError(pub String);

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ProfileError {}

/// Whether `name` is a shipped profile's name (which [`load_profile`] takes before a file
/// of that name).
pub fn is_builtin_profile(name: &str) -> bool {
    BUILTIN.iter().any(|(n, _)| *n == name)
}

/// Loads a shipped profile by name, or a TOML file by path, and applies `key=value`
/// overrides (dotted keys address sections: `host.submit_ns=2000`).
pub fn load_profile(name_or_path: &str, overrides: &[(String, String)]) -> Result<DeviceProfile, ProfileError> {
    parse_named(name_or_path, &profile_text(name_or_path)?, overrides)
}

/// As [`load_profile`] without overrides, with the TOML text it was read from (for tools
/// that write an edited copy of it), reading a file once.
pub fn load_profile_and_text(name_or_path: &str) -> Result<(DeviceProfile, String), ProfileError> {
    let text = profile_text(name_or_path)?;
    Ok((parse_named(name_or_path, &text, &[])?, text))
}

/// [`parse_profile`], its errors naming the shipped profile or the file.
fn parse_named(name_or_path: &str, text: &str, overrides: &[(String, String)]) -> Result<DeviceProfile, ProfileError> {
    parse_profile(text, overrides).map_err(|e| match is_builtin_profile(name_or_path) {
        true => ProfileError(format!("profile '{name_or_path}': {e}")),
        false => ProfileError(format!("{name_or_path}: {e}")),
    })
}

/// The TOML text of a shipped profile, or of a profile file.
pub fn profile_text(name_or_path: &str) -> Result<String, ProfileError> {
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return Ok(text.to_string());
    }
    let path = Path::new(name_or_path);
    if path.exists() {
        return std::fs::read_to_string(path)
            .map_err(|e| ProfileError(format!("cannot read profile '{}': {e}", path.display())));
    }
    let known: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    Err(ProfileError(format!(
        "unknown device '{name_or_path}': not a shipped profile ({}) nor a TOML file",
        known.join(", ")
    )))
}

/// Parses profile TOML text and applies overrides.
pub fn parse_profile(text: &str, overrides: &[(String, String)]) -> Result<DeviceProfile, ProfileError> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| ProfileError(e.to_string()))?;
    for (key, value) in overrides {
        set_dotted(&mut table, key, value)?;
    }
    let file: ProfileFile = table.try_into().map_err(|e: toml::de::Error| ProfileError(e.to_string()))?;
    let model = match (file.simple, file.nand) {
        (Some(cfg), None) => {
            if cfg.units == 0 || cfg.stripe_bytes == 0 {
                return Err(ProfileError("simple.units and simple.stripe_bytes must be > 0".into()));
            }
            ModelConfig::Simple(cfg)
        }
        (None, Some(cfg)) => {
            crate::nand::config::Geometry::new(&cfg, file.capacity_bytes).map_err(ProfileError)?;
            crate::nand::Precondition::parse(&cfg.precondition).map_err(ProfileError)?;
            ModelConfig::Nand(Box::new(cfg))
        }
        (Some(_), Some(_)) => return Err(ProfileError("a profile has one model section: [simple] or [nand]".into())),
        (None, None) => return Err(ProfileError("the profile has no model section ([simple] or [nand])".into())),
    };
    if let Some(ds) = &file.datasheet {
        ds.check()?;
    }
    if file.queue_depth == 0 {
        return Err(ProfileError("queue_depth must be > 0".into()));
    }
    if file.host.nr_requests == 0 {
        return Err(ProfileError("host.nr_requests must be > 0".into()));
    }
    let cache = &file.host.page_cache;
    if cache.size_bytes > 0 {
        if !(1..=100).contains(&cache.dirty_percent) || cache.dirty_background_percent > cache.dirty_percent {
            return Err(ProfileError(
                "host.page_cache: dirty_percent must be 1-100 and dirty_background_percent at most dirty_percent"
                    .into(),
            ));
        }
        if cache.writeback_depth == 0 || cache.writeback_interval_ms == 0 {
            return Err(ProfileError("host.page_cache: writeback_depth and writeback_interval_ms must be > 0".into()));
        }
        if cache.size_bytes < 1 << 20 {
            return Err(ProfileError("host.page_cache.size_bytes must be 0 (off) or at least 1 MiB".into()));
        }
    }
    if file.capacity_bytes < 1 << 20 {
        return Err(ProfileError("capacity_bytes must be at least 1 MiB".into()));
    }
    Ok(DeviceProfile {
        name: file.name,
        description: file.description,
        capacity_bytes: file.capacity_bytes,
        queue_depth: file.queue_depth,
        host: file.host,
        model,
        datasheet: file.datasheet,
        overrides: overrides.to_vec(),
    })
}

/// Sets `a.b.c = value` in a TOML table; the value is read as a TOML literal (number,
/// boolean, quoted string), or as a bare string if it is none of those.
fn set_dotted(table: &mut toml::Table, key: &str, value: &str) -> Result<(), ProfileError> {
    let parsed: toml::Value = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let mut parts: Vec<&str> = key.split('.').collect();
    let last =
        parts.pop().filter(|s| !s.is_empty()).ok_or_else(|| ProfileError(format!("empty override key '{key}'")))?;
    let mut cur = table;
    for (depth, part) in parts.into_iter().enumerate() {
        // a subsection the file leaves out (`host.page_cache`) starts empty; an unknown
        // one then fails deserialisation by name
        if depth > 0 && !cur.contains_key(part) {
            cur.insert(part.to_string(), toml::Value::Table(toml::Table::new()));
        }
        cur = match cur.get_mut(part) {
            Some(toml::Value::Table(t)) => t,
            _ => return Err(ProfileError(format!("override '{key}': the profile has no section '{part}'"))),
        };
    }
    match cur.get(last) {
        // a field the file leaves at its default; unknown names fail deserialisation
        None => {
            cur.insert(last.to_string(), parsed);
            Ok(())
        }
        Some(old)
            if std::mem::discriminant(old) != std::mem::discriminant(&parsed)
                && !(old.is_float() && parsed.is_integer()) =>
        {
            let kind = old.type_str();
            let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
            Err(ProfileError(format!("override '{key}={value}': expected {article} {kind}")))
        }
        Some(old) => {
            let new = if old.is_float() {
                toml::Value::Float(parsed.as_integer().map_or_else(|| parsed.as_float().unwrap_or(0.0), |i| i as f64))
            } else {
                parsed
            };
            cur.insert(last.to_string(), new);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        let all = builtin_profiles();
        assert!(!all.is_empty());
        assert!(all.iter().any(|p| p.name == "simple-nvme"));
    }

    #[test]
    fn overrides_apply_and_are_checked() {
        let p =
            load_profile("simple-nvme", &[("simple.units".into(), "3".into()), ("host.submit_ns".into(), "7".into())])
                .unwrap();
        match p.model {
            ModelConfig::Simple(c) => assert_eq!(c.units, 3),
            ModelConfig::Nand(_) => panic!("simple-nvme is a simple model"),
        }
        assert_eq!(p.host.submit_ns, 7);
        let e = load_profile("simple-nvme", &[("simple.unitz".into(), "3".into())]).unwrap_err();
        assert!(e.0.contains("unknown field `unitz`"), "{e}");
        let p = load_profile("simple-nvme", &[("host.cpus".into(), "2".into())]).unwrap();
        assert_eq!(p.host.cpus, 2, "fields left at their default can be set");
        let p = load_profile("simple-nvme", &[("host.page_cache.size_bytes".into(), "1048576".into())]).unwrap();
        assert_eq!(p.host.page_cache.size_bytes, 1 << 20, "so can subsections");
        let e = load_profile("simple-nvme", &[("host.pagecache.size_bytes".into(), "1".into())]).unwrap_err();
        assert!(e.to_string().contains("unknown field `pagecache`"), "{e}");
        let e = load_profile("simple-nvme", &[("host.page_cache.size_bytes".into(), "4096".into())]).unwrap_err();
        assert!(e.to_string().contains("at least 1 MiB"), "{e}");
        let e = load_profile("simple-nvme", &[("simple.units".into(), "many".into())]).unwrap_err();
        assert!(e.0.contains("expected an integer"), "{e}");
        let e = load_profile("simple-nvme", &[("nosuch.x".into(), "1".into())]).unwrap_err();
        assert!(e.0.contains("no section 'nosuch'"), "{e}");
    }

    #[test]
    fn datasheet_figures_are_positive_and_the_write_state_known() {
        // the figure's line of the shipped profile, changed
        let text = profile_text("970evoplus-250g").unwrap();
        let set = |key: &str, value: &str| {
            let line = text.lines().find(|l| l.starts_with(&format!("{key} = "))).unwrap();
            parse_profile(&text.replace(line, &format!("{key} = {value}")), &[])
        };
        assert!(set("seq_write_mbps", "1800.5").is_ok());
        for (key, value) in
            [("seq_write_mbps", "0"), ("rand_read_iops", "-1"), ("qd1_write_iops", "nan"), ("qd1_read_iops", "inf")]
        {
            let e = set(key, value).unwrap_err();
            assert!(e.0.starts_with(&format!("datasheet.{key} = ")), "{e}");
            assert!(e.0.contains("a figure is a positive number"), "{e}");
        }
        let e = load_profile("970evoplus-250g", &[("datasheet.rand_write_state".into(), "half".into())]).unwrap_err();
        assert!(e.0.contains("expected clean or full"), "{e}");
    }

    #[test]
    fn unknown_device_lists_shipped_ones() {
        let e = load_profile("nope", &[]).unwrap_err();
        assert!(e.0.contains("simple-nvme"), "{e}");
    }
}
