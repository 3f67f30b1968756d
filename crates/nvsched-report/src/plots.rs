//! Figures for reproductions: a grid of panels (bars, scatter points or lines), written
//! as PNG and SVG. Text uses the DejaVu Sans font shipped in `assets/`, so rendering does
//! not depend on the machine's fonts.

use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

const FONT: &str = "sans-serif";
static REGISTER: Once = Once::new();

fn register_font() {
    REGISTER.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../../assets/DejaVuSans.ttf");
        if plotters::style::register_font(FONT, FontStyle::Normal, bytes).is_err() {
            eprintln!("warning: could not register the plot font");
        }
    });
}

/// A point and the text drawn beside it.
pub type LabelledPoint = (f64, f64, String);

/// What a panel draws.
#[derive(Clone, Debug)]
pub enum PanelKind {
    /// One bar per (label, value), and a value to compare each with where `reference`
    /// gives one (the paper's), drawn as a black line across its bar.
    Bars { bars: Vec<(String, f64)>, reference: Option<Reference> },
    /// One horizontal bar per (label, value), the first at the top: for long labels
    /// (the panel's x label describes the values, its y label the bars).
    HBars(Vec<(String, f64)>),
    /// Named series of labelled points (x, y, label), and a limit they are judged
    /// against, drawn as a dashed line across the panel.
    Points { series: Vec<(String, Vec<LabelledPoint>)>, limit: Option<Limit> },
    /// Named series of lines (x, y).
    Lines(Vec<(String, Vec<(f64, f64)>)>),
    /// Named cumulative distributions (value, fraction): lines with the legend in the
    /// lower right, which a CDF leaves empty.
    Cdf(Vec<(String, Vec<(f64, f64)>)>),
    /// Nothing: an empty slot of the figure's grid.
    Blank,
}

/// Values drawn over bars, one per bar where known, and their name in the panel's key.
#[derive(Clone, Debug)]
pub struct Reference {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

impl Reference {
    /// `None` when no bar has a value to compare with.
    pub fn of(name: &str, values: Vec<Option<f64>>) -> Option<Reference> {
        values.iter().any(Option::is_some).then(|| Reference { name: name.to_owned(), values })
    }

    fn known(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.values.iter().enumerate().filter_map(|(i, v)| Some((i, (*v)?)))
    }
}

/// A threshold across a scatter panel: `value` on the x axis (a vertical line) or on
/// the y axis (a horizontal one), named in the panel's key.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    pub name: String,
    pub axis: Axis,
    pub value: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
}

/// One panel of a figure.
#[derive(Clone, Debug)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    pub kind: PanelKind,
}

/// A grid of panels.
#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    pub rows: usize,
    pub cols: usize,
    pub panels: Vec<Panel>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

impl Figure {
    /// Writes `<stem>.png` and `<stem>.svg`.
    pub fn save(&self, stem: &Path) -> Result<(), String> {
        register_font();
        let size = (460 * self.cols as u32, 340 * self.rows as u32 + 40);
        let png = stem.with_extension("png");
        let svg = stem.with_extension("svg");
        self.draw(BitMapBackend::new(&png, size).into_drawing_area()).map_err(|e| format!("{}: {e}", png.display()))?;
        self.draw(SVGBackend::new(&svg, size).into_drawing_area()).map_err(|e| format!("{}: {e}", svg.display()))?;
        Ok(())
    }

    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, plotters::coord::Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let root = root.titled(&self.title, (FONT, 22)).map_err(err)?;
        let areas = root.split_evenly((self.rows, self.cols));
        for (area, panel) in areas.iter().zip(&self.panels) {
            if matches!(panel.kind, PanelKind::Blank) {
                continue;
            }
            draw_panel(area, panel).map_err(err)?;
        }
        root.present().map_err(err)
    }
}

fn bounds(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        ((lo - pad).min(0.0), hi + pad)
    }
}

/// Where `v` lies on an axis from `lo` to `hi`, as a fraction of its length (0 at `lo`,
/// 1 at `hi`; by ratio on a log axis).
fn axis_fraction(v: f64, (lo, hi, log): (f64, f64, bool)) -> f64 {
    if log {
        (v.max(f64::MIN_POSITIVE).ln() - lo.ln()) / (hi.ln() - lo.ln())
    } else {
        (v - lo) / (hi - lo)
    }
}

