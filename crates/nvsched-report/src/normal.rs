//! fio's human-readable output (`--output-format=normal`), plus nvsched's own summary
//! lines at the end.

use crate::fio_json::{
    batch_percentages, dir_rate, group_bandwidth_of, group_bandwidths, group_members, group_rate, group_share_pct,
    latency_maps, runtime_ms, LatencyMap,
};
use crate::stats::{JobStats, LatStats, PrioStats};
use crate::RunReport;
use nvsched_workload::steadystate::SsMetric;
use nvsched_workload::{reporting_groups, JobSpec, KbBase, Pattern};
use std::fmt::Write;

/// fio's `num2str`: `num` in at most `max_digits` digits, divided by 1000 (1024 with
/// `pow2`) with a k/M/G (Ki/Mi/Gi) prefix until it fits; after a division, the digits to
/// spare beyond one show a fraction (`18.9k`), otherwise the last remainder rounds
/// (`236MiB/s`). The same rules as fio's, so the two tools' lines read alike; only where
/// fio's fraction rounds up to a whole one (it prints 24999 as `24.0k`) this carries
/// (`25.0k`).
fn num2str(num: u64, max_digits: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let prefixes = if pow2 { IEC } else { SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut num = num;
    let mut prefix = 0;
    let mut remainder = None;
    while digits(num) > max_digits && prefix + 1 < prefixes.len() {
        remainder = Some(num % thousand);
        num /= thousand;
        prefix += 1;
    }
    let Some(rem) = remainder else {
        return format!("{num}{unit}");
    };
    let spare = max_digits.saturating_sub(digits(num));
    if spare <= 1 {
        if rem >= thousand / 2 {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[prefix]);
    }
    let fraction = format!("{:.*}", spare - 1, rem as f64 / thousand as f64);
    let (whole, decimals) = fraction.split_once('.').unwrap_or(("0", ""));
    if whole != "0" {
        num += 1;
    }
    format!("{num}.{decimals}{}{unit}", prefixes[prefix])
}

fn digits(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// fio's default `significant_figures` for IOPS, bandwidth and sizes (tests against
/// fio's own output).
#[cfg(test)]
const SIG_FIGS: usize = 4;

/// A quantity as fio prints it twice, in binary and in decimal prefixes, to `sig_figs`
/// significant figures: (`73.7MiB/s`, `77.3MB/s`).
fn binary_and_decimal(v: u64, unit: &str, sig_figs: usize) -> (String, String) {
    (num2str(v, sig_figs, true, unit), num2str(v, sig_figs, false, unit))
}

/// Bytes per second as fio prints them: `73.7MiB/s (77.3MB/s)`, or with `unit_base=1`
/// (`bits`) in bits: `590Mibit/s (618Mbit/s)`.
fn bandwidth(bytes_per_sec: u64, sig_figs: usize, bits: bool) -> String {
    let (binary, decimal) = match bits {
        true => binary_and_decimal(bytes_per_sec.saturating_mul(8), "bit/s", sig_figs),
        false => binary_and_decimal(bytes_per_sec, "B/s", sig_figs),
    };
    format!("{binary} ({decimal})")
}

fn lat_line(out: &mut String, label: &str, s: &LatStats) {
    if s.n > 0 {
        lat_values(out, label, s.min, s.max, s.mean(), s.stddev());
    }
}

/// `    clat (usec): min=.., max=.., avg=.., stdev=..`: the unit by fio's rule (usec only
/// when the minimum is over 2 us, the maximum over 100 us and the deviation over 1 us;
/// msec alike), minimum and maximum cut to whole units.
fn lat_values(out: &mut String, label: &str, min: u64, max: u64, mean: f64, dev: f64) {
    let (unit, div) = if min > 2_000_000 && max > 99_999_999 && dev > 1e6 {
        ("msec", 1_000_000)
    } else if min > 2_000 && max > 99_999 && dev > 1e3 {
        ("usec", 1_000)
    } else {
        ("nsec", 1)
    };
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={}, max={}, avg={:5.02}, stdev={:5.02}",
        num2str(min / div, 6, false, ""),
        num2str(max / div, 6, false, ""),
        mean / div as f64,
        dev / div as f64
    );
}

/// fio's percentile block: the unit follows the smallest and largest value shown, values
/// round up into it, and the columns are as wide as the largest value needs.
fn percentile_block(out: &mut String, title: &str, (list, precision): (&[f64], u8), values: &[u64]) {
    let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
        return;
    };
    let (unit, steps) = if min > 2_000_000 && max > 99_999_999 {
        ("msec", 2)
    } else if min > 2_000 && max > 99_999 {
        ("usec", 1)
    } else {
        ("nsec", 0)
    };
    let width = digits(max / 1000u64.pow(steps)).max(5);
    let precision = usize::from(precision);
    let per_line = (73 / (precision + 10 + width)).max(1);
    let _ = write!(out, "    {title} percentiles ({unit}):\n     |");
    for (i, (p, &v)) in list.iter().zip(values).enumerate() {
        let shown = (0..steps).fold(v, |v, _| v.div_ceil(1000));
        let end = if i + 1 == values.len() { '\n' } else { ',' };
        let _ = write!(out, " {p:>pw$.precision$}th=[{shown:>width$}]{end}", pw = precision + 3);
        if end == ',' && i % per_line == per_line - 1 {
            out.push_str("\n     |");
        }
    }
}

