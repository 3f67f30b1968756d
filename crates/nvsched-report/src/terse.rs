//! fio's terse format, version 3 (`--output-format=terse`): one `;`-separated line per
//! job; latencies in microseconds.

use crate::fio_json::{dir_bw_bytes, group_bandwidth_of, group_bandwidths, latency_maps};
use crate::stats::{JobStats, LatStats};
use crate::RunReport;
use std::fmt::Write;

fn us_stats(out: &mut String, s: &LatStats) {
    let _ = write!(out, ";{};{};{:.6};{:.6}", s.min / 1000, s.max / 1000, s.mean() / 1000.0, s.stddev() / 1000.0);
}

fn ddir(out: &mut String, dir: usize, job: &JobStats, group_bytes_per_sec: u64) {
    let d = &job.dirs[dir];
    let runtime_ns = if d.total_ios > 0 { job.dir_runtime(dir).0.max(1) } else { 0 };
    let bw_bytes = dir_bw_bytes(d, runtime_ns);
    let iops = if runtime_ns > 0 { d.total_ios as f64 * 1e9 / runtime_ns as f64 } else { 0.0 };
    let _ = write!(
        out,
        ";{};{};{};{}",
        d.io_bytes >> 10,
        (bw_bytes / 1024.0) as u64,
        iops as u64,
        (runtime_ns + 500_000) / 1_000_000
    );
    us_stats(out, &d.slat);
    us_stats(out, &d.clat);
    // fio's terse line has one percentile set: total latency's under lat_percentiles,
    // else completion latency's (zeros when neither is asked for)
    let kinds = job.percentile_kinds;
    let hist = match &d.lat_hist {
        Some(h) if kinds.lat => Some(h),
        _ => kinds.clat.then_some(&d.clat_hist),
    };
    let values = hist.map(|h| h.percentiles(&job.percentile_list)).unwrap_or_default();
    for i in 0..20 {
        match (job.percentile_list.get(i), values.get(i)) {
            (Some(p), Some(v)) if d.clat.n > 0 => {
                let _ = write!(out, ";{p:.6}%={}", v / 1000);
            }
            (Some(p), _) => {
                let _ = write!(out, ";{p:.6}%=0");
            }
            _ => out.push_str(";0%=0"),
        }
    }
    us_stats(out, &d.lat);
    let (min, max, mean, dev, samples) = job.bw_summary(dir);
    // fio's terse share: the mean over the group's rate in whole KiB/s, at most 100%
    let agg = match group_bytes_per_sec / 1024 {
        _ if samples == 0 => 0.0,
        0 => 100.0,
        group_kib => (mean * 100.0 / group_kib as f64).min(100.0),
    };
    let _ = write!(out, ";{};{};{agg:.6}%;{mean:.6};{dev:.6}", min as u64, max as u64);
}

/// The terse v3 lines of a report.
pub fn render(r: &RunReport) -> String {
    let groups = group_bandwidths(&r.jobs);
    let mut out = String::new();
    for job in &r.jobs {
        let bw = group_bandwidth_of(&groups, job);
        let _ = write!(out, "3;{};{};{};{}", r.version, job.name, job.groupid, job.errno());
        ddir(&mut out, 0, job, bw[0]);
        if !job.unified {
            // under unified_rw_reporting=mixed fio's line has the one mixed direction
            ddir(&mut out, 1, job, bw[1]);
        }
        if job.also_mixed {
            // unified_rw_reporting=both: the mixed direction follows
            ddir(&mut out, 0, &job.mixed(), bw[0]);
        }
        let (usr, sys) = job.cpu.percentages();
        let _ = write!(out, ";{usr:.6}%;{sys:.6}%;{};{};{}", job.cpu.ctx, job.cpu.majf, job.cpu.minf);
        for p in job.depth_percentages() {
            let _ = write!(out, ";{p:.1}%");
        }
        let (ns, us, ms) = latency_maps(&job.all_clat_hist());
        // terse folds the ns buckets into the first us bucket
        let ns_total: f64 = ns.iter().map(|(_, v)| v).sum();
        for (i, (_, v)) in us.iter().enumerate() {
            let v = if i == 0 { v + ns_total } else { *v };
            let _ = write!(out, ";{v:.2}%");
        }
        for (_, v) in &ms {
            let _ = write!(out, ";{v:.2}%");
        }
        for d in &r.disk_util {
            let _ = write!(
                out,
                ";{};{};{};{};{};{};{};{};{:.2}%",
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
        out.push('\n');
    }
    out
}
