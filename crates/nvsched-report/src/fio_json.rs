//! fio's `--output-format=json` / `json+`: the same keys and nesting as fio 3.3x
//! (`stat.c`: `show_thread_status_json`, `add_ddir_status_json`), printed the way fio's
//! `json.c` prints (two-space indent, `"key" : value`, floats with six decimals).

use crate::hist::FioHistogram;
use crate::stats::{DirStats, JobStats, LatStats};
use crate::{DiskUtil, RunReport};
use nvsched_core::Nanos;
use nvsched_workload::steadystate::SteadyStateReport;
use nvsched_workload::OptionLines;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::io;

/// Percentile keys the way fio prints them ("99.900000").
pub fn percentile_key(p: f64) -> String {
    format!("{p:.6}")
}

fn lat_value(stats: &LatStats, hist: Option<(&FioHistogram, &[f64])>, bins: bool) -> Value {
    let mut m = Map::new();
    m.insert("min".into(), json!(stats.min));
    m.insert("max".into(), json!(stats.max));
    m.insert("mean".into(), json!(stats.mean()));
    m.insert("stddev".into(), json!(stats.stddev()));
    m.insert("N".into(), json!(stats.n));
    if let Some((h, list)) = hist {
        if stats.n > 0 {
            let values = h.percentiles(list);
            let pct: Map<String, Value> =
                list.iter().zip(values).map(|(p, v)| (percentile_key(*p), json!(v))).collect();
            m.insert("percentile".into(), Value::Object(pct));
            if bins {
                let b: Map<String, Value> = h.bins().map(|(v, c)| (v.to_string(), json!(c))).collect();
                m.insert("bins".into(), Value::Object(b));
            }
        }
    }
    Value::Object(m)
}

fn ddir_value(dir: usize, job: &JobStats, group_bytes_per_sec: u64, bins: bool) -> Value {
    let d = &job.dirs[dir];
    let runtime_ns = if d.total_ios > 0 { job.dir_runtime(dir).0.max(1) } else { 0 };
    let (bw_bytes, iops) = if runtime_ns > 0 {
        ((d.io_bytes as u128 * 1_000_000_000 / runtime_ns as u128) as u64, d.total_ios as f64 * 1e9 / runtime_ns as f64)
    } else {
        (0, 0.0)
    };
    let (bw_min, bw_max, bw_mean, bw_dev, bw_samples) = job.bw_summary(dir);
    let (io_min, io_max, io_mean, io_dev, io_samples) = job.iops_summary(dir);
    let mut m = Map::new();
    m.insert("io_bytes".into(), json!(d.io_bytes));
    m.insert("io_kbytes".into(), json!(d.io_bytes >> 10));
    m.insert("bw_bytes".into(), json!(bw_bytes));
    m.insert("bw".into(), json!(bw_bytes / 1024));
    m.insert("iops".into(), json!(iops));
    m.insert("runtime".into(), json!(ms_round(runtime_ns)));
    m.insert("total_ios".into(), json!(d.total_ios));
    m.insert("short_ios".into(), json!(job.short_ios(dir)));
    m.insert("drop_ios".into(), json!(0));
    let kinds = job.percentile_kinds;
    let list = job.percentile_list.as_slice();
    let slat_hist = d.slat_hist.as_ref().filter(|_| kinds.slat);
    let lat_hist = d.lat_hist.as_ref().filter(|_| kinds.lat);
    m.insert("slat_ns".into(), lat_value(&d.slat, slat_hist.map(|h| (h, list)), bins));
    m.insert("clat_ns".into(), lat_value(&d.clat, kinds.clat.then_some((&d.clat_hist, list)), bins));
    m.insert("lat_ns".into(), lat_value(&d.lat, lat_hist.map(|h| (h, list)), bins));
    let with_samples: Vec<_> = d.prios.iter().filter(|p| p.latency.n > 0).collect();
    if with_samples.len() >= 2 {
        let mut sorted = with_samples.clone();
        sorted.sort_by_key(|p| (p.prio.class as u8, p.prio.level));
        let prios: Vec<Value> = sorted
            .iter()
            .map(|p| {
                let mut e = Map::new();
                e.insert("prioclass".into(), json!(p.prio.class as u8));
                e.insert("prio".into(), json!(p.prio.level));
                let hist = (kinds.clat || kinds.lat).then_some((&p.hist, list));
                e.insert(format!("{}_ns", kinds.prio_kind()), lat_value(&p.latency, hist, bins));
                Value::Object(e)
            })
            .collect();
        m.insert("prios".into(), Value::Array(prios));
    }
    // fio: no samples, no share
    let agg = if bw_samples > 0 { group_share_pct(bw_mean, group_bytes_per_sec) } else { 0.0 };
    m.insert("bw_min".into(), json!(bw_min as u64));
    m.insert("bw_max".into(), json!(bw_max as u64));
    m.insert("bw_agg".into(), json!(agg));
    m.insert("bw_mean".into(), json!(bw_mean));
    m.insert("bw_dev".into(), json!(bw_dev));
    m.insert("bw_samples".into(), json!(bw_samples));
    m.insert("iops_min".into(), json!(io_min as u64));
    m.insert("iops_max".into(), json!(io_max as u64));
    m.insert("iops_mean".into(), json!(io_mean));
    m.insert("iops_stddev".into(), json!(io_dev));
    m.insert("iops_samples".into(), json!(io_samples));
    Value::Object(m)
}