/// A direction's name in fio's report: read, write, trim, or mixed when unified.
fn dir_name(d: usize, unified: bool) -> &'static str {
    if unified {
        "mixed"
    } else {
        ["read", "write", "trim"][d]
    }
}

/// `  read: IOPS=.., BW=..(..)(io/runtime)`, fio's first line of a direction.
fn ddir_header(
    out: &mut String,
    name: &str,
    total_ios: u64,
    io_bytes: u64,
    runtime_ms: u64,
    sig_figs: usize,
    bits: bool,
) {
    let ms = runtime_ms.max(1);
    let zone_resets = if name == "write" { "; 0 zone resets" } else { "" };
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}({}/{ms}msec){zone_resets}",
        num2str(total_ios * 1000 / ms, sig_figs, false, ""),
        bandwidth(dir_rate(io_bytes, ms), sig_figs, bits),
        num2str(io_bytes, sig_figs, true, "B"),
    );
}

fn ddir(out: &mut String, d: usize, job: &JobStats, group_bytes_per_sec: u64) {
    let dir = &job.dirs[d];
    if dir.total_ios == 0 {
        return;
    }
    let (ios, bytes, ms) = (dir.total_ios, dir.io_bytes, runtime_ms(job, d));
    ddir_header(out, dir_name(d, job.unified), ios, bytes, ms, job.sig_figs.into(), job.bandwidth_in_bits);
    lat_line(out, "slat", &dir.slat);
    lat_line(out, "clat", &dir.clat);
    lat_line(out, " lat", &dir.lat);
    let kinds = job.percentile_kinds;
    let list = &job.percentile_list;
    let shown = (list.as_slice(), job.percentile_precision);
    let mut prios: Vec<_> = dir.prios.iter().filter(|p| p.latency.n > 0).collect();
    prios.sort_by_key(|p| (p.prio.class as u8, p.prio.level));
    if prios.len() < 2 {
        prios.clear();
    }
    let prio_name = |p: &PrioStats| format!("{} prio {}/{}", kinds.prio_kind(), p.prio.class as u8, p.prio.level);
    for p in &prios {
        lat_line(out, &prio_name(p), &p.latency);
    }
    if let Some(h) = dir.slat_hist.as_ref().filter(|_| kinds.slat && dir.slat.n > 0) {
        percentile_block(out, "slat", shown, &h.percentiles(list));
    }
    if kinds.clat {
        percentile_block(out, "clat", shown, &dir.clat_hist.percentiles(list));
    }
    if let Some(h) = dir.lat_hist.as_ref().filter(|_| kinds.lat) {
        percentile_block(out, "lat", shown, &h.percentiles(list));
    }
    if kinds.clat || kinds.lat {
        for p in &prios {
            let share = 100.0 * p.latency.n as f64 / dir.clat.n.max(1) as f64;
            let title = format!("{} ({share:.2}% of IOs)", prio_name(p));
            percentile_block(out, &title, shown, &p.hist.percentiles(list));
        }
    }
    let bw = job.bw_summary(d);
    if bw.4 > 0 {
        let share = group_share_pct(bw.2, group_bytes_per_sec);
        bw_lines(out, bw, share, job.iops_summary(d));
    }
}

/// fio's `bw` and `iops` lines from (min, max, mean, stdev, samples) of the per-window
/// KiB/s and IOPS; bandwidth over 1 GiB/s is shown in MiB/s.
fn bw_lines(out: &mut String, kib: (f64, f64, f64, f64, u64), share_pct: f64, iops: (f64, f64, f64, f64, u64)) {
    let (min, max, mean, dev, n) = kib;
    let (unit, scale) = if mean > 1024.0 * 1024.0 { ("MiB", 1024.0) } else { ("KiB", 1.0) };
    let _ = writeln!(
        out,
        "   bw ({unit:>5}/s): min={:5}, max={:5}, per={share_pct:3.2}%, avg={:5.02}, stdev={:5.02}, samples={n}",
        (min / scale) as u64,
        (max / scale) as u64,
        mean / scale,
        dev / scale
    );
    let (min, max, mean, dev, n) = iops;
    let _ = writeln!(
        out,
        "   iops        : min={:5}, max={:5}, avg={mean:5.02}, stdev={dev:5.02}, samples={n}",
        min as u64, max as u64
    );
}

