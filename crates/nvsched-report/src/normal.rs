//! fio's human-readable output (`--output-format=normal`), plus nvsched's own summary
//! lines at the end.

use crate::fio_json::{dir_bw_bytes, latency_maps, level_percentages};
use crate::stats::{window_summary, DirStats, JobStats, LatStats, BW_WINDOW};
use crate::RunReport;
use std::fmt::Write;

/// `1.5k`, `73.7M`-style numbers (fio's `num2str` with base 1000).
fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Bytes per second as fio prints them: `73.7MiB/s (77.3MB/s)`.
pub fn bandwidth(bytes_per_sec: f64) -> String {
    format!("{} ({})", binary(bytes_per_sec, "/s"), decimal(bytes_per_sec, "/s"))
}

fn binary(v: f64, suffix: &str) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = v;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{}{}{suffix}", trim(v), UNITS[i])
}

fn decimal(v: f64, suffix: &str) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = v;
    let mut i = 0;
    while v >= 1000.0 && i < UNITS.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    format!("{}{}{suffix}", trim(v), UNITS[i])
}

fn trim(v: f64) -> String {
    if v >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Chooses fio's unit for a latency block from its maximum.
fn lat_unit(max_ns: u64) -> (&'static str, f64) {
    if max_ns < 10_000 {
        ("nsec", 1.0)
    } else if max_ns < 10_000_000 {
        ("usec", 1e3)
    } else {
        ("msec", 1e6)
    }
}

fn lat_line(out: &mut String, label: &str, s: &LatStats) {
    if s.n == 0 {
        return;
    }
    let (unit, div) = lat_unit(s.max);
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
        (s.min as f64 / div).round(),
        (s.max as f64 / div).round(),
        s.mean() / div,
        s.stddev() / div
    );
}

fn percentile_block(out: &mut String, title: &str, list: &[f64], values: &[u64]) {
    let max = values.iter().copied().max().unwrap_or(0);
    let (unit, div) = lat_unit(max);
    let _ = writeln!(out, "    {title} ({unit}):");
    let pairs: Vec<_> = list.iter().zip(values).collect();
    let rows: Vec<_> = pairs.chunks(4).collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> =
            row.iter().map(|(p, v)| format!("{:5.2}th=[{:>5}]", p, (**v as f64 / div).round())).collect();
        let sep = if i + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(out, "     | {}{sep}", cells.join(", "));
    }
}

fn ddir(out: &mut String, name: &str, d: &DirStats, job: &JobStats) {
    if d.total_ios == 0 {
        return;
    }
    let runtime = job.runtime.0.max(1);
    let bw = dir_bw_bytes(d, runtime);
    let iops = d.total_ios as f64 * 1e9 / runtime as f64;
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}({}/{}msec)",
        si(iops),
        bandwidth(bw),
        binary(d.io_bytes as f64, ""),
        (runtime + 500_000) / 1_000_000
    );
    lat_line(out, "slat", &d.slat);
    lat_line(out, "clat", &d.clat);
    lat_line(out, " lat", &d.lat);
    let mut prios: Vec<_> = d.prios.iter().filter(|p| p.clat.n > 0).collect();
    prios.sort_by_key(|p| (p.prio.class as u8, p.prio.level));
    if prios.len() >= 2 {
        for p in &prios {
            lat_line(out, &format!("clat prio {}/{}", p.prio.class as u8, p.prio.level), &p.clat);
        }
    }
    percentile_block(out, "clat percentiles", &job.percentile_list, &d.clat_hist.percentiles(&job.percentile_list));
    if prios.len() >= 2 {
        for p in &prios {
            let share = 100.0 * p.clat.n as f64 / d.clat.n.max(1) as f64;
            let title = format!("clat prio {}/{} ({share:.2}% of IOs) percentiles", p.prio.class as u8, p.prio.level);
            percentile_block(out, &title, &job.percentile_list, &p.hist.percentiles(&job.percentile_list));
        }
    }
    let complete = (job.runtime.0 / BW_WINDOW.0) as usize;
    let per_sec = 1e9 / BW_WINDOW.0 as f64;
    let (min, max, mean, dev, n) = window_summary(&d.bw_windows.bytes, complete, per_sec / 1024.0);
    if n > 0 {
        let _ =
            writeln!(out, "   bw (  KiB/s): min={min:.0}, max={max:.0}, avg={mean:.2}, stdev={dev:.2}, samples={n}");
        let (min, max, mean, dev, n) = window_summary(&d.bw_windows.ios, complete, per_sec);
        let _ =
            writeln!(out, "   iops        : min={min:.0}, max={max:.0}, avg={mean:.2}, stdev={dev:.2}, samples={n}");
    }
}

