//! Figures of a single run (`nvsched run --plot DIR`): per-second bandwidth per job, the
//! policy's time series, and (simulated runs) the device's internal activity.

use nvsched_policy::PolicyReport;
use nvsched_report::plots::{Figure, Panel, PanelKind};
use nvsched_report::RunReport;
use nvsched_ssd::DeviceCounters;
use std::path::Path;

/// What a run's figures draw besides the report: the policy's series, and the simulated
/// device's activity (a real device has none to show).
pub struct RunSeries<'a> {
    pub policy_id: &'a str,
    pub policy: &'a PolicyReport,
    pub device: Option<&'a DeviceCounters>,
}

/// Writes the figures; returns their file names (without extension).
pub fn run_figures(report: &RunReport, run: &RunSeries, dir: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let series: Vec<(String, Vec<(f64, f64)>)> = report
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let seconds = j.dirs.iter().map(|d| d.series.bytes.len()).max().unwrap_or(0);
            let bytes: Vec<u64> = (0..seconds)
                .map(|s| j.dirs.iter().map(|d| d.series.bytes.get(s).copied().unwrap_or(0)).sum())
                .collect();
            // the run's clock: a job that starts late (startdelay) is drawn where it ran
            let start_s = j.stats_start.0 as f64 / 1e9;
            let pts =
                per_second_mbps(&bytes, j.runtime.0 as f64 / 1e9).into_iter().map(|(t, v)| (start_s + t, v)).collect();
            (format!("{} #{i}", j.name), pts)
        })
        .collect();
    let bw = Panel {
        title: "bandwidth per job".into(),
        x_label: "time (s)".into(),
        y_label: "MB/s".into(),
        log_x: false,
        log_y: false,
        kind: PanelKind::Lines(series),
    };
    Figure { title: "Per-second bandwidth".into(), rows: 1, cols: 1, panels: vec![bw] }.save(&dir.join("bandwidth"))?;
    names.push("bandwidth".to_string());
    let policy: Vec<Panel> = run
        .policy
        .series
        .iter()
        .map(|s| Panel {
            title: s.name.clone(),
            x_label: "time (s)".into(),
            y_label: s.unit.clone(),
            log_x: false,
            log_y: false,
            kind: PanelKind::Lines(vec![(s.name.clone(), steps(&s.points))]),
        })
        .collect();
    if !policy.is_empty() {
        let cols = policy.len().min(3);
        Figure { title: format!("Policy {}", run.policy_id), rows: policy.len().div_ceil(cols), cols, panels: policy }
            .save(&dir.join("policy"))?;
        names.push("policy".to_string());
    }
    let device: Vec<Panel> = run
        .device
        .iter()
        .flat_map(|d| &d.series)
        .filter(|s| s.values.iter().any(|v| *v > 0.0))
        .map(|s| Panel {
            title: s.name.replace('_', " "),
            x_label: "time (s)".into(),
            y_label: "4 KiB pages per second".into(),
            log_x: false,
            log_y: false,
            kind: PanelKind::Lines(vec![(
                s.name.clone(),
                s.values.iter().enumerate().map(|(i, v)| (i as f64 + 0.5, *v)).collect(),
            )]),
        })
        .collect();
    if !device.is_empty() {
        let cols = device.len().min(3);
        Figure { title: "Device activity".into(), rows: device.len().div_ceil(cols), cols, panels: device }
            .save(&dir.join("device"))?;
        names.push("device".to_string());
    }
    Ok(names)
}

/// MB/s per one-second window of a job that ran `runtime_s` seconds, at each window's
/// middle. The last window is partial: over half a second it is scaled to the time it
/// covers, shorter it is left out (a few requests completing as the job stops would draw
/// a drop to zero, or a spike, that the job never had).
fn per_second_mbps(bytes: &[u64], runtime_s: f64) -> Vec<(f64, f64)> {
    bytes
        .iter()
        .enumerate()
        .filter_map(|(s, &b)| {
            let start = s as f64;
            let covered = (runtime_s - start).clamp(0.0, 1.0);
            if covered >= 1.0 {
                Some((start + 0.5, b as f64 / 1e6))
            } else if covered >= 0.5 {
                Some((start + covered / 2.0, b as f64 / 1e6 / covered))
            } else {
                None
            }
        })
        .collect()
}

/// A policy's series holds each value from its time on (the bound set then), so it is
/// drawn as steps, in seconds.
fn steps(points: &[(u64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(t_ns, v)) in points.iter().enumerate() {
        let t = t_ns as f64 / 1e9;
        if i > 0 {
            out.push((t, points[i - 1].1));
        }
        out.push((t, v));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_short_last_window_is_left_out_and_a_long_one_scaled() {
        let pts = super::per_second_mbps(&[2_000_000, 2_000_000, 10_000], 2.001);
        assert_eq!(pts, vec![(0.5, 2.0), (1.5, 2.0)]);
        let pts = super::per_second_mbps(&[2_000_000, 1_500_000], 1.75);
        assert_eq!(pts, vec![(0.5, 2.0), (1.375, 2.0)]);
    }

    #[test]
    fn policy_series_are_drawn_as_steps() {
        let pts = super::steps(&[(0, 1.0), (500_000_000, 4.0), (2_000_000_000, 2.0)]);
        assert_eq!(pts, vec![(0.0, 1.0), (0.5, 1.0), (0.5, 4.0), (2.0, 4.0), (2.0, 2.0)]);
    }
}
