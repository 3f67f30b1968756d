//! Fits a flash profile's timings to datasheet figures (`nvsched calibrate --fit`): each
//! figure that `calibration::verify` measures has one knob in the `[nand]` section, moved
//! by that figure's error; the simulator measures every figure again, and the rounds go
//! on until each figure is within 1% or its knob no longer moves it. The drive's geometry,
//! cache sizes and GC settings stay as the profile has them.

use crate::calibration::{
    verify, Check, RANDOM_READ_QD1, RANDOM_READ_QD32X4, RANDOM_WRITE_QD1, RANDOM_WRITE_QD32X4, SEQ_READ, SEQ_WRITE,
    SEQ_WRITE_AFTER_CACHE,
};
use nvsched_ssd::{DeviceProfile, ModelConfig, NandConfig};

/// How a knob follows its figure's error.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Move {
    /// A QD1 figure (IOPS, one over the latency): add the latency difference to `field`
    /// (ns); what would take it below 0 comes off `spill` (us) instead.
    Latency { field: &'static str, spill: Option<&'static str> },
    /// IOPS that a controller time per command (`field`, ns) caps: scale it by measured /
    /// cited. When that cap is not what holds a short figure (it allows 2% more than
    /// measured), scale `fallback` (us, e.g. the page read) by measured / cited instead.
    Occupancy { field: &'static str, fallback: Option<&'static str> },
    /// A throughput set by one service time (us): scale it by measured / cited.
    Time(&'static str),
    /// Sequential reads: scale the lower of the host link and all channels together by
    /// cited / measured.
    Transfer,
}

/// The figure a knob answers for, and how it moves.
struct Knob {
    figure: &'static str,
    moves: Move,
}

/// One knob per figure. The QD1 latencies have pure latencies of their own
/// (`ctrl_*_latency_ns`), so the IOPS knobs can move service times without undoing them.
const KNOBS: &[Knob] = &[
    Knob { figure: RANDOM_READ_QD1, moves: Move::Latency { field: "ctrl_read_latency_ns", spill: Some("t_read_us") } },
    Knob {
        figure: RANDOM_READ_QD32X4,
        moves: Move::Occupancy { field: "ctrl_read_occupancy_ns", fallback: Some("t_read_us") },
    },
    Knob { figure: SEQ_READ, moves: Move::Transfer },
    Knob { figure: SEQ_WRITE, moves: Move::Time("t_prog_slc_us") },
    Knob { figure: SEQ_WRITE_AFTER_CACHE, moves: Move::Time("t_prog_us") },
    Knob { figure: RANDOM_WRITE_QD32X4, moves: Move::Occupancy { field: "ctrl_write_occupancy_ns", fallback: None } },
    Knob { figure: RANDOM_WRITE_QD1, moves: Move::Latency { field: "ctrl_write_latency_ns", spill: None } },
];

/// Without an SLC cache, sequential writes are native programs.
const NO_CACHE_SEQ_WRITE: Knob = Knob { figure: SEQ_WRITE, moves: Move::Time("t_prog_us") };

/// Every field a knob may change, in the order the fitted profile lists them.
const FIELDS: &[&str] = &[
    "ctrl_read_latency_ns",
    "t_read_us",
    "ctrl_read_occupancy_ns",
    "channel_mbps",
    "link_mbps",
    "t_prog_slc_us",
    "t_prog_us",
    "ctrl_write_occupancy_ns",
    "ctrl_write_latency_ns",
];

/// A figure within this of its target needs no more rounds.
const CLOSE_ENOUGH: f64 = 0.01;
/// One round moves a knob by at most this factor, so that a knob that does not bind
/// yet (another limit holds the figure) cannot run away.
const MAX_STEP: f64 = 2.0;