/// fio's latency distribution rows, five ranges to a row, ranges with no I/O left out.
fn latency_rows(out: &mut String, maps: [(&str, &LatencyMap); 3]) {
    for (unit, map) in maps {
        let cells: Vec<String> = map.iter().filter(|(_, v)| *v > 0.0).map(|(k, v)| format!("{k}={v:3.2}%")).collect();
        for row in cells.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", row.join(", "));
        }
    }
}

/// A direction's line of fio's group summary; rates in bytes/s, runs in ms.
struct GroupLine {
    bytes_per_sec: u64,
    min_job_bytes_per_sec: u64,
    max_job_bytes_per_sec: u64,
    io_bytes: u64,
    min_run_ms: u64,
    max_run_ms: u64,
    sig_figs: usize,
    /// `unit_base=1`: bandwidth in bits.
    bits: bool,
}

/// fio's `MIXED` group line (`unified_rw_reporting=both`) from the directions' lines:
/// their bytes and bandwidths summed, the slowest and fastest job of any, the shortest
/// and longest run.
fn mixed_group_line(lines: &[GroupLine]) -> Option<GroupLine> {
    Some(GroupLine {
        bytes_per_sec: lines.iter().map(|l| l.bytes_per_sec).sum(),
        min_job_bytes_per_sec: lines.iter().map(|l| l.min_job_bytes_per_sec).min()?,
        max_job_bytes_per_sec: lines.iter().map(|l| l.max_job_bytes_per_sec).max()?,
        io_bytes: lines.iter().map(|l| l.io_bytes).sum(),
        min_run_ms: lines.iter().map(|l| l.min_run_ms).min()?,
        max_run_ms: lines.iter().map(|l| l.max_run_ms).max()?,
        sig_figs: lines.last()?.sig_figs,
        bits: lines.last()?.bits,
    })
}

fn group_line(out: &mut String, name: &str, g: &GroupLine) {
    let (rate, unit) = if g.bits { (8, "bit/s") } else { (1, "B/s") };
    let (lo, lo_si) = binary_and_decimal(g.min_job_bytes_per_sec.saturating_mul(rate), unit, g.sig_figs);
    let (hi, hi_si) = binary_and_decimal(g.max_job_bytes_per_sec.saturating_mul(rate), unit, g.sig_figs);
    let (io, io_si) = binary_and_decimal(g.io_bytes, "B", g.sig_figs);
    let _ = writeln!(
        out,
        "  {name:>5}: bw={}, {lo}-{hi} ({lo_si}-{hi_si}), io={io} ({io_si}), run={}-{}msec",
        bandwidth(g.bytes_per_sec, g.sig_figs, g.bits),
        g.min_run_ms,
        g.max_run_ms
    );
}

/// fio's `cpu` line: user and system time in % of the runtime, then context switches,
/// major and minor faults.
fn cpu_line(out: &mut String, usr_pct: f64, sys_pct: f64, [ctx, majf, minf]: [u64; 3]) {
    let _ = writeln!(out, "  cpu          : usr={usr_pct:.2}%, sys={sys_pct:.2}%, ctx={ctx}, majf={majf}, minf={minf}");
}

/// One line of fio's depth or batch distribution: `label: k=x.x%, ...`.
fn levels_line(out: &mut String, label: &str, keys: &[&str; 7], percentages: [f64; 7]) {
    let cells: Vec<String> = keys.iter().zip(percentages).map(|(k, v)| format!("{k}={v:3.1}%")).collect();
    let _ = writeln!(out, "{label}: {}", cells.join(", "));
}

/// fio's name of a job's `rw` (its `ddir_str`: `readwrite` is `rw`).
fn rw_name(pattern: Pattern) -> &'static str {
    match pattern {
        Pattern::SeqRead => "read",
        Pattern::SeqWrite => "write",
        Pattern::SeqMixed => "rw",
        Pattern::SeqTrim => "trim",
        Pattern::SeqTrimWrite => "trimwrite",
        Pattern::RandRead => "randread",
        Pattern::RandWrite => "randwrite",
        Pattern::RandMixed => "randrw",
        Pattern::RandTrim => "randtrim",
        Pattern::RandTrimWrite => "randtrimwrite",
    }
}