pub(crate) fn ms_round(ns: u64) -> u64 {
    (ns + 500_000) / 1_000_000
}

/// Bandwidth of one direction of a job in bytes/s (the `bw_bytes` field).
pub fn dir_bw_bytes(d: &DirStats, runtime_ns: u64) -> f64 {
    if d.total_ios == 0 || runtime_ns == 0 {
        0.0
    } else {
        d.io_bytes as f64 * 1e9 / runtime_ns as f64
    }
}

const LAT_NS_KEYS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
const LAT_MS_KEYS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// fio's latency distribution maps: % of completions in each (previous, key] range, a
/// non-zero share below 0.01% printed as 0.01.
/// (key, percentage) pairs of one of fio's latency maps.
pub type LatencyMap = Vec<(String, f64)>;

pub fn latency_maps(h: &FioHistogram) -> (LatencyMap, LatencyMap, LatencyMap) {
    let total = h.total();
    let mut ns = vec![0u64; 10];
    let mut us = vec![0u64; 10];
    let mut ms = vec![0u64; 12];
    for (v, c) in h.bins() {
        if v <= 1000 {
            let i = LAT_NS_KEYS.iter().position(|k| v <= *k).unwrap_or(9);
            ns[i] += c;
        } else if v <= 1_000_000 {
            let i = LAT_NS_KEYS.iter().position(|k| v <= k * 1000).unwrap_or(9);
            us[i] += c;
        } else {
            let i = LAT_MS_KEYS.iter().position(|k| v <= k * 1_000_000).unwrap_or(11);
            ms[i] += c;
        }
    }
    let pct = |c: u64| {
        if total == 0 || c == 0 {
            0.0
        } else {
            (100.0 * c as f64 / total as f64).max(0.01)
        }
    };
    let keys = |ks: &[u64]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let mut ms_keys = keys(&LAT_MS_KEYS);
    ms_keys.push(">=2000".into());
    (
        keys(&LAT_NS_KEYS).into_iter().zip(ns.into_iter().map(pct)).collect(),
        keys(&LAT_NS_KEYS).into_iter().zip(us.into_iter().map(pct)).collect(),
        ms_keys.into_iter().zip(ms.into_iter().map(pct)).collect(),
    )
}

/// Percentages of a depth/batch distribution of `total`, fio style (non-zero below
/// 0.1 → 0.1). Batches are shares of their own count; depths are shares of the reads,
/// writes and trims issued ([`JobStats::depth_percentages`]).
pub fn level_percentages(levels: &[u64; 7], total: u64) -> [f64; 7] {
    let mut out = [0.0; 7];
    for (o, &c) in out.iter_mut().zip(levels) {
        if total > 0 && c > 0 {
            *o = (100.0 * c as f64 / total as f64).max(0.1);
        }
    }
    out
}