/// What fitting did.
pub struct Fit {
    /// The profile with the fitted fields.
    pub profile: DeviceProfile,
    /// The `[nand]` fields it changed, with their new values, as TOML writes them.
    pub changed: Vec<(&'static str, FieldValue)>,
    /// The figures before the first round and after the last.
    pub before: Vec<Check>,
    pub after: Vec<Check>,
    pub rounds: u32,
    /// Figures no knob moves (a random-write figure on a full drive, or after the SLC
    /// cache: they follow from the others and from the geometry).
    pub unfitted: Vec<&'static str>,
}

/// A field's value, typed as the profile writes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FieldValue {
    Nanos(u64),
    Real(f64),
}

impl std::fmt::Display for FieldValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldValue::Nanos(v) => write!(f, "{v}"),
            FieldValue::Real(v) => write!(f, "{v:.1}"),
        }
    }
}

impl FieldValue {
    fn as_f64(self) -> f64 {
        match self {
            FieldValue::Nanos(ns) => ns as f64,
            FieldValue::Real(v) => v,
        }
    }

    /// The value times `by`, in its own type (whole nanoseconds stay whole).
    fn scaled(self, by: f64) -> FieldValue {
        match self {
            FieldValue::Nanos(ns) => FieldValue::Nanos((ns as f64 * by).round() as u64),
            FieldValue::Real(v) => FieldValue::Real(v * by),
        }
    }
}

fn field(c: &NandConfig, name: &str) -> FieldValue {
    match name {
        "ctrl_read_latency_ns" => FieldValue::Nanos(c.ctrl_read_latency_ns),
        "ctrl_read_occupancy_ns" => FieldValue::Nanos(c.ctrl_read_occupancy_ns),
        "ctrl_write_latency_ns" => FieldValue::Nanos(c.ctrl_write_latency_ns),
        "ctrl_write_occupancy_ns" => FieldValue::Nanos(c.ctrl_write_occupancy_ns),
        "t_read_us" => FieldValue::Real(c.t_read_us),
        "t_prog_us" => FieldValue::Real(c.t_prog_us),
        "t_prog_slc_us" => FieldValue::Real(c.t_prog_slc_us),
        "channel_mbps" => FieldValue::Real(c.channel_mbps),
        "link_mbps" => FieldValue::Real(c.link_mbps),
        other => unreachable!("not a knob: {other}"),
    }
}

fn set_field(c: &mut NandConfig, name: &str, value: FieldValue) {
    match (name, value) {
        ("ctrl_read_latency_ns", FieldValue::Nanos(v)) => c.ctrl_read_latency_ns = v,
        ("ctrl_read_occupancy_ns", FieldValue::Nanos(v)) => c.ctrl_read_occupancy_ns = v,
        ("ctrl_write_latency_ns", FieldValue::Nanos(v)) => c.ctrl_write_latency_ns = v,
        ("ctrl_write_occupancy_ns", FieldValue::Nanos(v)) => c.ctrl_write_occupancy_ns = v,
        ("t_read_us", FieldValue::Real(v)) => c.t_read_us = v,
        ("t_prog_us", FieldValue::Real(v)) => c.t_prog_us = v,
        ("t_prog_slc_us", FieldValue::Real(v)) => c.t_prog_slc_us = v,
        ("channel_mbps", FieldValue::Real(v)) => c.channel_mbps = v,
        ("link_mbps", FieldValue::Real(v)) => c.link_mbps = v,
        other => unreachable!("not a knob: {other:?}"),
    }
}

/// The knobs for `cfg`'s figures.
fn knobs_for(cfg: &NandConfig) -> Vec<&'static Knob> {
    let cached = cfg.slc_static_bytes + cfg.slc_dynamic_max_bytes > 0;
    KNOBS
        .iter()
        .map(|k| if !cached && k.figure == NO_CACHE_SEQ_WRITE.figure { &NO_CACHE_SEQ_WRITE } else { k })
        .collect()
}

/// Whether a knob may answer for the figure: one measured on a full drive follows from
/// garbage collection, so from the geometry, which fitting leaves alone.
fn fittable(check: &Check) -> bool {
    !check.state.starts_with("full")
}

