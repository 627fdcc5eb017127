//! Scatter charts as inline SVG, drawn by hand (no plotting library, no fonts to ship).

use std::fmt::Write;

use super::html::escape;
use super::{Labels, ScatterChart};

const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 500.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 860.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 440.0;
/// Inside each `<svg>`, so a chart looks the same alone as in the HTML page.
/// Scoped to `.chart` (the root's class) so that, inline in HTML, it styles nothing else.
const STYLE: &str = ".chart text{font-family:system-ui,sans-serif;font-size:11px}\
.chart .plot{fill:#fcfcfc;stroke:#999}.chart .grid{stroke:#e4e4e4}.chart .tick{fill:#555}\
.chart .axis{fill:#222;font-size:12px}.chart .chart-title{font-weight:bold;font-size:13px}\
.chart circle{fill-opacity:.8}.chart .dim{fill-opacity:.45}.chart .label{fill:#333;font-size:10px}.chart .legend{fill:#333}\
.chart .best{stroke:#222;stroke-width:1;fill-opacity:1}.chart .front{fill:none;stroke-dasharray:4 3}";

/// One axis: its range in plotted units (log10 of the value on a log axis).
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Axis {
    /// An axis covering `values` with round ends. Log axes ignore values <= 0.
    fn covering(values: impl Iterator<Item = f64>, log: bool) -> Axis {
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            let v = if log { v.log10() } else { v };
            min = min.min(v);
            max = max.max(v);
        }
        if min > max {
            // No data: an arbitrary but valid range.
            return Axis { log, lo: 0.0, hi: 1.0 };
        }
        if log {
            let (lo, hi) = (log_step_below(min), log_step_above(max));
            return Axis { log, lo, hi: if hi > lo { hi } else { lo + 1.0 } };
        }
        if max - min < f64::EPSILON * max.abs().max(1.0) {
            let pad = (max.abs() * 0.1).max(1.0);
            min -= pad;
            max += pad;
        }
        let step = nice_step(max - min);
        Axis { log, lo: (min / step).floor() * step, hi: (max / step).ceil() * step }
    }

    /// Whether `value` can be drawn on this axis.
    fn shows(&self, value: f64) -> bool {
        value.is_finite() && (!self.log || value > 0.0)
    }

    /// The pixel for `value`, between `from` (axis start) and `to` (axis end).
    fn pixel(&self, value: f64, from: f64, to: f64) -> f64 {
        let v = if self.log { value.log10() } else { value };
        from + (v - self.lo) / (self.hi - self.lo) * (to - from)
    }

    /// Tick values (in data units) with their labels.
    fn ticks(&self) -> Vec<(f64, String)> {
        if self.log {
            let multiples: &[f64] = if self.hi - self.lo <= 2.0 + 1e-9 { &[1.0, 2.0, 5.0] } else { &[1.0] };
            let mut ticks = Vec::new();
            for exp in self.lo.floor() as i32..=self.hi.ceil() as i32 {
                for m in multiples {
                    let value = m * 10f64.powi(exp);
                    if (self.lo - 1e-9..=self.hi + 1e-9).contains(&value.log10()) {
                        ticks.push((value, format!("{:.*}", (-exp).max(0) as usize, value)));
                    }
                }
            }
            return ticks;
        }
        let step = nice_step(self.hi - self.lo);
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        let count = ((self.hi - self.lo) / step).round() as i64;
        (0..=count)
            .map(|i| {
                let value = self.lo + i as f64 * step;
                (value, format!("{value:.decimals$}"))
            })
            .collect()
    }
}

/// The largest 1, 2 or 5 times a power of ten at or below `10^x`, as its log10:
/// where a log axis starts, so that data in 1..6 does not get 0.1..10.
fn log_step_below(x: f64) -> f64 {
    let exp = x.floor();
    [5.0f64, 2.0, 1.0].into_iter().map(|m| exp + m.log10()).find(|v| *v <= x + 1e-12).unwrap_or(exp)
}