/// Where labels of points go: a label is written right of its point, so points whose
/// labels would print over each other (within a text line's height, 4.5% of the y span,
/// and closer than the left one's label is wide, on a plot `plot_px` pixels wide) share
/// one label ("none, kyber"), written right of the rightmost of them, clear of their dots,
/// and naming each name once. Each point keeps its own dot.
fn point_labels(
    pts: &[LabelledPoint],
    (x0, x1, log_x): (f64, f64, bool),
    (y0, y1, log_y): (f64, f64, bool),
    plot_px: f64,
) -> Vec<LabelledPoint> {
    let at = |v: f64, lo: f64, hi: f64, log: bool| axis_fraction(v, (lo, hi, log));
    // two points' own labels would overlap (a merged label's length does not count, or
    // groups would chain across the plot)
    let close = |a: &LabelledPoint, b: &LabelledPoint| {
        let (ax, bx) = (at(a.0, x0, x1, log_x), at(b.0, x0, x1, log_x));
        let left_label = if ax <= bx { &a.2 } else { &b.2 };
        (ax - bx).abs() * plot_px < label_width_px(left_label.chars().count())
            && (at(a.1, y0, y1, log_y) - at(b.1, y0, y1, log_y)).abs() < 0.045
    };
    // each group: where its label goes (its rightmost point), its names and its points
    type Group<'a> = ((f64, f64), Vec<&'a str>, Vec<&'a LabelledPoint>);
    let mut groups: Vec<Group> = Vec::new();
    for p in pts {
        match groups.iter_mut().find(|(_, _, members)| members.iter().any(|m| close(m, p))) {
            Some((at, names, members)) => {
                // a name is written once (the same policy in two series: measured, paper)
                if !names.contains(&p.2.as_str()) {
                    names.push(&p.2);
                }
                if p.0 > at.0 {
                    *at = (p.0, p.1);
                }
                members.push(p);
            }
            None => groups.push(((p.0, p.1), vec![&p.2], vec![p])),
        }
    }
    groups.into_iter().map(|((x, y), names, _)| (x, y, joined_names(&names))).collect()
}

/// A shared label's names, joined: settings of one key by their values after the first
/// ("bound=1, 2, 4"), others whole ("none, kyber").
fn joined_names(names: &[&str]) -> String {
    let key = |name: &str| name.split_once('=').filter(|(_, v)| !v.contains(['=', ','])).map(|(k, _)| k.to_owned());
    let first_key = names.first().and_then(|n| key(n));
    if first_key.is_some() && names.iter().all(|n| key(n) == first_key) {
        let values: Vec<&str> = names[1..].iter().filter_map(|n| n.split_once('=').map(|(_, v)| v)).collect();
        return std::iter::once(names[0]).chain(values).collect::<Vec<_>>().join(", ");
    }
    names.join(", ")
}

/// Where each label of `labels` (from [`point_labels`]) is written, as a pixel offset of
/// its text's top left corner from its point, on a plot `w` x `h` pixels: right of the
/// point, unless the text would cover another label or a dot (of `points`) there or
/// leave the plot; then a line above, a line below, or left of the point, whichever is
/// free first.
fn label_offsets(
    labels: &[LabelledPoint],
    points: &[LabelledPoint],
    (x0, x1, log_x): (f64, f64, bool),
    (y0, y1, log_y): (f64, f64, bool),
    (w, h): (f64, f64),
) -> Vec<(i32, i32)> {
    const LINE_PX: f64 = 13.0;
    const DOT_PX: f64 = 4.0;
    let at = |x: f64, y: f64| (axis_fraction(x, (x0, x1, log_x)) * w, (1.0 - axis_fraction(y, (y0, y1, log_y))) * h);
    type Box = (f64, f64, f64, f64);
    let overlaps = |a: &Box, b: &Box| a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
    let mut taken: Vec<Box> = points
        .iter()
        .map(|p| {
            let (px, py) = at(p.0, p.1);
            (px - DOT_PX, py - DOT_PX, px + DOT_PX, py + DOT_PX)
        })
        .collect();
    labels
        .iter()
        .map(|(x, y, text)| {
            let (px, py) = at(*x, *y);
            let text_w = text_width_px(text.chars().count());
            let candidates = [(6.0, -6.0), (6.0, -6.0 - LINE_PX), (6.0, -6.0 + LINE_PX), (-6.0 - text_w, -6.0)];
            let text_box = |(dx, dy): (f64, f64)| (px + dx, py + dy, px + dx + text_w, py + dy + LINE_PX - 1.0);
            // inside the plot (the x axis was widened for text right of the points)
            let inside = |b: &Box| b.0 >= 0.0 && b.1 >= 0.0 && b.3 <= h;
            let free = |c: (f64, f64)| {
                let b = text_box(c);
                inside(&b) && !taken.iter().any(|t| overlaps(&b, t))
            };
            let chosen = candidates.into_iter().find(|&c| free(c)).unwrap_or(candidates[0]);
            taken.push(text_box(chosen));
            (chosen.0.round() as i32, chosen.1.round() as i32)
        })
        .collect()
}