/// Moves `knob` on `cfg` for `check`'s error; returns whether anything changed.
fn turn(cfg: &mut NandConfig, knob: &Knob, check: &Check) -> bool {
    let (cited, measured) = (check.cited, check.measured);
    if cited <= 0.0 || measured <= 0.0 {
        return false;
    }
    let before = cfg.clone();
    // a service time scales by measured / cited, a rate by the inverse; one round moves
    // either by at most MAX_STEP
    let slower = (measured / cited).clamp(1.0 / MAX_STEP, MAX_STEP);
    let scale = |cfg: &mut NandConfig, name: &str, by: f64| set_field(cfg, name, field(cfg, name).scaled(by));
    match knob.moves {
        Move::Latency { field: name, spill } => {
            let FieldValue::Nanos(ns) = field(cfg, name) else { unreachable!("latencies are in ns") };
            let want_ns = ns as f64 + 1e9 / cited - 1e9 / measured;
            set_field(cfg, name, FieldValue::Nanos(want_ns.max(0.0).round() as u64));
            if let (Some(spill), true) = (spill, want_ns < 0.0) {
                let FieldValue::Real(us) = field(cfg, spill) else { unreachable!("spills are in us") };
                set_field(cfg, spill, FieldValue::Real((us + want_ns / 1e3).max(us / MAX_STEP)));
            }
        }
        Move::Occupancy { field: name, fallback } => {
            let FieldValue::Nanos(ns) = field(cfg, name) else { unreachable!("occupancies are in ns") };
            let cap_iops = if ns == 0 { f64::INFINITY } else { 1e9 / ns as f64 };
            match fallback {
                Some(other) if measured < cited && cap_iops > 1.02 * measured => {
                    scale(cfg, other, slower);
                    // and the cap may not hold the figure below its target
                    if cap_iops < cited {
                        set_field(cfg, name, FieldValue::Nanos((1e9 / cited).floor() as u64));
                    }
                }
                _ => scale(cfg, name, slower),
            }
        }
        Move::Time(name) => scale(cfg, name, slower),
        Move::Transfer => {
            let channels_mbps = f64::from(cfg.channels) * cfg.channel_mbps;
            let name = if cfg.link_mbps <= channels_mbps { "link_mbps" } else { "channel_mbps" };
            scale(cfg, name, 1.0 / slower);
        }
    }
    *cfg != before
}

/// Fits `profile`'s timings to its `[datasheet]`, in at most `max_rounds` rounds of
/// measurement; `on_round` hears each round's figures. `scale_full` is as for
/// [`verify`].
pub fn fit(
    profile: &DeviceProfile,
    max_rounds: u32,
    scale_full: u32,
    mut on_round: impl FnMut(u32, &[Check]),
) -> Result<Fit, String> {
    let ModelConfig::Nand(start) = &profile.model else {
        return Err(format!(
            "profile '{}' is the simple model: --fit fits a flash ([nand]) profile's timings",
            profile.name
        ));
    };
    let knobs = knobs_for(start);
    let mut current = profile.clone();
    let before = verify(&current, scale_full)?;
    on_round(0, &before);
    let mut checks = before.clone();
    let mut rounds = 0;
    // figures their knob no longer moves: another limit holds them
    let mut stuck: Vec<&str> = Vec::new();
    while rounds < max_rounds {
        let far: Vec<(&Knob, &Check)> = knobs
            .iter()
            .filter(|k| !stuck.contains(&k.figure))
            .filter_map(|k| checks.iter().find(|c| c.name == k.figure && fittable(c)).map(|c| (*k, c)))
            .filter(|(_, c)| c.error().abs() > CLOSE_ENOUGH)
            .collect();
        let ModelConfig::Nand(cfg) = &mut current.model else { unreachable!("checked above") };
        let mut turned = Vec::new();
        for (knob, check) in far {
            if turn(cfg, knob, check) {
                turned.push((check.name, check.measured));
            }
        }
        if turned.is_empty() {
            break;
        }
        rounds += 1;
        checks = verify(&current, scale_full)?;
        on_round(rounds, &checks);
        for (name, was) in turned {
            let now = checks.iter().find(|c| c.name == name).map_or(was, |c| c.measured);
            if (now / was - 1.0).abs() < 0.002 {
                stuck.push(name);
            }
        }
    }
    let ModelConfig::Nand(fitted) = &current.model else { unreachable!("checked above") };
    let changed =
        FIELDS.iter().map(|&name| (name, field(fitted, name))).filter(|&(name, v)| v != field(start, name)).collect();
    let unfitted =
        checks.iter().filter(|c| !(fittable(c) && knobs.iter().any(|k| k.figure == c.name))).map(|c| c.name).collect();
    Ok(Fit { profile: current, changed, before, after: checks, rounds, unfitted })
}