/// The smallest 1, 2 or 5 times a power of ten at or above `10^x`, as its log10.
fn log_step_above(x: f64) -> f64 {
    let exp = x.floor();
    [1.0f64, 2.0, 5.0, 10.0].into_iter().map(|m| exp + m.log10()).find(|v| *v >= x - 1e-12).unwrap_or(exp + 1.0)
}

/// A round step (1, 2 or 5 times a power of ten) giving about five ticks over `range`.
fn nice_step(range: f64) -> f64 {
    let raw = range / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(10.0 * magnitude);
    if step > 0.0 { step } else { 1.0 }
}

/// A label's approximate extent in pixels: left, top, right, bottom.
type LabelBox = [f64; 4];

/// Where a point's label goes: its text anchor position and extent.
struct LabelSpot {
    x: f64,
    y: f64,
    anchor: &'static str,
    bounds: LabelBox,
}

/// Puts a label beside the point at (`x`, `y`): above right unless that overlaps a
/// label already placed, then below right, above left, below left. If all four
/// overlap, above right anyway, and `false` says it does not fit.
fn place_label(x: f64, y: f64, text: &str, placed: &[LabelBox]) -> (LabelSpot, bool) {
    // 10px text averages under 6px per character; no font metrics needed for a guess.
    let width = text.chars().count() as f64 * 6.0;
    let height = 10.0;
    let spots = [(6.0, -5.0), (6.0, 13.0), (-6.0, -5.0), (-6.0, 13.0)].map(|(dx, dy)| {
        let (lx, ly) = (x + dx, y + dy);
        let (anchor, left) = if dx > 0.0 { ("start", lx) } else { ("end", lx - width) };
        LabelSpot { x: lx, y: ly, anchor, bounds: [left, ly - height, left + width, ly + 2.0] }
    });
    let overlaps = |a: &LabelBox| placed.iter().any(|b| a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]);
    let fits = |s: &LabelSpot| s.bounds[0] >= 0.0 && s.bounds[2] <= WIDTH && !overlaps(&s.bounds);
    let first = spots.iter().position(fits);
    (spots.into_iter().nth(first.unwrap_or(0)).expect("four spots"), first.is_some())
}

/// Series colours (Tableau 10: distinct, and readable to most colour-blind eyes);
/// series past the tenth reuse them in order.
const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
/// Legend swatch and line spacing, px.
const LEGEND_LINE: f64 = 16.0;

