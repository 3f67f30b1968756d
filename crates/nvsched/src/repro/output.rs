//! A reproduction's outputs: the console table, `results.json`, `report.md` and plots.

use super::manifest::{describe_device, settings, Manifest, State, Variant};
use super::{OnDevice, Options, Outcome, Verdict};
use nvsched_report::plots::{Figure, LabelledPoint, Panel, PanelKind, Reference};
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::Path;

/// The metrics shown in tables, by experiment kind: (metric, header).
fn columns(kind: &str) -> &'static [(&'static str, &'static str)] {
    match kind {
        "k2" => &[("rt_p999_us", "RT p99.9 (us)"), ("total_bw_mbps", "total BW (MB/s)")],
        "prio-nice" => &[
            ("read_adjacent_ratio", "read adj. ratio"),
            ("write_adjacent_ratio", "write adj. ratio"),
            ("read_mean_runtime_s", "read runtime (s)"),
            ("write_mean_runtime_s", "write runtime (s)"),
        ],
        "tabs" => &[("read_bw_mbps", "read BW (MB/s)"), ("fua_bw_mbps", "FUA BW (MB/s)"), ("fairness", "fairness")],
        "mts" => &[("distribution_error", "distribution error"), ("total_bw_mbps", "total BW (MB/s)")],
        "veloces" => &[("total_iops", "IOPS")],
        _ => &[],
    }
}