/// A submit or complete batch distribution in percent of its batches.
pub fn batch_percentages(levels: &[u64; 7]) -> [f64; 7] {
    level_percentages(levels, levels.iter().sum())
}

fn map_of(pairs: Vec<(String, f64)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k, json!(v))).collect())
}

/// fio's "job options" or "global options": present when any option was given, holding
/// those given with a value, `${VAR}`s expanded (fio 3.33 leaves a bare flag such as `time_based`
/// out, so a job with only bare flags shows an empty object).
fn options_value(options: &OptionLines) -> Option<Value> {
    let valued = options.iter().filter_map(|(k, v)| Some((k.clone(), json!(v.as_ref()?))));
    (!options.is_empty()).then(|| Value::Object(valued.collect()))
}

fn job_value(job: &JobStats, group_bw: &[u64; 3], elapsed: Nanos, bins: bool) -> Value {
    let mut m = Map::new();
    m.insert("jobname".into(), json!(job.name));
    m.insert("groupid".into(), json!(job.groupid));
    m.insert("error".into(), json!(job.errno()));
    m.insert("eta".into(), json!(0));
    // fio: seconds since the run began, rounded up (`(ms + 999) / 1000`)
    m.insert("elapsed".into(), json!(elapsed.0.div_ceil(1_000_000_000)));
    if let Some(opts) = options_value(&job.job_options) {
        m.insert("job options".into(), opts);
    }
    if let Some(desc) = &job.description {
        m.insert("desc".into(), json!(desc));
    }
    if job.unified {
        // fio's unified_rw_reporting=mixed: one direction, and no sync entry
        m.insert("mixed".into(), ddir_value(0, job, group_bw[0], bins));
    } else {
        for (i, key) in ["read", "write", "trim"].iter().enumerate() {
            m.insert((*key).into(), ddir_value(i, job, group_bw[i], bins));
        }
        // fio: sync percentiles where the job shows clat or lat percentiles
        let kinds = job.percentile_kinds;
        let hist = (kinds.clat || kinds.lat).then_some((&job.sync_hist, job.percentile_list.as_slice()));
        m.insert(
            "sync".into(),
            json!({ "total_ios": job.sync_total_ios(), "lat_ns": lat_value(&job.sync, hist, bins) }),
        );
    }
    if job.also_mixed {
        // fio's unified_rw_reporting=both; its share of the group is of the group's reads
        m.insert("mixed".into(), ddir_value(0, &job.mixed(), group_bw[0], bins));
    }
    m.insert("job_runtime".into(), json!(ms_round(job.total_runtime().0)));
    let (usr, sys) = job.cpu.percentages();
    m.insert("usr_cpu".into(), json!(usr));
    m.insert("sys_cpu".into(), json!(sys));
    m.insert("ctx".into(), json!(job.cpu.ctx));
    m.insert("majf".into(), json!(job.cpu.majf));
    m.insert("minf".into(), json!(job.cpu.minf));
    let depth_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    let levels = |keys: [&str; 7], pct: [f64; 7]| map_of(keys.iter().map(|k| k.to_string()).zip(pct).collect());
    m.insert("iodepth_level".into(), levels(depth_keys, job.depth_percentages()));
    m.insert("iodepth_submit".into(), levels(batch_keys, batch_percentages(&job.submit_levels)));
    m.insert("iodepth_complete".into(), levels(batch_keys, batch_percentages(&job.complete_levels)));
    let (ns, us, ms) = latency_maps(&job.all_clat_hist());
    m.insert("latency_ns".into(), map_of(ns));
    m.insert("latency_us".into(), map_of(us));
    m.insert("latency_ms".into(), map_of(ms));
    if let Some(e) = job.io_errors {
        m.insert("total_err".into(), json!(e.total));
        m.insert("first_error".into(), json!(e.first));
    }
    m.insert("latency_depth".into(), json!(job.iodepth));
    m.insert("latency_target".into(), json!(job.latency_target_ns));
    m.insert("latency_percentile".into(), json!(job.latency_percentile));
    m.insert("latency_window".into(), json!(job.latency_window_us));
    if let Some(ss) = &job.steadystate {
        m.insert("steadystate".into(), steadystate_value(ss));
    }
    Value::Object(m)
}