/// The chart as an `<svg>` element with axes, ticks, captions and points coloured
/// by series (with a legend when there are series); labels on every point, or only
/// on each series' Pareto front (joined by a dashed line in its colour) where they
/// fit, as the chart asks. Every point carries a `<title>` tooltip with its label
/// and values.
pub(super) fn scatter(chart: &ScatterChart) -> String {
    let x_axis = Axis::covering(chart.points.iter().map(|p| p.x), chart.log_x);
    let y_axis = Axis::covering(chart.points.iter().map(|p| p.y), chart.log_y);
    let series = chart.series();
    let legend_width = if series.is_empty() {
        0.0
    } else {
        30.0 + 6.5 * series.iter().map(|s| s.chars().count()).max().unwrap_or(0) as f64
    };
    let width = WIDTH + legend_width;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{HEIGHT}" viewBox="0 0 {width} {HEIGHT}" role="img" aria-label="{title}">
<style>{STYLE}{palette}</style>
<text x="{cx}" y="20" class="chart-title" text-anchor="middle">{title}</text>
<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" class="plot"/>
"#,
        title = escape(&chart.title),
        palette = palette_style(),
        cx = WIDTH / 2.0,
        w = RIGHT - LEFT,
        h = BOTTOM - TOP,
    );
    axes(&mut svg, chart, &x_axis, &y_axis);
    legend(&mut svg, &series);
    let colour = |name: &str| series.iter().position(|s| *s == name).unwrap_or(0) % PALETTE.len();
    let labelled = chart.labelled();
    let front = matches!(chart.labels, Labels::Front { .. });
    // Pixel positions of the points that can be drawn, unlabelled first so that
    // labelled ones sit on top.
    let mut drawn: Vec<(usize, f64, f64)> = chart
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| x_axis.shows(p.x) && y_axis.shows(p.y))
        .map(|(i, p)| (i, x_axis.pixel(p.x, LEFT, RIGHT), y_axis.pixel(p.y, BOTTOM, TOP)))
        .collect();
    drawn.sort_by_key(|(i, ..)| labelled[*i]);
    let at: std::collections::HashMap<usize, (f64, f64)> = drawn.iter().map(|&(i, x, y)| (i, (x, y))).collect();
    for front in chart.fronts() {
        let stroke = front.first().map_or(FRONT_STROKE, |&i| {
            if series.is_empty() { FRONT_STROKE } else { PALETTE[colour(&chart.points[i].series)] }
        });
        front_line(&mut svg, front.iter().filter_map(|i| at.get(i).copied()).collect(), stroke);
    }
    let mut placed: Vec<LabelBox> = Vec::new();
    for &(i, x, y) in &drawn {
        let point = &chart.points[i];
        let label = escape(&point.label);
        // Under front labelling the front stands out and the rest steps back.
        let (role, r) = match (front, labelled[i]) {
            (false, _) => ("", 4),
            (true, true) => (" best", 5),
            (true, false) => (" dim", 3),
        };
        let _ = write!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" class="s{c}{role}"><title>{label}: {px}, {py}</title></circle>"#,
            c = colour(&point.series),
            px = significant(point.x),
            py = significant(point.y),
        );
        // Every label is drawn when all are asked for; a front's only where it fits
        // (the tooltip still names the point).
        let spot = labelled[i].then(|| place_label(x, y, &point.label, &placed));
        if let Some((spot, fits)) = spot
            && (fits || chart.labels == Labels::All)
        {
            placed.push(spot.bounds);
            let _ = write!(
                svg,
                r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="{anchor}" class="label">{label}</text>"#,
                lx = spot.x,
                ly = spot.y,
                anchor = spot.anchor,
            );
        }
        svg.push('\n');
    }
    if drawn.is_empty() {
        let _ = writeln!(
            svg,
            r#"<text x="{cx}" y="{cy}" text-anchor="middle" class="axis">no data</text>"#,
            cx = (LEFT + RIGHT) / 2.0,
            cy = (TOP + BOTTOM) / 2.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One CSS rule per palette colour, `.chart .sN`.
fn palette_style() -> String {
    PALETTE.iter().enumerate().map(|(i, c)| format!(".chart .s{i}{{fill:{c}}}")).collect()
}

/// Grid lines, tick labels and the two axis captions.
fn axes(svg: &mut String, chart: &ScatterChart, x_axis: &Axis, y_axis: &Axis) {
    for (value, label) in x_axis.ticks() {
        let x = x_axis.pixel(value, LEFT, RIGHT);
        let _ = writeln!(
            svg,
            r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{BOTTOM}" class="grid"/><text x="{x:.1}" y="{ty}" text-anchor="middle" class="tick">{label}</text>"#,
            ty = BOTTOM + 16.0,
        );
    }
    for (value, label) in y_axis.ticks() {
        let y = y_axis.pixel(value, BOTTOM, TOP);
        let _ = writeln!(
            svg,
            r#"<line x1="{LEFT}" y1="{y:.1}" x2="{RIGHT}" y2="{y:.1}" class="grid"/><text x="{tx}" y="{ty:.1}" text-anchor="end" class="tick">{label}</text>"#,
            tx = LEFT - 6.0,
            ty = y + 4.0,
        );
    }
    let log_note = |log: bool| if log { " (log scale)" } else { "" };
    let _ = writeln!(
        svg,
        r#"<text x="{cx}" y="{xy}" text-anchor="middle" class="axis">{xl}{xn}</text>
<text x="16" y="{cy}" text-anchor="middle" class="axis" transform="rotate(-90 16 {cy})">{yl}{yn}</text>"#,
        cx = (LEFT + RIGHT) / 2.0,
        xy = HEIGHT - 24.0,
        cy = (TOP + BOTTOM) / 2.0,
        xl = escape(&chart.x_label),
        xn = log_note(chart.log_x),
        yl = escape(&chart.y_label),
        yn = log_note(chart.log_y),
    );
}

/// The series names with their colours, in a column right of the plot.
fn legend(svg: &mut String, series: &[&str]) {
    for (i, name) in series.iter().enumerate() {
        let y = TOP + 8.0 + i as f64 * LEGEND_LINE;
        let _ = writeln!(
            svg,
            r#"<circle cx="{cx}" cy="{y}" r="5" class="s{c}"/><text x="{tx}" y="{ty}" class="legend">{name}</text>"#,
            cx = WIDTH - 4.0,
            c = i % PALETTE.len(),
            tx = WIDTH + 6.0,
            ty = y + 4.0,
            name = escape(name),
        );
    }
}

/// Colour of the front's line on a chart without series.
const FRONT_STROKE: &str = "#777";

/// A Pareto front as a dashed line through its points, left to right.
fn front_line(svg: &mut String, mut points: Vec<(f64, f64)>, stroke: &str) {
    if points.len() < 2 {
        return;
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let path: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = writeln!(svg, r#"<polyline points="{}" stroke="{stroke}" class="front"/>"#, path.join(" "));
}

/// A value with at most four significant digits and no trailing zeros, for
/// tooltips (the CSV keeps full precision).
fn significant(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return value.to_string();
    }
    let decimals = (3 - value.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Goal, Point};

    fn chart(points: &[(f64, f64)], log_x: bool) -> ScatterChart {
        ScatterChart {
            title: "t <1>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x,
            log_y: false,
            points: points
                .iter()
                .map(|(x, y)| Point { x: *x, y: *y, label: format!("p{x}"), series: String::new() })
                .collect(),
            labels: Labels::All,
        }
    }

    /// Text of every visible label (`class="label"`), in drawing order.
    fn label_texts(svg: &str) -> Vec<&str> {
        svg.split(r#"class="label">"#).skip(1).map(|rest| &rest[..rest.find('<').unwrap()]).collect()
    }

    #[test]
    fn linear_axes_have_round_ticks_covering_the_data() {
        let axis = Axis::covering([0.3, 9.7].into_iter(), false);
        assert_eq!((axis.lo, axis.hi), (0.0, 10.0));
        let labels: Vec<String> = axis.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0", "2", "4", "6", "8", "10"]);
        let flat = Axis::covering([5.0, 5.0].into_iter(), false);
        assert!(flat.lo < 5.0 && flat.hi > 5.0);
    }

    #[test]
    fn log_axes_end_on_one_two_five_steps() {
        let axis = Axis::covering([4.0, 1800.0, -1.0].into_iter(), true);
        assert!((axis.lo - 2f64.log10()).abs() < 1e-12 && (axis.hi - 2000f64.log10()).abs() < 1e-12);
        let labels: Vec<String> = axis.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["10", "100", "1000"], "three decades: powers of ten only");
        let pixel = axis.pixel(20.0, 0.0, 300.0);
        assert!((pixel - 100.0).abs() < 1e-9, "{pixel}");
        // Compression factors from 0.99 to 6.4: 0.5 to 10, not 0.1 to 10.
        let axis = Axis::covering([0.99, 6.4].into_iter(), true);
        let labels: Vec<String> = axis.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["0.5", "1", "2", "5", "10"]);
        let exact = Axis::covering([1.0, 100.0].into_iter(), true);
        assert_eq!((exact.lo, exact.hi), (0.0, 2.0), "round values are their own ends");
    }

    #[test]
    fn points_are_drawn_and_text_escaped() {
        let svg = scatter(&chart(&[(1.0, 2.0), (10.0, 3.0), (0.0, 1.0)], true));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("t &lt;1&gt;"));
        // The point at x = 0 cannot sit on a log axis.
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains(">p10</text>"));
    }

    #[test]
    fn labels_move_aside_rather_than_overlap() {
        let (first, fits) = place_label(100.0, 100.0, "pco:8", &[]);
        assert_eq!((first.x, first.y, first.anchor, fits), (106.0, 95.0, "start", true));
        let (second, fits) = place_label(101.0, 100.0, "delta+pco:8", &[first.bounds]);
        assert_eq!((second.y, second.anchor, fits), (113.0, "start", true), "moved below");
        let crowded = [first.bounds, second.bounds, [0.0, 0.0, 720.0, 420.0]];
        let (third, fits) = place_label(100.0, 100.0, "x", &crowded);
        assert_eq!((third.x, third.y, fits), (106.0, 95.0, false), "falls back to above right, saying so");
    }

    #[test]
    fn series_are_coloured_and_named_in_a_legend() {
        let mut c = chart(&[(1.0, 2.0), (2.0, 3.0), (3.0, 1.0)], false);
        for (point, series) in c.points.iter_mut().zip(["zstd", "gzip", "zstd"]) {
            point.series = series.into();
        }
        let svg = scatter(&c);
        assert!(svg.contains(r#"class="legend">zstd</text>"#) && svg.contains(r#"class="legend">gzip</text>"#));
        assert_eq!(svg.matches(r#"class="s0""#).count(), 3, "two zstd points and zstd's legend key");
        assert_eq!(svg.matches(r#"class="s1""#).count(), 2, "one gzip point and its key");
        assert!(svg.contains(".chart .s1{fill:#f28e2b}"));
        assert_eq!(label_texts(&svg).len(), 3);
        c.labels = Labels::None;
        let legend_only = scatter(&c);
        assert!(label_texts(&legend_only).is_empty() && legend_only.contains(r#"class="legend">gzip</text>"#));
        let plain = scatter(&chart(&[(1.0, 2.0)], false));
        assert!(!plain.contains(r#"class="legend""#), "no series, no legend");
    }

    #[test]
    fn front_labelling_labels_only_the_best_trade_offs() {
        // x: time (lower better), y: ratio (higher better). p1 beats p2, p3 beats p4.
        let mut c = chart(&[(1.0, 2.0), (2.0, 1.5), (3.0, 4.0), (4.0, 3.0), (5.0, 6.0)], false);
        c.labels = Labels::Front { x: Goal::Lower, y: Goal::Higher };
        let svg = scatter(&c);
        let mut labels = label_texts(&svg);
        labels.sort_unstable();
        assert_eq!(labels, ["p1", "p3", "p5"]);
        assert_eq!(svg.matches("<circle").count(), 5, "every point is still drawn");
        assert_eq!(svg.matches(" dim\"").count(), 2);
        assert_eq!(svg.matches("<polyline").count(), 1, "the front is joined");
        assert!(svg.contains("<title>p2: 2, 1.5</title>"), "unlabelled points keep their tooltip");
        c.labels = Labels::All;
        assert_eq!(label_texts(&scatter(&c)).len(), 5);
    }

    #[test]
    fn each_series_has_its_own_front_in_its_colour() {
        let mut c = chart(&[(1.0, 1.0), (2.0, 2.0), (3.0, 1.5), (1.5, 3.0), (2.5, 4.0)], false);
        for (point, series) in c.points.iter_mut().zip(["a", "a", "a", "b", "b"]) {
            point.series = series.into();
        }
        c.labels = Labels::Front { x: Goal::Lower, y: Goal::Higher };
        let svg = scatter(&c);
        // p2 is on a's front though b's p1.5 beats it; p3 is beaten by p2.
        let mut labels = label_texts(&svg);
        labels.sort_unstable();
        assert_eq!(labels, ["p1", "p1.5", "p2", "p2.5"]);
        assert!(svg.contains(r##"stroke="#4e79a7" class="front""##), "a's front in a's colour");
        assert!(svg.contains(r##"stroke="#f28e2b" class="front""##), "b's front in b's colour");
    }

    #[test]
    fn front_labels_that_do_not_fit_are_left_to_the_tooltip() {
        let mut c = chart(&[(1.0, 1.0); 6], false);
        for (i, point) in c.points.iter_mut().enumerate() {
            point.series = format!("s{i}");
        }
        c.labels = Labels::Front { x: Goal::Lower, y: Goal::Higher };
        assert_eq!(label_texts(&scatter(&c)).len(), 4, "four places around one spot");
        c.labels = Labels::All;
        assert_eq!(label_texts(&scatter(&c)).len(), 6, "asked for all, all are drawn");
    }

    #[test]
    fn empty_charts_still_render() {
        let svg = scatter(&chart(&[], false));
        assert!(svg.contains("no data"));
    }
}