/// The lines fio prints before a run in its normal output: each job's settings (its
/// further clones as one `...` line), the version, and what starts (`Starting 1 thread
/// and 5 processes`), as fio 3.33 prints them.
pub fn run_header(jobs: &[JobSpec], version: &str) -> String {
    let mut out = String::new();
    for (spec, group) in jobs.iter().zip(reporting_groups(jobs)) {
        let pow2 = spec.kb_base == KbBase::Binary;
        let size = |bytes: u32| num2str(u64::from(bytes), usize::from(spec.significant_figures), pow2, "B");
        let sizes = |d: usize| format!("{}-{}", size(spec.bs[d].min()), size(spec.bs[d].max()));
        let _ = write!(out, "{}: (g={group}): rw={}, ", spec.name, rw_name(spec.pattern));
        let _ = if spec.bs_is_seq_rand {
            write!(out, "bs=(R) {}, (W) {}, bs_is_seq_rand, ", sizes(0), sizes(1))
        } else {
            write!(out, "bs=(R) {}, (W) {}, (T) {}, ", sizes(0), sizes(1), sizes(2))
        };
        let _ = writeln!(out, "ioengine={}, iodepth={}", spec.ioengine, spec.iodepth);
        if spec.numjobs > 1 {
            out.push_str("...\n");
        }
    }
    let threads: u32 = jobs.iter().filter(|j| j.thread).map(|j| j.numjobs).sum();
    let processes: u32 = jobs.iter().filter(|j| !j.thread).map(|j| j.numjobs).sum();
    let plural = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let started: Vec<String> = [(threads, "thread", "threads"), (processes, "process", "processes")]
        .into_iter()
        .filter(|(n, ..)| *n > 0)
        .map(|(n, one, many)| plural(n, one, many))
        .collect();
    let _ = writeln!(out, "{version}\nStarting {}", started.join(" and "));
    out
}