fn fmt_value(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The per-cell table with the paper's values beside nvsched's, and the claims.
pub fn console_table(o: &Outcome) -> String {
    let m = &o.manifest;
    let cols = columns(&m.kind);
    let mut s = format!("{} — {}\n{}\n", m.name, m.title, m.paper);
    let _ = writeln!(
        s,
        "device {}, {}",
        describe_device(&m.device, &m.device_set),
        if o.quick { "quick mode" } else { "full mode" }
    );
    if let Some(own) = &m.own_device {
        let _ = writeln!(s, "instead of the experiment's own {own}, which the paper's values and the notes are about");
    }
    s.push('\n');
    for st in &m.states {
        for v in &m.variants {
            let _ = writeln!(s, "[{} / {}]", v.name, st.name);
            let mut header = format!("  {:<22}", "policy");
            for (_, h) in cols {
                let _ = write!(header, " {h:>28}");
            }
            s.push_str(&header);
            s.push('\n');
            for p in m.policies_of(v) {
                let mut line = format!("  {p:<22}");
                for (metric, _) in cols {
                    let key = format!("{}/{}/{p}/{metric}", v.name, st.name);
                    let ours = o.cells.get(&key).map_or("-".to_string(), |v| fmt_value(*v));
                    let cell = match m.paper_value(&key) {
                        Some(pv) => format!("{ours} (paper {})", fmt_value(pv)),
                        None => ours,
                    };
                    let _ = write!(line, " {cell:>28}");
                }
                s.push_str(&line);
                s.push('\n');
            }
        }
        s.push('\n');
    }
    s.push_str("Claims (nvsched vs paper):\n");
    for v in &o.verdicts {
        let verdict = match v.holds {
            Some(true) => "agrees",
            Some(false) => "DISAGREES",
            None => "n/a",
        };
        let alone =
            v.repetitions_holding.map_or(String::new(), |(k, n)| format!("; holds in {k} of {n} repetitions alone"));
        let _ = writeln!(s, "  [{verdict:>9}] {}: {}\n              {}{alone}", v.id, v.text, v.detail);
    }
    let held = o.verdicts.iter().filter(|v| v.holds == Some(true)).count();
    let _ = writeln!(s, "\n{held} of {} claims agree.", o.verdicts.len());
    s
}

fn results_json(o: &Outcome) -> Value {
    let mut v = json!({
        "experiment": o.manifest.name,
        "title": o.manifest.title,
        "paper": o.manifest.paper,
        "mode": if o.quick { "quick" } else { "full" },
        "device": o.manifest.device,
        "device_set": o.manifest.device_set,
        "nvsched_version": crate::VERSION,
        "cells": o.cells,
        "claims": o.verdicts.iter().map(claim_json).collect::<Vec<_>>(),
        "runs": o.runs.iter().map(|r| json!({
            "variant": r.key.variant, "state": r.key.state, "policy": r.key.policy, "rep": r.key.rep,
            "seed": r.seed, "metrics": r.metrics, "extra": r.extra, "fio": r.fio,
        })).collect::<Vec<_>>(),
    });
    if let Some(own) = &o.manifest.own_device {
        // `--device`/`--device-set` moved the experiment off its own drive
        v["own_device"] = json!(own);
    }
    v
}

/// A claim's verdict as results.json (and the Python package) give it.
pub fn claim_json(v: &Verdict) -> Value {
    let mut j = json!({
        "id": v.id, "text": v.text, "nvsched": v.nvsched, "paper": v.paper, "holds": v.holds, "detail": v.detail,
    });
    if let Some((holding, judged)) = v.repetitions_holding {
        j["repetitions_holding"] = json!(holding);
        j["repetitions_judged"] = json!(judged);
    }
    j
}

fn report_md(o: &Outcome, figures: &[String], device: &OnDevice) -> String {
    let m = &o.manifest;
    let mut s = format!("# {} — reproduction\n\n**Paper:** {}\n\n", m.title, m.paper);
    let mut command = format!("nvsched repro {}{}", m.name, if o.quick { " --quick" } else { "" });
    if let Some(profile) = &device.profile {
        let _ = write!(command, " --device {profile}");
    }
    for (k, v) in &device.set {
        let _ = write!(command, " --device-set {k}={v}");
    }
    let instead = m.own_device.as_ref().map_or(String::new(), |own| {
        format!(", instead of the experiment's own `{own}`, which the paper's values and the notes are about")
    });
    let _ = writeln!(
        s,
        "Device profile `{}`{}{instead}; {} mode ({} repetition(s) per cell). Generated by nvsched {} (`{command}`).\n",
        m.device,
        settings(&m.device_set),
        if o.quick { "quick" } else { "full" },
        if o.quick { m.quick.repetitions } else { m.full.repetitions },
        crate::VERSION,
    );
    s.push_str("## Results\n\n```\n");
    s.push_str(&console_table(o));
    s.push_str("```\n\n");
    if !m.notes.trim().is_empty() {
        s.push_str("## Notes\n\n");
        s.push_str(m.notes.trim());
        s.push_str("\n\n");
    }
    if !figures.is_empty() {
        s.push_str("## Figures\n\n");
        for f in figures {
            let _ = writeln!(s, "![{f}]({f}.png) ([SVG]({f}.svg))\n");
        }
    }
    s
}

pub fn write_all(o: &Outcome, opts: &Options) -> Result<(), String> {
    let out = &opts.out;
    let text = serde_json::to_string_pretty(&results_json(o)).map_err(|e| e.to_string())?;
    nvsched_report::write_atomic(&out.join("results.json"), text.as_bytes()).map_err(|e| e.to_string())?;
    let figures = if opts.plots { plots(o, out)? } else { Vec::new() };
    nvsched_report::write_atomic(&out.join("report.md"), report_md(o, &figures, &opts.device).as_bytes())
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn short(policy: &str) -> String {
    match policy.strip_prefix("k2:bound=") {
        Some(b) => format!("K2-{b}"),
        None => policy.split(':').next().unwrap_or(policy).to_string(),
    }
}

/// A cell's value (variant, state, policy, metric): nvsched's or the paper's.
type CellValue<'a> = dyn Fn(&str, &str, &str, &str) -> Option<f64> + 'a;

/// A metric's bar per policy of a variant in a drive state, and the paper's values for
/// them where the manifest gives any.
fn bars_with_paper(
    m: &Manifest,
    (cell, paper): (&CellValue, &CellValue),
    v: &Variant,
    state: &str,
    metric: &str,
) -> (Vec<(String, f64)>, Option<Reference>) {
    let (bars, paper): (Vec<_>, Vec<_>) = m
        .policies_of(v)
        .iter()
        .filter_map(|p| Some(((short(p), cell(&v.name, state, p, metric)?), paper(&v.name, state, p, metric))))
        .unzip();
    (bars, Reference::of("paper", paper))
}

fn plots(o: &Outcome, out: &std::path::Path) -> Result<Vec<String>, String> {
    let m = &o.manifest;
    let mut names = Vec::new();
    let cell = |v: &str, s: &str, p: &str, metric: &str| o.cells.get(&format!("{v}/{s}/{p}/{metric}")).copied();
    let paper = |v: &str, s: &str, p: &str, metric: &str| m.paper_value(&format!("{v}/{s}/{p}/{metric}"));
    let cols = columns(&m.kind);
    for st in &m.states {
        if m.kind == "k2" {
            // the paper's layout: RT p99.9 and total bandwidth per policy, one column per op
            let mut panels = Vec::new();
            for (metric, label, log) in
                [("rt_p999_us", "RT p99.9 latency (us)", true), ("total_bw_mbps", "total bandwidth (MB/s)", false)]
            {
                for v in &m.variants {
                    let (bars, reference) = bars_with_paper(m, (&cell, &paper), v, &st.name, metric);
                    panels.push(Panel {
                        title: format!("{} ({})", v.name, st.name),
                        x_label: "policy".into(),
                        y_label: label.into(),
                        log_x: false,
                        log_y: log,
                        kind: PanelKind::Bars { bars, reference },
                    });
                }
            }
            let name = format!("k2-{}", st.name);
            save_figure(
                out,
                &mut names,
                name,
                Figure {
                    title: format!("K2: RT p99.9 and total bandwidth, {} drive", st.name),
                    rows: 2,
                    cols: m.variants.len(),
                    panels,
                },
            )?;
            // trade-off scatter
            let panels = m
                .variants
                .iter()
                .map(|v| {
                    // nvsched's points, and the paper's where it gives both numbers
                    let points = |value: &dyn Fn(&str, &str) -> Option<f64>| -> Vec<LabelledPoint> {
                        m.policies_of(v)
                            .iter()
                            .filter_map(|p| Some((value(p, "total_bw_mbps")?, value(p, "rt_p999_us")?, short(p))))
                            .collect()
                    };
                    let ours = points(&|p, metric| cell(&v.name, &st.name, p, metric));
                    let theirs = points(&|p, metric| paper(&v.name, &st.name, p, metric));
                    let mut series = vec![("nvsched".to_owned(), ours)];
                    if !theirs.is_empty() {
                        series.push(("paper".to_owned(), theirs));
                    }
                    Panel {
                        title: format!("{} ({})", v.name, st.name),
                        x_label: "total bandwidth (MB/s)".into(),
                        y_label: "RT p99.9 (us)".into(),
                        log_x: false,
                        log_y: true,
                        kind: PanelKind::Points { series, limit: None },
                    }
                })
                .collect();
            let name = format!("k2-tradeoff-{}", st.name);
            save_figure(
                out,
                &mut names,
                name,
                Figure {
                    title: format!("Latency / bandwidth trade-off, {} drive", st.name),
                    rows: 1,
                    cols: m.variants.len(),
                    panels,
                },
            )?;
            // RT latency CDFs (first repetition)
            let panels = m
                .variants
                .iter()
                .map(|v| {
                    let series = m
                        .policies_of(v)
                        .iter()
                        .filter_map(|p| {
                            let pts: Vec<(f64, f64)> = first_extra(o, &v.name, &st.name, p, "rt_cdf")?;
                            Some((short(p), pts))
                        })
                        .collect();
                    Panel {
                        title: format!("{} ({})", v.name, st.name),
                        x_label: "RT completion latency (us)".into(),
                        y_label: "CDF".into(),
                        log_x: true,
                        log_y: false,
                        kind: PanelKind::Cdf(series),
                    }
                })
                .collect();
            let name = format!("k2-cdf-{}", st.name);
            save_figure(
                out,
                &mut names,
                name,
                Figure {
                    title: format!("Real-time job latency CDFs, {} drive", st.name),
                    rows: 1,
                    cols: m.variants.len(),
                    panels,
                },
            )?;
        } else {
            // each of the experiment's metrics per policy: a row of panels per metric, one
            // panel per variant that has the metric and not only zeros (prio-nice's crowd
            // has no writers, tabs' 1r no FUA writes)
            let rows: Vec<Vec<Panel>> = cols
                .iter()
                .map(|(metric, label)| {
                    m.variants
                        .iter()
                        .filter_map(|v| {
                            let (bars, reference) = bars_with_paper(m, (&cell, &paper), v, &st.name, metric);
                            bars.iter().any(|(_, v)| *v != 0.0).then(|| Panel {
                                title: format!("{} ({})", v.name, st.name),
                                x_label: "policy".into(),
                                y_label: (*label).into(),
                                log_x: false,
                                log_y: false,
                                kind: PanelKind::Bars { bars, reference },
                            })
                        })
                        .collect()
                })
                .filter(|row: &Vec<Panel>| !row.is_empty())
                .collect();
            let Some(cols_n) = rows.iter().map(Vec::len).max().map(|n| n.min(4)) else {
                continue;
            };
            let mut panels = Vec::new();
            for row in rows {
                let blanks = (cols_n - row.len() % cols_n) % cols_n;
                panels.extend(row);
                panels.extend((0..blanks).map(|_| Panel {
                    title: String::new(),
                    x_label: String::new(),
                    y_label: String::new(),
                    log_x: false,
                    log_y: false,
                    kind: PanelKind::Blank,
                }));
            }
            let name = format!("{}-{}", m.name, st.name);
            let figure = Figure {
                title: format!("{}: the paper's metrics per policy, {} drive", m.name, st.name),
                rows: panels.len() / cols_n,
                cols: cols_n,
                panels,
            };
            save_figure(out, &mut names, name, figure)?;
            match m.kind.as_str() {
                "prio-nice" => prio_nice_runtimes(o, st, out, &mut names)?,
                "mts" => mts_shares(o, st, out, &mut names)?,
                _ => {}
            }
        }
    }
    Ok(names)
}

/// A series the analysis kept for a cell's first repetition (`extra[key]` of its run),
/// which is what the figures of single runs draw.
fn first_extra<T: serde::de::DeserializeOwned>(
    o: &Outcome,
    variant: &str,
    state: &str,
    policy: &str,
    key: &str,
) -> Option<T> {
    let r = o
        .runs
        .iter()
        .find(|r| r.key.variant == variant && r.key.state == state && r.key.policy == policy && r.key.rep == 0)?;
    serde_json::from_value(r.extra.get(key)?.clone()).ok()
}

/// The MTS paper's point: each tenant's share of the bandwidth against the share its weight
/// asks for, a line per policy and one for the target, a panel per workload (first
/// repetition).
fn mts_shares(o: &Outcome, st: &State, out: &Path, names: &mut Vec<String>) -> Result<(), String> {
    let m = &o.manifest;
    let percent = |tenants: &[(f64, f64)], value: &dyn Fn(&(f64, f64)) -> f64| -> Vec<(f64, f64)> {
        let total: f64 = tenants.iter().map(value).sum();
        tenants.iter().map(|t| (t.0, if total > 0.0 { 100.0 * value(t) / total } else { 0.0 })).collect()
    };
    let mut panels = Vec::new();
    for v in &m.variants {
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for p in m.policies_of(v) {
            let Some(mut tenants) = first_extra::<Vec<(f64, f64)>>(o, &v.name, &st.name, p, "tenants") else {
                continue;
            };
            tenants.sort_by(|a, b| a.0.total_cmp(&b.0));
            if series.is_empty() {
                series.push(("weight's share".into(), percent(&tenants, &|t| t.0)));
            }
            series.push((short(p), percent(&tenants, &|t| t.1)));
        }
        if !series.is_empty() {
            panels.push(Panel {
                title: format!("{} ({})", v.name, st.name),
                x_label: "tenant's weight".into(),
                y_label: "share of the bandwidth (%)".into(),
                log_x: false,
                log_y: false,
                kind: PanelKind::Lines(series),
            });
        }
    }
    let title = format!("mts: bandwidth shares per tenant, {} drive", st.name);
    save_grid(out, names, format!("mts-shares-{}", st.name), title, panels, 4)
}

/// The paper's prio-nice figure: each process' runtime against its nice value, a line per
/// policy, a panel per workload and direction (first repetition).
fn prio_nice_runtimes(o: &Outcome, st: &State, out: &Path, names: &mut Vec<String>) -> Result<(), String> {
    let m = &o.manifest;
    let mut panels = Vec::new();
    for v in &m.variants {
        for (dir, who) in [("read", "readers"), ("write", "writers")] {
            let series: Vec<(String, Vec<(f64, f64)>)> = m
                .policies_of(v)
                .iter()
                .filter_map(|p| {
                    let by_nice: Vec<(i64, f64)> = first_extra(o, &v.name, &st.name, p, &format!("{dir}_runtimes"))?;
                    Some((short(p), by_nice.into_iter().map(|(n, t)| (n as f64, t)).collect()))
                })
                .collect();
            if series.iter().any(|(_, pts)| !pts.is_empty()) {
                panels.push(Panel {
                    title: format!("{} {who} ({})", v.name, st.name),
                    x_label: "nice value".into(),
                    y_label: "runtime (s)".into(),
                    log_x: false,
                    log_y: false,
                    kind: PanelKind::Lines(series),
                });
            }
        }
    }
    let title = format!("prio-nice: runtime per nice value, {} drive", st.name);
    save_grid(out, names, format!("prio-nice-runtimes-{}", st.name), title, panels, 3)
}

/// Saves `panels` as a figure in rows of at most `max_cols`; no panels, no figure.
fn save_grid(
    out: &Path,
    names: &mut Vec<String>,
    name: String,
    title: String,
    panels: Vec<Panel>,
    max_cols: usize,
) -> Result<(), String> {
    if panels.is_empty() {
        return Ok(());
    }
    let cols = panels.len().min(max_cols);
    let figure = Figure { title, rows: panels.len().div_ceil(cols), cols, panels };
    save_figure(out, names, name, figure)
}

/// Writes `figure` as OUT/NAME.png and .svg and records its name for the report.
fn save_figure(out: &Path, names: &mut Vec<String>, name: String, figure: Figure) -> Result<(), String> {
    figure.save(&out.join(&name))?;
    names.push(name);
    Ok(())
}