/// The profile text `text` (of `source`) with the fitted fields changed and named `name`,
/// under a comment that says what was fitted and how close each figure came; the rest of
/// the file, comments included, stays as it was.
pub fn fitted_toml(text: &str, name: &str, source: &str, fit: &Fit) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{source}: {e}"))?;
    doc["name"] = toml_edit::value(name);
    for (field, value) in &fit.changed {
        doc["nand"][field] = match *value {
            FieldValue::Nanos(ns) => toml_edit::value(ns as i64),
            FieldValue::Real(v) => toml_edit::value((v * 100.0).round() / 100.0),
        };
    }
    if let Some(ds) = &fit.profile.datasheet {
        // the figures it was fitted to (measured ones, with --like)
        for (key, value) in ds.figures() {
            match value {
                // as the shipped profiles write them: whole numbers
                Some(v) => doc["datasheet"][key] = toml_edit::value(v.round() as i64),
                None => {
                    if let Some(table) = doc.get_mut("datasheet").and_then(|t| t.as_table_like_mut()) {
                        table.remove(key);
                    }
                }
            }
        }
        doc["datasheet"]["rand_write_state"] = toml_edit::value(ds.rand_write_state.as_str());
    }
    let mut header = format!(
        "# {name}: {source} with its timings fitted to its [datasheet] by `nvsched calibrate --fit` ({} round(s));\n\
         # simulated figures against the datasheet's:\n",
        fit.rounds
    );
    for c in &fit.after {
        header.push_str(&format!(
            "#   {} ({}): {:.0} vs {:.0} ({:+.1}%)\n",
            c.name,
            c.unit,
            c.measured,
            c.cited,
            c.error() * 100.0
        ));
    }
    Ok(header + &doc.to_string())
}