/// The normal output of a report.
pub fn render(r: &RunReport) -> String {
    // fio's normal output opens with an empty line, after whatever came before it
    let mut out = String::from("\n");
    let groups = group_bandwidths(&r.jobs);
    // fio leaves out a job that moved no data and issued nothing (one that failed to
    // open its file)
    for job in r.jobs.iter().filter(|j| j.total_ios() > 0 || j.dirs.iter().any(|d| d.io_bytes > 0)) {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={}: pid=0: {}",
            job.name,
            job.groupid,
            job.clones,
            match &job.error {
                None => " 0".to_string(),
                Some(e) => format!("{:2} (func={}, error={})", e.errno, e.func, e.error),
            },
            crate::ctime(r.timestamp_ms / 1000)
        );
        if let Some(desc) = &job.description {
            let _ = writeln!(out, "  Description  : [{desc}]");
        }
        let group_rates = group_bandwidth_of(&groups, job);
        for (d, &group_bytes_per_sec) in group_rates.iter().enumerate() {
            ddir(&mut out, d, job, group_bytes_per_sec);
        }
        if job.also_mixed {
            // unified_rw_reporting=both (fio 3.33 prints this line's IOPS, BW and io as 0;
            // its JSON has the sums shown here)
            ddir(&mut out, 0, &job.mixed(), group_rates[0]);
        }
        let (ns, us, ms) = latency_maps(&job.all_clat_hist());
        latency_rows(&mut out, [("nsec", &ns), ("usec", &us), ("msec", &ms)]);
        // fio: after the latency rows, with percentiles whatever clat_percentiles says
        if job.sync.n > 0 {
            out.push_str("  fsync/fdatasync/sync_file_range:\n");
            lat_line(&mut out, "sync", &job.sync);
            let list = &job.percentile_list;
            let shown = (list.as_slice(), job.percentile_precision);
            percentile_block(&mut out, "sync", shown, &job.sync_hist.percentiles(list));
        }
        let (usr, sys) = job.cpu.percentages();
        cpu_line(&mut out, usr, sys, [job.cpu.ctx, job.cpu.majf, job.cpu.minf]);
        levels_line(&mut out, "  IO depths    ", &["1", "2", "4", "8", "16", "32", ">=64"], job.depth_percentages());
        let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
        levels_line(&mut out, "     submit    ", &batch_keys, batch_percentages(&job.submit_levels));
        levels_line(&mut out, "     complete  ", &batch_keys, batch_percentages(&job.complete_levels));
        let _ = writeln!(
            out,
            "     issued rwts: total={},{},{},{} short={},{},0,0 dropped=0,0,0,0",
            job.dirs[0].total_ios,
            job.dirs[1].total_ios,
            job.dirs[2].total_ios,
            job.sync_total_ios(),
            job.short_ios(0),
            job.short_ios(1)
        );
        if let Some(e) = job.io_errors {
            let _ = writeln!(
                out,
                "     errors    : total={}, first_error={}/<{}>",
                e.total,
                e.first,
                crate::stats::strerror(e.first)
            );
        }
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            job.latency_target_ns, job.latency_window_us, job.latency_percentile, job.iodepth
        );
        if let Some(ss) = &job.steadystate {
            let what = match (ss.spec.metric, ss.spec.slope) {
                (SsMetric::Iops, false) => "iops mean dev",
                (SsMetric::Iops, true) => "iops slope",
                (SsMetric::Bw, false) => "bw mean dev",
                (SsMetric::Bw, true) => "bw slope",
            };
            let _ = writeln!(
                out,
                "  steadystate  : attained={}, bw={}, iops={}, {what}={:.3}{}",
                if ss.attained { "yes" } else { "no" },
                bandwidth(ss.bw_mean(), job.sig_figs.into(), job.bandwidth_in_bits),
                ss.iops_mean(),
                ss.criterion,
                ss.spec.unit()
            );
        }
    }
    let mut groups: Vec<u32> = r.jobs.iter().map(|j| j.groupid).collect();
    groups.dedup();
    for g in groups {
        // fio opens every group's block with an empty line, not only the first
        let _ = writeln!(out, "\nRun status group {g} (all jobs):");
        let unified = r.jobs.iter().any(|j| j.groupid == g && j.unified);
        let mut lines = Vec::new();
        for d in 0..3 {
            let name = dir_name(d, unified).to_uppercase();
            let members = group_members(&r.jobs, g, d);
            let run_ms: Vec<u64> = members.iter().map(|j| runtime_ms(j, d)).collect();
            let rates: Vec<u64> = members.iter().map(|j| dir_rate(j.dirs[d].io_bytes, runtime_ms(j, d))).collect();
            let (Some(&min_run_ms), Some(&max_run_ms)) = (run_ms.iter().min(), run_ms.iter().max()) else {
                continue;
            };
            let line = GroupLine {
                bytes_per_sec: group_rate(&members, d),
                min_job_bytes_per_sec: rates.iter().copied().min().unwrap_or(0),
                max_job_bytes_per_sec: rates.iter().copied().max().unwrap_or(0),
                io_bytes: members.iter().map(|j| j.dirs[d].io_bytes).sum(),
                min_run_ms,
                max_run_ms,
                // fio prints a group with its last job's significant_figures
                sig_figs: members.last().map_or(4, |j| j.sig_figs.into()),
                bits: members.last().is_some_and(|j| j.bandwidth_in_bits),
            };
            group_line(&mut out, &name, &line);
            lines.push(line);
        }
        if r.jobs.iter().any(|j| j.groupid == g && j.also_mixed) {
            if let Some(line) = mixed_group_line(&lines) {
                group_line(&mut out, "MIXED", &line);
            }
        }
    }
    for d in &r.disk_util {
        let _ = writeln!(out, "\nDisk stats (read/write):");
        let _ = writeln!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks_ms,
            d.write_ticks_ms,
            d.in_queue_ms,
            d.util_pct
        );
    }
    if !r.summary_extra.is_empty() {
        out.push('\n');
        for line in &r.summary_extra {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// fio 3.33's output for the job files beside them in `tests/fixtures/fio-3.33/`:
    /// the JSON, then the normal text.
    const FIO_RUNS: [&str; 2] = [
        include_str!("../tests/fixtures/fio-3.33/normal-and-json.out"),
        include_str!("../tests/fixtures/fio-3.33/percentiles.out"),
    ];

    /// fio 3.33's percentile lines for `percentile_list`s written with 0, 1 and 3
    /// decimals (null engine, the values it measured): each percentile shows as many
    /// decimals as the list was written with, and the lines hold as many as fit 80 columns.
    #[test]
    fn percentiles_show_the_decimals_the_list_was_written_with() {
        let block = |list: &[f64], precision: u8, values: &[u64]| {
            let mut out = String::new();
            percentile_block(&mut out, "clat", (list, precision), values);
            out
        };
        assert_eq!(
            block(&[50.0, 99.0], 0, &[17, 20]),
            "    clat percentiles (nsec):\n     |  50th=[   17],  99th=[   20]\n"
        );
        assert_eq!(
            block(&[1.5, 50.0, 99.5], 1, &[16, 17, 22]),
            "    clat percentiles (nsec):\n     |  1.5th=[   16], 50.0th=[   17], 99.5th=[   22]\n"
        );
        assert_eq!(
            block(&[1.0, 5.0, 10.0, 50.0, 99.0, 99.9, 99.99, 99.999], 3, &[17, 17, 17, 18, 21, 83, 5600, 5600]),
            "    clat percentiles (nsec):\n     |  1.000th=[   17],  5.000th=[   17], 10.000th=[   17], 50.000th=[   18],\n     \
             | 99.000th=[   21], 99.900th=[   83], 99.990th=[ 5600], 99.999th=[ 5600]\n"
        );
    }

    fn header_of(job_file: &str) -> String {
        let jobs = nvsched_workload::parse_job_str(
            job_file,
            std::path::Path::new("t.fio"),
            &nvsched_workload::HostEnvironment,
            nvsched_workload::ParseOptions::default(),
        )
        .unwrap();
        run_header(&jobs.jobs, "fio-3.33")
    }

    /// The lines before the run: as fio 3.33 printed them for the fixtures' job files
    /// (less its "Laying out IO file" lines, which nvsched has no files for), and for
    /// clones, threads, ranges, splits, `bs_is_seq_rand`, `kb_base=1000` and an iodepth a
    /// synchronous engine caps.
    #[test]
    fn header_lines_match_fio_3_33() {
        let fixtures = [
            (include_str!("../tests/fixtures/fio-3.33/normal-and-json.fio"), FIO_RUNS[0]),
            (include_str!("../tests/fixtures/fio-3.33/percentiles.fio"), FIO_RUNS[1]),
        ];
        for (job_file, fio) in fixtures {
            let printed: String = fio[..fio.find("\n{").unwrap() + 1]
                .lines()
                .filter(|l| !l.contains("Laying out IO file"))
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(header_of(job_file), printed);
        }
        // fio 3.33: fio --size=1m --name=a --ioengine=psync --iodepth=8 --bs=4k,16k
        // --numjobs=3 --name=b --rw=readwrite --bsrange=512-64k --ioengine=null --thread
        // --name=c --rw=randtrimwrite --bssplit=4k/50:1m/50 --ioengine=null
        // --bs_is_seq_rand=1 --name=d --kb_base=1000 --bs=64k --ioengine=null --rw=randtrim
        let job_file = "[global]\nsize=1m\n[a]\nioengine=psync\niodepth=8\nbs=4k,16k\nnumjobs=3\n\
                        [b]\nrw=readwrite\nbsrange=512-64k\nioengine=null\nthread\n\
                        [c]\nrw=randtrimwrite\nbssplit=4k/50:1m/50\nioengine=null\nbs_is_seq_rand=1\n\
                        [d]\nkb_base=1000\nbs=64k\nioengine=null\nrw=randtrim\n";
        let fio = "\
a: (g=0): rw=read, bs=(R) 4096B-4096B, (W) 16.0KiB-16.0KiB, (T) 16.0KiB-16.0KiB, ioengine=psync, iodepth=8
...
b: (g=0): rw=rw, bs=(R) 512B-64.0KiB, (W) 512B-64.0KiB, (T) 512B-64.0KiB, ioengine=null, iodepth=1
c: (g=0): rw=randtrimwrite, bs=(R) 4096B-1024KiB, (W) 4096B-1024KiB, bs_is_seq_rand, ioengine=null, iodepth=1
d: (g=0): rw=randtrim, bs=(R) 64.0kB-64.0kB, (W) 64.0kB-64.0kB, (T) 64.0kB-64.0kB, ioengine=null, iodepth=1
fio-3.33
Starting 1 thread and 5 processes
";
        assert_eq!(header_of(job_file), fio);
        let grouped = header_of("[a]\nsize=1m\n[b]\nsize=1m\nstonewall\n[c]\nsize=1m\nnew_group\n");
        let groups: Vec<&str> = grouped.lines().filter_map(|l| l.split(": (g=").nth(1)?.get(..1)).collect();
        assert_eq!(groups, ["0", "1", "2"]);
    }

    fn fio_json_and_text(fio: &'static str) -> (Value, &'static str) {
        let start = fio.find("\n{").expect("JSON half") + 1;
        let end = fio.find("\n}\n").expect("end of JSON") + 2;
        (serde_json::from_str(&fio[start..end]).unwrap(), &fio[end..])
    }

    fn int(v: &Value) -> u64 {
        v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
    }

    fn num(v: &Value) -> f64 {
        v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
    }

    /// A JSON object of number-named keys, in numeric order (">=2000" last).
    fn numeric_entries(v: &Value) -> Vec<(String, &Value)> {
        let mut e: Vec<(String, &Value)> = v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v)).collect();
        let key =
            |k: &str| k.trim_start_matches(">=").parse::<f64>().unwrap() + if k.starts_with(">=") { 0.5 } else { 0.0 };
        e.sort_by(|a, b| key(&a.0).total_cmp(&key(&b.0)));
        e
    }

    fn lat_block(out: &mut String, label: &str, l: &Value) {
        if int(&l["N"]) > 0 {
            lat_values(out, label, int(&l["min"]), int(&l["max"]), num(&l["mean"]), num(&l["stddev"]));
        }
    }

    fn percentiles(out: &mut String, title: &str, lat: &Value) {
        if lat.get("percentile").is_none() {
            return;
        }
        let entries = numeric_entries(&lat["percentile"]);
        let list: Vec<f64> = entries.iter().map(|(k, _)| k.parse().unwrap()).collect();
        let values: Vec<u64> = entries.iter().map(|(_, v)| int(v)).collect();
        percentile_block(out, title, (&list, 2), &values);
    }

    #[test]
    fn unit_base_1_prints_bandwidth_in_bits_as_fio_does() {
        // fio 3.33, 1 MiB read in 1 ms with unit_base=1
        let mut out = String::new();
        ddir_header(&mut out, "read", 256, 1 << 20, 1, SIG_FIGS, true);
        assert_eq!(out, "  read: IOPS=256k, BW=8000Mibit/s (8389Mbit/s)(1024KiB/1msec)\n");
        let rate = 1_048_576_000;
        let line = GroupLine {
            bytes_per_sec: rate,
            min_job_bytes_per_sec: rate,
            max_job_bytes_per_sec: rate,
            io_bytes: 1 << 20,
            min_run_ms: 1,
            max_run_ms: 1,
            sig_figs: SIG_FIGS,
            bits: true,
        };
        let mut out = String::new();
        group_line(&mut out, "READ", &line);
        assert_eq!(
            out,
            "   READ: bw=8000Mibit/s (8389Mbit/s), 8000Mibit/s-8000Mibit/s (8389Mbit/s-8389Mbit/s), io=1024KiB (1049kB), run=1-1msec\n"
        );
    }

    /// Formats what fio's JSON holds with nvsched's functions; every line must be one of
    /// fio's own normal-output lines for the same run.
    #[test]
    fn significant_figures_as_fio_prints_them() {
        // fio 3.33, null engine at rate_iops=12345 for 1 s: 12346 reads in 1001 ms
        let header = |sig_figs| {
            let mut out = String::new();
            ddir_header(&mut out, "read", 12346, 49384 * 1024, 1001, sig_figs, false);
            out
        };
        assert_eq!(header(6), "  read: IOPS=12333, BW=49335KiB/s (50519kB/s)(49384KiB/1001msec)\n");
        assert_eq!(header(2), "  read: IOPS=12k, BW=48MiB/s (51MB/s)(48MiB/1001msec)\n");
        assert_eq!(header(4), "  read: IOPS=12.3k, BW=48.2MiB/s (50.5MB/s)(48.2MiB/1001msec)\n");
    }

    #[test]
    fn lines_match_fio_3_33_for_the_same_numbers() {
        for fio in FIO_RUNS {
            lines_match_fio(fio);
        }
    }

    fn lines_match_fio(fio: &'static str) {
        let (json, text) = fio_json_and_text(fio);
        let mut out = String::new();
        let jobs = json["jobs"].as_array().unwrap();
        for job in jobs {
            for (d, key) in ["read", "write", "trim"].iter().enumerate() {
                let dir = &job[*key];
                if int(&dir["total_ios"]) == 0 {
                    continue;
                }
                let name = ["read", "write", "trim"][d];
                ddir_header(
                    &mut out,
                    name,
                    int(&dir["total_ios"]),
                    int(&dir["io_bytes"]),
                    int(&dir["runtime"]),
                    SIG_FIGS,
                    false,
                );
                lat_block(&mut out, "slat", &dir["slat_ns"]);
                lat_block(&mut out, "clat", &dir["clat_ns"]);
                lat_block(&mut out, " lat", &dir["lat_ns"]);
                let prios = dir["prios"].as_array().cloned().unwrap_or_default();
                // per-priority entries hold total latency under lat_percentiles
                let kind = if prios.iter().any(|p| p.get("lat_ns").is_some()) { "lat" } else { "clat" };
                let name = |p: &Value| format!("{kind} prio {}/{}", p["prioclass"], p["prio"]);
                let key = format!("{kind}_ns");
                for p in &prios {
                    lat_block(&mut out, &name(p), &p[&key]);
                }
                percentiles(&mut out, "slat", &dir["slat_ns"]);
                percentiles(&mut out, "clat", &dir["clat_ns"]);
                percentiles(&mut out, "lat", &dir["lat_ns"]);
                for p in &prios {
                    let share = 100.0 * num(&p[&key]["N"]) / num(&dir["clat_ns"]["N"]);
                    percentiles(&mut out, &format!("{} ({share:.2}% of IOs)", name(p)), &p[&key]);
                }
                let stat = |k: &str, dev: &str| {
                    let n = |s: &str| num(&dir[format!("{k}_{s}")]);
                    (n("min"), n("max"), n("mean"), n(dev), int(&dir[format!("{k}_samples")]))
                };
                bw_lines(&mut out, stat("bw", "dev"), num(&dir["bw_agg"]), stat("iops", "stddev"));
            }
            let map =
                |k: &str| -> LatencyMap { numeric_entries(&job[k]).into_iter().map(|(k, v)| (k, num(v))).collect() };
            let (ns, us, ms) = (map("latency_ns"), map("latency_us"), map("latency_ms"));
            latency_rows(&mut out, [("nsec", &ns), ("usec", &us), ("msec", &ms)]);
            cpu_line(
                &mut out,
                num(&job["usr_cpu"]),
                num(&job["sys_cpu"]),
                ["ctx", "majf", "minf"].map(|k| int(&job[k])),
            );
        }
        for (key, name) in [("read", "READ"), ("write", "WRITE")] {
            let dirs: Vec<&Value> = jobs.iter().map(|j| &j[key]).filter(|v| int(&v["total_ios"]) > 0).collect();
            let runs: Vec<u64> = dirs.iter().map(|v| int(&v["runtime"])).collect();
            let rates: Vec<u64> = dirs.iter().map(|v| int(&v["bw_bytes"])).collect();
            let io_bytes = dirs.iter().map(|v| int(&v["io_bytes"])).sum();
            let max_run_ms = *runs.iter().max().unwrap();
            let line = GroupLine {
                bytes_per_sec: dir_rate(io_bytes, max_run_ms),
                min_job_bytes_per_sec: *rates.iter().min().unwrap(),
                max_job_bytes_per_sec: *rates.iter().max().unwrap(),
                io_bytes,
                min_run_ms: *runs.iter().min().unwrap(),
                max_run_ms,
                sig_figs: SIG_FIGS,
                bits: false,
            };
            group_line(&mut out, name, &line);
        }
        let fio_lines: std::collections::HashSet<&str> = text.lines().collect();
        let mut checked = 0;
        for line in out.lines() {
            assert!(fio_lines.contains(line), "nvsched printed\n{line}\nwhich is not a line of fio's output:\n{text}");
            checked += 1;
        }
        assert!(checked > 60, "only {checked} lines compared");
    }

    #[test]
    fn num2str_follows_fio() {
        for (v, digits, pow2, unit, want) in [
            (0, 4, false, "", "0"),
            (8055, 4, false, "", "8055"),
            (60_390, 4, false, "", "60.4k"),
            (549_000, 4, false, "", "549k"),
            (247_360_735, 4, true, "B/s", "236MiB/s"),
            (247_360_735, 4, false, "B/s", "247MB/s"),
            (29_382_128, 6, false, "", "29382k"),
            (4_290 << 20, 4, true, "B", "4290MiB"),
            // fio prints 24.0k here (its fraction rounds up to a whole one without carrying).
            (24_999, 4, false, "", "25.0k"),
        ] {
            assert_eq!(num2str(v, digits, pow2, unit), want, "{v}");
        }
    }

    /// The group share fio prints as `per=` (its `bw_agg`), from the job's mean KiB/s and
    /// the group's bytes/s.
    #[test]
    fn group_share_follows_fio() {
        let (json, _) = fio_json_and_text(FIO_RUNS[0]);
        let jobs = json["jobs"].as_array().unwrap();
        for key in ["read", "write"] {
            let dirs: Vec<&Value> = jobs.iter().map(|j| &j[key]).filter(|v| int(&v["total_ios"]) > 0).collect();
            let io_bytes = dirs.iter().map(|v| int(&v["io_bytes"])).sum();
            let group = dir_rate(io_bytes, dirs.iter().map(|v| int(&v["runtime"])).max().unwrap());
            for dir in dirs {
                let share = group_share_pct(num(&dir["bw_mean"]), group);
                assert!((share - num(&dir["bw_agg"])).abs() < 0.005, "{key}: {share} vs fio {}", dir["bw_agg"]);
            }
        }
    }
}