/// Each group's bandwidth per direction in bytes/s (fio's `agg`, which `bw_agg` and
/// `per=` are shares of).
pub fn group_bandwidths(jobs: &[JobStats]) -> Vec<(u32, [u64; 3])> {
    let mut groups: Vec<u32> = jobs.iter().map(|j| j.groupid).collect();
    groups.dedup();
    groups.into_iter().map(|g| (g, std::array::from_fn(|d| group_rate(&group_members(jobs, g, d), d)))).collect()
}

/// The entries of `group` that did I/O in direction `d`.
pub(crate) fn group_members(jobs: &[JobStats], group: u32, d: usize) -> Vec<&JobStats> {
    jobs.iter().filter(|j| j.groupid == group && j.dirs[d].total_ios > 0).collect()
}

/// The bandwidths of `group_bandwidths` for the group of `job`.
pub(crate) fn group_bandwidth_of(groups: &[(u32, [u64; 3])], job: &JobStats) -> [u64; 3] {
    groups.iter().find(|(g, _)| *g == job.groupid).map_or([0; 3], |(_, b)| *b)
}

/// How long a job's direction `d` ran in milliseconds, as fio keeps it (and the JSON's
/// `runtime`).
pub(crate) fn runtime_ms(job: &JobStats, d: usize) -> u64 {
    ms_round(job.dir_runtime(d).0)
}

/// Bytes per second of one direction of a job, fio's integer way (bytes x 1000 / ms).
pub(crate) fn dir_rate(bytes: u64, ms: u64) -> u64 {
    bytes.saturating_mul(1000) / ms.max(1)
}

/// A group's bandwidth in one direction (fio's `agg`): all its members' bytes over their
/// longest run.
pub(crate) fn group_rate(members: &[&JobStats], d: usize) -> u64 {
    let bytes = members.iter().map(|j| j.dirs[d].io_bytes).sum();
    dir_rate(bytes, members.iter().map(|j| runtime_ms(j, d)).max().unwrap_or(0))
}