/// The normal output of a report.
pub fn render(r: &RunReport) -> String {
    let mut out = String::new();
    for job in &r.jobs {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err= 0: pid=0: {}",
            job.name,
            job.groupid,
            job.clones,
            crate::ctime(r.timestamp_ms / 1000)
        );
        if let Some(desc) = &job.description {
            let _ = writeln!(out, "  Description  : [{desc}]");
        }
        ddir(&mut out, "read", &job.dirs[0], job);
        ddir(&mut out, "write", &job.dirs[1], job);
        ddir(&mut out, "trim", &job.dirs[2], job);
        if job.sync.n > 0 {
            let _ = writeln!(out, "  fsync/fdatasync: {} issued", job.sync.n);
            lat_line(&mut out, "sync", &job.sync);
        }
        let (ns, us, ms) = latency_maps(&job.all_clat_hist());
        for (label, map) in [("lat (nsec)   ", &ns), ("lat (usec)   ", &us), ("lat (msec)   ", &ms)] {
            let cells: Vec<String> =
                map.iter().filter(|(_, v)| *v > 0.0).map(|(k, v)| format!("{k}={v:.2}%")).collect();
            if !cells.is_empty() {
                let _ = writeln!(out, "  {label}: {}", cells.join(", "));
            }
        }
        let depths = level_percentages(&job.depth_levels);
        let keys = ["1", "2", "4", "8", "16", "32", ">=64"];
        let cells: Vec<String> = keys.iter().zip(depths).map(|(k, v)| format!("{k}={v:.1}%")).collect();
        let _ = writeln!(out, "  IO depths    : {}", cells.join(", "));
        let _ = writeln!(
            out,
            "     issued rwts: total={},{},{},{}",
            job.dirs[0].total_ios, job.dirs[1].total_ios, job.dirs[2].total_ios, job.sync.n
        );
        out.push('\n');
    }
    let mut groups: Vec<u32> = r.jobs.iter().map(|j| j.groupid).collect();
    groups.dedup();
    for g in groups {
        let _ = writeln!(out, "Run status group {g} (all jobs):");
        for (d, name) in ["READ", "WRITE", "TRIM"].iter().enumerate() {
            let members: Vec<&JobStats> = r.jobs.iter().filter(|j| j.groupid == g && j.dirs[d].total_ios > 0).collect();
            if members.is_empty() {
                continue;
            }
            let bw: f64 = members.iter().map(|j| dir_bw_bytes(&j.dirs[d], j.runtime.0)).sum();
            let io: u64 = members.iter().map(|j| j.dirs[d].io_bytes).sum();
            let run_ms: Vec<u64> = members.iter().map(|j| (j.runtime.0 + 500_000) / 1_000_000).collect();
            let _ = writeln!(
                out,
                "  {name:>5}: bw={}, io={} ({}), run={}-{}msec",
                bandwidth(bw),
                binary(io as f64, ""),
                decimal(io as f64, ""),
                run_ms.iter().min().unwrap_or(&0),
                run_ms.iter().max().unwrap_or(&0)
            );
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