/// The points of every series, whose labels are placed together: points of different
/// series can be as close as those of one.
fn every_point(series: &[(String, Vec<LabelledPoint>)]) -> Vec<LabelledPoint> {
    series.iter().flat_map(|(_, pts)| pts.iter().cloned()).collect()
}

/// The x axis' end that leaves each point's label inside the plot (at most 2.5 times the
/// span): the label needs its width in pixels right of its point.
fn widen_for_labels(
    series: &[(String, Vec<LabelledPoint>)],
    (x0, x1, log_x): (f64, f64, bool),
    y: (f64, f64, bool),
    plot_px: f64,
) -> f64 {
    let mut needed: f64 = 1.0; // the span, in units of the current one
    for (x, _, label) in point_labels(&every_point(series), (x0, x1, log_x), y, plot_px) {
        if log_x && x <= 0.0 {
            continue;
        }
        // the label takes a fixed share of the plot's width, whatever the span
        let share = (label_width_px(label.chars().count()) / plot_px).min(0.6);
        needed = needed.max(axis_fraction(x, (x0, x1, log_x)) / (1.0 - share));
    }
    let needed = needed.min(2.5);
    if log_x {
        (x0.ln() + (x1.ln() - x0.ln()) * needed).exp()
    } else {
        x0 + (x1 - x0) * needed
    }
}

/// Pixels of a label of `chars` characters in the points' font, with its offset.
fn label_width_px(chars: usize) -> f64 {
    12.0 + text_width_px(chars)
}

/// Pixels of `chars` characters of text in the points' font.
fn text_width_px(chars: usize) -> f64 {
    6.5 * chars as f64
}