/// A job's share of its group's bandwidth as fio works it out for `bw_agg` and `per=`:
/// the job's mean sample in whole KiB/s over the group's rate, at most 100%; 100% for a
/// group under 1 KiB/s.
pub(crate) fn group_share_pct(mean_kib_per_sec: f64, group_bytes_per_sec: u64) -> f64 {
    if group_bytes_per_sec > 1024 {
        (mean_kib_per_sec.trunc() * 100.0 / (group_bytes_per_sec as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

fn disk_value(d: &DiskUtil) -> Value {
    json!({
        "name": d.name,
        "read_ios": d.read_ios,
        "write_ios": d.write_ios,
        "read_merges": d.read_merges,
        "write_merges": d.write_merges,
        "read_ticks": d.read_ticks_ms,
        "write_ticks": d.write_ticks_ms,
        "in_queue": d.in_queue_ms,
        "util": d.util_pct,
    })
}

/// The whole report as a JSON value (`bins` adds json+ histograms).
pub fn report_value(r: &RunReport, bins: bool) -> Value {
    let groups = group_bandwidths(&r.jobs);
    let mut top = Map::new();
    top.insert("fio version".into(), json!(r.version));
    top.insert("timestamp".into(), json!(r.timestamp_ms / 1000));
    top.insert("timestamp_ms".into(), json!(r.timestamp_ms));
    top.insert("time".into(), json!(crate::ctime(r.timestamp_ms / 1000)));
    if let Some(g) = options_value(&r.global_options) {
        top.insert("global options".into(), g);
    }
    let jobs: Vec<Value> =
        r.jobs.iter().map(|j| job_value(j, &group_bandwidth_of(&groups, j), r.elapsed, bins)).collect();
    top.insert("jobs".into(), Value::Array(jobs));
    if !r.disk_util.is_empty() {
        top.insert("disk_util".into(), Value::Array(r.disk_util.iter().map(disk_value).collect()));
    }
    if !r.nvsched.is_null() {
        top.insert("nvsched".into(), r.nvsched.clone());
    }
    Value::Object(top)
}

/// Writes `value` the way fio's json.c does.
pub fn write_fio_style<W: io::Write>(w: &mut W, value: &Value) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *w, FioFormatter::default());
    value.serialize(&mut ser).map_err(io::Error::other)?;
    writeln!(w)
}

/// serde_json formatter reproducing fio's layout.
#[derive(Default)]
struct FioFormatter {
    indent: usize,
    has_value: bool,
}

impl FioFormatter {
    fn newline_indent<W: ?Sized + io::Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.indent {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for FioFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        let v = if value.is_finite() { value } else { 0.0 };
        write!(w, "{v:.6}")
    }
    fn write_f32<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, f64::from(value))
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent += 1;
        self.has_value = false;
        w.write_all(b"[")
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent -= 1;
        if self.has_value {
            self.newline_indent(w)?;
        }
        w.write_all(b"]")
    }
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline_indent(w)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent += 1;
        self.has_value = false;
        w.write_all(b"{")
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.indent -= 1;
        if self.has_value {
            self.newline_indent(w)?;
        }
        w.write_all(b"}")
    }
    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline_indent(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b" : ")
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// fio's `steadystate` object: the criterion, whether it was met, and the last samples.
fn steadystate_value(ss: &SteadyStateReport) -> Value {
    json!({
        "ss": ss.spec.describe(),
        "duration": ss.spec.duration_s,
        "attained": u8::from(ss.attained),
        "criterion": format!("{:.6}{}", ss.criterion, ss.spec.unit()),
        "max_deviation": ss.max_deviation,
        "slope": ss.slope,
        "data": {
            "bw_mean": ss.bw_mean(),
            "iops_mean": ss.iops_mean(),
            "iops": ss.iops,
            "bw": ss.bw,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_matches_fio() {
        let v = json!({"a": 1, "b": 2.5, "c": {"d": []}, "e": [1, 2]});
        let mut out = Vec::new();
        write_fio_style(&mut out, &v).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "{\n  \"a\" : 1,\n  \"b\" : 2.500000,\n  \"c\" : {\n    \"d\" : []\n  },\n  \"e\" : [\n    1,\n    2\n  ]\n}\n");
    }

    #[test]
    fn latency_maps_sum_to_100() {
        let mut h = FioHistogram::default();
        for v in [500u64, 5_000, 50_000, 5_000_000, 3_000_000_000] {
            h.record(v);
        }
        let (ns, us, ms) = latency_maps(&h);
        let total: f64 = ns.iter().chain(&us).chain(&ms).map(|(_, v)| v).sum();
        assert!((total - 100.0).abs() < 1e-9, "{total}");
        assert_eq!(ms.last().unwrap(), &(">=2000".to_string(), 20.0));
    }

    /// fio 3.33: `[global]` with `time_based` and `runtime=100ms` reports only runtime;
    /// a job whose only line is `time_based` gets an empty "job options"; a job without
    /// lines gets none.
    #[test]
    fn options_leave_out_bare_flags_as_fio_does() {
        let opt = |k: &str, v: Option<&str>| (k.to_string(), v.map(String::from));
        let global = options_value(&vec![opt("time_based", None), opt("runtime", Some("100ms"))]);
        assert_eq!(global, Some(json!({"runtime": "100ms"})));
        assert_eq!(options_value(&vec![opt("time_based", None)]), Some(json!({})));
        assert_eq!(options_value(&Vec::new()), None);
    }
}