/// A warning for each field the fit moved more than [`MAX_STEP`] times from the profile's
/// value: such a timing may stand in for a geometry (channels, dies, planes) or cache
/// that does not suit the drive, which fitting leaves as it is.
pub fn far_moves(profile: &DeviceProfile, fit: &Fit) -> Vec<String> {
    let ModelConfig::Nand(start) = &profile.model else { return Vec::new() };
    fit.changed
        .iter()
        .filter_map(|&(name, value)| {
            let (was, now) = (field(start, name).as_f64(), value.as_f64());
            if was <= 0.0 || now <= 0.0 {
                return None;
            }
            let factor = (now / was).max(was / now);
            (factor > MAX_STEP).then(|| {
                format!(
                    "nand.{name} moved {factor:.1}x ({} -> {value}): the profile's geometry (channels, dies, planes) or caches may not suit the drive; --fit moves timings only",
                    field(start, name)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nand(profile: &str) -> NandConfig {
        match nvsched_ssd::load_profile(profile, &[]).unwrap().model {
            ModelConfig::Nand(c) => *c,
            ModelConfig::Simple(_) => unreachable!("a flash profile"),
        }
    }

    fn check(name: &'static str, cited: f64, measured: f64) -> Check {
        Check { name, unit: "", cited, measured, state: "clean".into() }
    }

    fn knob(figure: &str) -> &'static Knob {
        KNOBS.iter().find(|k| k.figure == figure).unwrap()
    }

    #[test]
    fn a_qd1_figure_moves_the_latency_and_spills_into_the_page_read_below_zero() {
        let mut c = nand("970pro-512g");
        (c.ctrl_read_latency_ns, c.t_read_us) = (25_000, 50.0);
        // 10,000 IOPS measured, 12,500 cited: 20 us too slow, which the latency gives
        assert!(turn(&mut c, knob("random read QD1"), &check("random read QD1", 12_500.0, 10_000.0)));
        assert_eq!((c.ctrl_read_latency_ns, c.t_read_us), (5_000, 50.0));
        // 20 us more: 5 from the latency, 15 from the page read
        assert!(turn(&mut c, knob("random read QD1"), &check("random read QD1", 12_500.0, 10_000.0)));
        assert_eq!(c.ctrl_read_latency_ns, 0);
        assert!((c.t_read_us - 35.0).abs() < 1e-9, "{}", c.t_read_us);
        // too fast: the latency grows, the page read stays
        let t_read = c.t_read_us;
        assert!(turn(&mut c, knob("random read QD1"), &check("random read QD1", 10_000.0, 12_500.0)));
        assert_eq!(c.t_read_us, t_read);
        assert!(c.ctrl_read_latency_ns >= 20_000);
    }

    #[test]
    fn read_iops_move_the_controller_time_where_it_caps_them_else_the_page_read() {
        let mut c = nand("970pro-512g");
        c.ctrl_read_occupancy_ns = 4_000; // caps at 250k IOPS
        let t_read = c.t_read_us;
        // held at the cap and asked for more: the controller gets faster, the flash stays
        assert!(turn(&mut c, knob("random read QD32x4"), &check("random read QD32x4", 300_000.0, 250_000.0)));
        assert_eq!((c.ctrl_read_occupancy_ns, c.t_read_us), (3_333, t_read));
        // short of a cap it is not near: the page read gets shorter, the cap moves to the target
        assert!(turn(&mut c, knob("random read QD32x4"), &check("random read QD32x4", 400_000.0, 200_000.0)));
        assert!((c.t_read_us - t_read / 2.0).abs() < 1e-9, "{}", c.t_read_us);
        assert_eq!(c.ctrl_read_occupancy_ns, 2_500);
        // over the target: the controller slows, at most MAX_STEP at once
        assert!(turn(&mut c, knob("random read QD32x4"), &check("random read QD32x4", 100_000.0, 500_000.0)));
        assert_eq!(c.ctrl_read_occupancy_ns, 5_000);
        // on target within rounding: nothing changes
        assert!(!turn(&mut c, knob("random read QD32x4"), &check("random read QD32x4", 100_000.0, 100_000.0)));
    }

    #[test]
    fn sequential_reads_move_the_lower_of_link_and_channels() {
        let mut c = nand("970pro-512g");
        c.link_mbps = 1_000.0;
        c.channel_mbps = 10_000.0;
        assert!(turn(&mut c, knob("sequential read 128K QD32"), &check("sequential read 128K QD32", 1_500.0, 1_000.0)));
        assert_eq!((c.link_mbps, c.channel_mbps), (1_500.0, 10_000.0));
        c.link_mbps = 100_000.0;
        assert!(turn(&mut c, knob("sequential read 128K QD32"), &check("sequential read 128K QD32", 1_500.0, 3_000.0)));
        assert_eq!((c.link_mbps, c.channel_mbps), (100_000.0, 5_000.0));
    }

    #[test]
    fn without_an_slc_cache_sequential_writes_move_the_native_program() {
        let c = nand("970pro-512g");
        assert_eq!(c.slc_static_bytes + c.slc_dynamic_max_bytes, 0, "the 970 PRO has no SLC cache");
        let knobs = knobs_for(&c);
        let seq = knobs.iter().find(|k| k.figure == "sequential write 128K QD32").unwrap();
        assert_eq!(seq.moves, Move::Time("t_prog_us"));
        let cached = knobs_for(&nand("970evoplus-250g"));
        let seq = cached.iter().find(|k| k.figure == "sequential write 128K QD32").unwrap();
        assert_eq!(seq.moves, Move::Time("t_prog_slc_us"));
    }
}