type Err<DB> = DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>;

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, p: &Panel) -> Result<(), Err<DB>> {
    let (xs, ys): (Vec<f64>, Vec<f64>) = match &p.kind {
        PanelKind::Bars { bars, reference } => {
            let refs = reference.iter().flat_map(|r| r.known().map(|(_, v)| v));
            ((0..=bars.len()).map(|i| i as f64).collect(), bars.iter().map(|(_, v)| *v).chain(refs).collect())
        }
        PanelKind::HBars(b) => (b.iter().map(|(_, v)| *v).collect(), (0..=b.len()).map(|i| i as f64).collect()),
        PanelKind::Points { series, limit } => {
            let (mut xs, mut ys): (Vec<f64>, Vec<f64>) =
                series.iter().flat_map(|(_, pts)| pts.iter().map(|(x, y, _)| (*x, *y))).unzip();
            // the axes reach the limit, so that its line is always drawn
            match limit {
                Some(Limit { axis: Axis::X, value, .. }) => xs.push(*value),
                Some(Limit { axis: Axis::Y, value, .. }) => ys.push(*value),
                None => {}
            }
            (xs, ys)
        }
        PanelKind::Lines(s) | PanelKind::Cdf(s) => s.iter().flat_map(|(_, pts)| pts.iter().copied()).unzip(),
        PanelKind::Blank => (Vec::new(), Vec::new()),
    };
    let (mut x0, mut x1) = match &p.kind {
        PanelKind::Bars { bars, .. } => (0.0, bars.len().max(1) as f64),
        _ => bounds(xs.iter().copied(), p.log_x),
    };
    let (mut y0, mut y1) = match &p.kind {
        PanelKind::HBars(b) => (0.0, b.len().max(1) as f64),
        _ => bounds(ys.iter().copied(), p.log_y),
    };
    if let (PanelKind::Lines(series), false) = (&p.kind, p.log_y) {
        // headroom for the legend in the upper right (a row of about 18 px per series),
        // so that it does not hide the lines
        if series.len() > 1 {
            let plot_px = (area.dim_in_pixel().1 as f64 - 100.0).max(100.0);
            let legend_share = ((18 * series.len() + 14) as f64 / plot_px).min(0.6);
            y1 = y0 + (y1 - y0) / (1.0 - legend_share);
        }
    }
    if let PanelKind::Points { series, .. } = &p.kind {
        // room on the right for the labels of the rightmost points
        let plot_px = (area.dim_in_pixel().0 as f64 - 64.0 - 24.0).max(100.0);
        x1 = widen_for_labels(series, (x0, x1, p.log_x), (y0, y1, p.log_y), plot_px);
    }
    if matches!(p.kind, PanelKind::Bars { .. }) && !p.log_y {
        y0 = 0.0;
    }
    if let PanelKind::Bars { reference: Some(_), .. } = &p.kind {
        // headroom for the key in the upper right (one row), so that it hides no bar
        let plot_px = (area.dim_in_pixel().1 as f64 - 100.0).max(100.0);
        let key_share = (36.0 / plot_px).min(0.5);
        y1 = if p.log_y { y0 * (y1 / y0).powf(1.0 / (1.0 - key_share)) } else { y0 + (y1 - y0) / (1.0 - key_share) };
    }
    if matches!(p.kind, PanelKind::HBars(_)) && !p.log_x {
        x0 = 0.0;
    }
    // horizontal bars' names sit left of the axis, in an area as wide as the longest
    let y_label_area = match &p.kind {
        PanelKind::HBars(b) => b.iter().map(|(n, _)| 24 + 7 * n.chars().count() as u32).max().unwrap_or(64).max(64),
        _ => 64,
    };
    let mut builder = ChartBuilder::on(area);
    builder.caption(&p.title, (FONT, 16)).margin(12).x_label_area_size(46).y_label_area_size(y_label_area);
    macro_rules! finish {
        ($chart:expr) => {{
            let mut chart = $chart;
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(p.x_label.as_str())
                .y_desc(p.y_label.as_str())
                .label_style((FONT, 12))
                .y_label_formatter(&tick)
                .x_label_formatter(&tick);
            if p.log_x || p.log_y {
                // a log axis draws a light line per sub-decade step: too dense to read
                mesh.light_line_style(TRANSPARENT);
            } else {
                // one light line halfway between labelled ones; plotters' default ten
                // grey the panel over
                mesh.max_light_lines(1);
            }
            if let PanelKind::Bars { bars: b, .. } = &p.kind {
                let fmt = category_names(b.iter().map(|(n, _)| n.clone()).collect());
                mesh.x_labels(names_len(b) * 2 + 1).x_label_formatter(&fmt).disable_x_mesh();
                mesh.draw()?;
            } else if let PanelKind::HBars(b) = &p.kind {
                // row i (from the bottom) holds bar n - 1 - i, so the first bar is on top
                let fmt = category_names(b.iter().rev().map(|(n, _)| n.clone()).collect());
                mesh.y_labels(names_len(b) * 2 + 1).y_label_formatter(&fmt).disable_y_mesh().x_labels(6);
                mesh.draw()?;
            } else {
                mesh.draw()?;
            }
            draw_content(&mut chart, p, (x0, x1), (y0, y1))?;
        }};
    }
    let log_x = || (x0..x1).log_scale().with_key_points(log_ticks(x0, x1));
    let log_y = || (y0..y1).log_scale().with_key_points(log_ticks(y0, y1));
    match (p.log_x, p.log_y) {
        (false, false) => finish!(builder.build_cartesian_2d(x0..x1, y0..y1)?),
        (false, true) => finish!(builder.build_cartesian_2d(x0..x1, log_y())?),
        (true, false) => finish!(builder.build_cartesian_2d(log_x(), y0..y1)?),
        (true, true) => finish!(builder.build_cartesian_2d(log_x(), log_y())?),
    }
    Ok(())
}

/// Axis tick text: four significant digits at most, no needless decimals ("1000", "2.5",
/// "0.25", "0.0125"), so that ticks on a small scale stay apart.
fn tick(v: &f64) -> String {
    if *v == 0.0 || v.abs() >= 100.0 {
        return format!("{v:.0}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// The ticks of a log axis from `lo` to `hi`: 1, 2 and 5 times each power of ten; over
/// more than three decades the powers of ten alone, and within a narrow span every step
/// (3, 4, ...), so that there are always a few. (plotters' own log ticks are the powers
/// of ten only: one label, or none, on a typical latency axis.)
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let ticks_with = |mantissas: &[f64]| -> Vec<f64> {
        let mut ticks = Vec::new();
        let mut decade = 10f64.powf(lo.log10().floor());
        while decade <= hi {
            for m in mantissas {
                let v = decade * m;
                if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                    ticks.push(v);
                }
            }
            decade *= 10.0;
        }
        ticks
    };
    if hi / lo > 1e3 {
        return ticks_with(&[1.0]);
    }
    let ticks = ticks_with(&[1.0, 2.0, 5.0]);
    if ticks.len() >= 3 {
        ticks
    } else {
        ticks_with(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    }
}

/// Tick text of a bar axis: bar i's name at i + 0.5, its middle, and nothing elsewhere.
fn category_names(names: Vec<String>) -> impl Fn(&f64) -> String {
    move |v: &f64| {
        if (v - v.floor() - 0.5).abs() < 0.26 {
            names.get(v.floor() as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    }
}

fn names_len(b: &[(String, f64)]) -> usize {
    b.len()
}

/// The panel's key in `corner`, on a white box the lines show through a little.
fn draw_key<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    corner: SeriesLabelPosition,
) -> Result<(), Err<DB>>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(corner)
        .label_font((FONT, 12))
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
}

/// `x` and `y` are the axes' spans.
fn draw_content<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    p: &Panel,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> Result<(), Err<DB>>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let plot_px = f64::from(chart.plotting_area().dim_in_pixel().0.max(1));
    match &p.kind {
        PanelKind::Bars { bars, reference } => {
            let floor = if p.log_y { y0 } else { 0.0 };
            chart.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                let c = PALETTE[i % PALETTE.len()];
                Rectangle::new([(i as f64 + 0.15, floor), (i as f64 + 0.85, v.max(floor))], c.filled())
            }))?;
            if let Some(r) = reference {
                let line = BLACK.stroke_width(3);
                chart
                    .draw_series(
                        r.known()
                            .map(|(i, v)| PathElement::new(vec![(i as f64 + 0.05, v), (i as f64 + 0.95, v)], line)),
                    )?
                    .label(r.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], line));
                draw_key(chart, SeriesLabelPosition::UpperRight)?;
            }
        }
        PanelKind::HBars(bars) => {
            let n = bars.len();
            chart.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                let c = PALETTE[i % PALETTE.len()];
                let row = (n - 1 - i) as f64;
                Rectangle::new([(0.0, row + 0.15), (v.max(0.0), row + 0.85)], c.filled())
            }))?;
        }
        PanelKind::Points { series, limit } => {
            if let Some(l) = limit {
                let ends = match l.axis {
                    Axis::X => [(l.value, y0), (l.value, y1)],
                    Axis::Y => [(x0, l.value), (x1, l.value)],
                };
                let line = BLACK.mix(0.6).stroke_width(2);
                chart.draw_series(DashedLineSeries::new(ends, 8, 5, line))?.label(l.name.as_str()).legend(
                    move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new(vec![(0, 0), (6, 0)], line)
                            + PathElement::new(vec![(10, 0), (16, 0)], line)
                    },
                );
            }
            let points = every_point(series);
            let (xs, ys) = ((x0, x1, p.log_x), (y0, y1, p.log_y));
            let labels = point_labels(&points, xs, ys, plot_px);
            let h = f64::from(chart.plotting_area().dim_in_pixel().1);
            let offsets = label_offsets(&labels, &points, xs, ys, (plot_px, h));
            chart.draw_series(
                labels
                    .into_iter()
                    .zip(offsets)
                    .map(|((x, y, label), at)| EmptyElement::at((x, y)) + Text::new(label, at, (FONT, 11))),
            )?;
            for (k, (name, pts)) in series.iter().enumerate() {
                let c = PALETTE[k % PALETTE.len()];
                chart
                    .draw_series(
                        pts.iter().map(|(x, y, _)| EmptyElement::at((*x, *y)) + Circle::new((0, 0), 4, c.filled())),
                    )?
                    .label(name.as_str())
                    .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
            }
            if series.len() > 1 || limit.is_some() {
                draw_key(chart, SeriesLabelPosition::UpperLeft)?;
            }
        }
        PanelKind::Lines(series) | PanelKind::Cdf(series) => {
            for (k, (name, pts)) in series.iter().enumerate() {
                let c = PALETTE[k % PALETTE.len()];
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            }
            let corner = if matches!(p.kind, PanelKind::Cdf(_)) {
                SeriesLabelPosition::LowerRight
            } else {
                SeriesLabelPosition::UpperRight
            };
            if series.len() > 1 {
                draw_key(chart, corner)?;
            }
        }
        PanelKind::Blank => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_that_would_overlap_are_joined_right_of_the_rightmost_point() {
        let pts = vec![(1020.0, 758.0, "none".into()), (283.0, 153.0, "k2".into()), (1021.0, 740.0, "kyber".into())];
        let labels = point_labels(&pts, (0.0, 1100.0, false), (0.0, 800.0, false), 300.0);
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[0], (1021.0, 740.0, "none, kyber".to_owned()));
        assert_eq!(labels[1].2, "k2");
        // apart by less than "K2-64" is wide (16 of 44 px): one label, after "none"'s dot
        let pts = vec![(710.0, 605.0, "K2-64".into()), (745.0, 610.0, "none".into())];
        let labels = point_labels(&pts, (0.0, 800.0, false), (150.0, 900.0, true), 370.0);
        assert_eq!(labels, vec![(745.0, 610.0, "K2-64, none".to_owned())]);
        // on a log axis distance is a ratio: 10 and 30 are apart on 1..10^4, 1000 and 1010 are not
        let pts = vec![
            (10.0, 1.0, "a".into()),
            (30.0, 1.0, "b".into()),
            (1000.0, 1.0, "c".into()),
            (1010.0, 1.0, "d".into()),
        ];
        let labels = point_labels(&pts, (1.0, 1e4, true), (0.0, 2.0, false), 300.0);
        assert_eq!(labels.iter().map(|m| m.2.as_str()).collect::<Vec<_>>(), ["a", "b", "c, d"]);
        // a measured point and the paper's of the same name: the name once
        let pts = vec![(47.0, 202.0, "K2-1".into()), (92.0, 196.0, "K2-2".into()), (44.0, 217.0, "K2-1".into())];
        let labels = point_labels(&pts, (0.0, 650.0, false), (150.0, 4000.0, true), 370.0);
        assert_eq!(labels, vec![(92.0, 196.0, "K2-1, K2-2".to_owned())]);
        // settings of one key: the key once
        assert_eq!(joined_names(&["bound=1", "bound=2", "bound=4"]), "bound=1, 2, 4");
        assert_eq!(joined_names(&["bound=1", "none"]), "bound=1, none");
        assert_eq!(
            joined_names(&["target=1ms,window=1s", "target=2ms,window=1s"]),
            "target=1ms,window=1s, target=2ms,window=1s"
        );
    }

    #[test]
    fn a_label_that_would_cover_a_dot_or_a_label_moves_up_down_or_left() {
        let span = ((0.0, 100.0, false), (0.0, 100.0, false));
        let place = |labels: &[LabelledPoint], points: &[LabelledPoint]| {
            label_offsets(labels, points, span.0, span.1, (400.0, 400.0))
        };
        let at = |x: f64, y: f64, text: &str| -> LabelledPoint { (x, y, text.to_string()) };
        // alone: right of its dot
        let a = at(10.0, 50.0, "K2-1, K2-2");
        assert_eq!(place(std::slice::from_ref(&a), std::slice::from_ref(&a)), [(6, -6)]);
        // a dot 20 px to the right, on the same line, is under the 59 px of text: up a line
        assert_eq!(place(std::slice::from_ref(&a), &[a.clone(), at(15.0, 50.0, "K2-4")]), [(6, -19)]);
        // a point 8 px below, whose label would run into the first one's: the first keeps
        // its place, the second goes a line down (a line up meets the first too)
        let c = at(10.0, 48.0, "K2-8");
        assert_eq!(place(&[a.clone(), c.clone()], &[a.clone(), c]), [(6, -6), (6, 7)]);
        // no room right, above or below: left of the dot
        let b = at(30.0, 50.0, "K2-1, K2-2");
        let crowd = [at(33.0, 50.0, ""), at(33.0, 53.0, ""), at(33.0, 47.0, ""), b.clone()];
        let text_w = text_width_px(b.2.chars().count());
        assert_eq!(place(std::slice::from_ref(&b), &crowd), [(-6 - text_w.round() as i32, -6)]);
        // but not out of the plot: at its left edge the text stays right, over the crowd
        let edge = [at(3.0, 50.0, ""), at(3.0, 53.0, ""), at(3.0, 47.0, ""), at(0.0, 50.0, "K2-1, K2-2")];
        assert_eq!(place(&edge[3..], &edge), [(6, -6)]);
    }

    #[test]
    fn tick_text_keeps_small_steps_apart() {
        let texts: Vec<String> =
            [0.0, 1000.0, 2.5, 0.25, 0.0125, 0.015000000000000001, 0.005, 12.5, -0.02].iter().map(tick).collect();
        assert_eq!(texts, ["0", "1000", "2.5", "0.25", "0.0125", "0.015", "0.005", "12.5", "-0.02"]);
    }

    #[test]
    fn log_axes_tick_one_two_and_five_of_each_decade() {
        assert_eq!(log_ticks(120.0, 4000.0), [200.0, 500.0, 1000.0, 2000.0]);
        assert_eq!(log_ticks(0.5, 30.0), [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
        // more than three decades: the powers of ten
        assert_eq!(log_ticks(5.0, 2e5), [10.0, 100.0, 1000.0, 10000.0, 100000.0]);
        // a narrow span gets every step
        assert_eq!(log_ticks(55000.0, 330000.0), [60000.0, 70000.0, 80000.0, 90000.0, 100000.0, 200000.0, 300000.0]);
    }

    #[test]
    fn the_x_axis_makes_room_for_the_rightmost_label() {
        let series = vec![("s".to_owned(), vec![(0.0, 0.0, "a".to_owned()), (100.0, 0.0, "a long label".to_owned())])];
        // 12 characters: 12 + 78 = 90 px of 300, so the point at 100 must sit at 70% of the span
        let x1 = widen_for_labels(&series, (0.0, 100.0, false), (0.0, 1.0, false), 300.0);
        assert!((x1 - 100.0 / 0.7).abs() < 1e-9, "{x1}");
        // a label well inside the plot needs no room
        let series = vec![("s".to_owned(), vec![(10.0, 0.0, "x".to_owned()), (100.0, 1.0, String::new())])];
        let x1 = widen_for_labels(&series, (0.0, 200.0, false), (0.0, 1.0, false), 300.0);
        assert_eq!(x1, 200.0);
    }

    #[test]
    fn renders_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("nvsched-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fig = Figure {
            title: "test".into(),
            rows: 2,
            cols: 2,
            panels: vec![
                Panel {
                    title: "bars".into(),
                    x_label: "policy".into(),
                    y_label: "p99.9 (us)".into(),
                    log_x: false,
                    log_y: true,
                    kind: PanelKind::Bars {
                        bars: vec![("none".into(), 3000.0), ("K2-1".into(), 200.0), ("K2-2".into(), 190.0)],
                        reference: Reference::of("paper", vec![Some(3251.0), None, Some(197.0)]),
                    },
                },
                Panel {
                    title: "points".into(),
                    x_label: "MB/s".into(),
                    y_label: "us".into(),
                    log_x: false,
                    log_y: false,
                    kind: PanelKind::Points {
                        series: vec![("a".into(), vec![(1.0, 2.0, "1".into()), (3.0, 4.0, "2".into())])],
                        limit: Some(Limit { name: "limit 5 us".into(), axis: Axis::Y, value: 5.0 }),
                    },
                },
                Panel {
                    title: "lines".into(),
                    x_label: "us".into(),
                    y_label: "CDF".into(),
                    log_x: true,
                    log_y: false,
                    kind: PanelKind::Lines(vec![("a".into(), vec![(10.0, 0.1), (100.0, 0.9)])]),
                },
                Panel {
                    title: "horizontal bars".into(),
                    x_label: "MB/s".into(),
                    y_label: String::new(),
                    log_x: false,
                    log_y: false,
                    kind: PanelKind::HBars(vec![
                        ("k2-adaptive:target_p999=300us".into(), 700.0),
                        ("none".into(), 1024.0),
                    ]),
                },
            ],
        };
        fig.save(&dir.join("fig")).unwrap();
        assert!(std::fs::metadata(dir.join("fig.png")).unwrap().len() > 1000);
        let svg = std::fs::read_to_string(dir.join("fig.svg")).unwrap();
        assert!(svg.contains("p99.9 (us)"));
        assert!(svg.contains("\npaper\n"), "the key names the reference values");
        assert!(svg.contains("k2-adaptive:target_p999=300us"), "a horizontal bar's name is written whole");
        assert!(svg.contains("\nlimit 5 us\n"), "the key names the scatter's limit");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
