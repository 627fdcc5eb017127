//! Scatter charts as inline SVG, drawn by hand (no plotting library, no fonts to ship).

use std::fmt::Write;

use super::ScatterChart;
use super::html::escape;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 700.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 360.0;
/// Inside each `<svg>`, so a chart looks the same alone as in the HTML page.
/// Scoped to `.chart` (the root's class) so that, inline in HTML, it styles nothing else.
const STYLE: &str = ".chart text{font-family:system-ui,sans-serif;font-size:11px}\
.chart .plot{fill:#fcfcfc;stroke:#999}.chart .grid{stroke:#e4e4e4}.chart .tick{fill:#555}\
.chart .axis{fill:#222;font-size:12px}.chart .chart-title{font-weight:bold;font-size:13px}\
.chart circle{fill:#3a6ea5;fill-opacity:.8}.chart .label{fill:#333;font-size:10px}";

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
            let (lo, hi) = (min.floor(), max.ceil());
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
            let decades = (self.hi - self.lo) as i32;
            let multiples: &[f64] = if decades <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
            let mut ticks = Vec::new();
            for exp in self.lo as i32..=self.hi as i32 {
                for m in multiples {
                    let value = m * 10f64.powi(exp);
                    if value.log10() <= self.hi + 1e-9 {
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
/// overlap, above right anyway; the tooltip still names the point.
fn place_label(x: f64, y: f64, text: &str, placed: &[LabelBox]) -> LabelSpot {
    // 10px text averages about 5.5px per character; no font metrics needed for a guess.
    let width = text.chars().count() as f64 * 5.5;
    let height = 10.0;
    let spots = [(6.0, -5.0), (6.0, 13.0), (-6.0, -5.0), (-6.0, 13.0)].map(|(dx, dy)| {
        let (lx, ly) = (x + dx, y + dy);
        let (anchor, left) = if dx > 0.0 { ("start", lx) } else { ("end", lx - width) };
        LabelSpot { x: lx, y: ly, anchor, bounds: [left, ly - height, left + width, ly + 2.0] }
    });
    let overlaps = |a: &LabelBox| placed.iter().any(|b| a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]);
    let fits = |s: &LabelSpot| s.bounds[0] >= 0.0 && s.bounds[2] <= WIDTH && !overlaps(&s.bounds);
    let first = spots.iter().position(fits).unwrap_or(0);
    spots.into_iter().nth(first).expect("four spots")
}

/// The chart as an `<svg>` element with axes, ticks, captions and labelled points;
/// each point also carries a `<title>` tooltip with its exact values.
pub(super) fn scatter(chart: &ScatterChart) -> String {
    let x_axis = Axis::covering(chart.points.iter().map(|p| p.x), chart.log_x);
    let y_axis = Axis::covering(chart.points.iter().map(|p| p.y), chart.log_y);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{title}">
<style>{STYLE}</style>
<text x="{cx}" y="20" class="chart-title" text-anchor="middle">{title}</text>
<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" class="plot"/>
"#,
        title = escape(&chart.title),
        cx = WIDTH / 2.0,
        w = RIGHT - LEFT,
        h = BOTTOM - TOP,
    );
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
    let mut drawn = 0;
    let mut placed: Vec<LabelBox> = Vec::new();
    for point in &chart.points {
        if !x_axis.shows(point.x) || !y_axis.shows(point.y) {
            continue;
        }
        drawn += 1;
        let x = x_axis.pixel(point.x, LEFT, RIGHT);
        let y = y_axis.pixel(point.y, BOTTOM, TOP);
        let spot = place_label(x, y, &point.label, &placed);
        placed.push(spot.bounds);
        let label = escape(&point.label);
        let _ = writeln!(
            svg,
            r#"<g class="point"><circle cx="{x:.1}" cy="{y:.1}" r="4"><title>{label}: {px}, {py}</title></circle><text x="{lx:.1}" y="{ly:.1}" text-anchor="{anchor}" class="label">{label}</text></g>"#,
            px = point.x,
            py = point.y,
            lx = spot.x,
            ly = spot.y,
            anchor = spot.anchor,
        );
    }
    if drawn == 0 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Point;

    fn chart(points: &[(f64, f64)], log_x: bool) -> ScatterChart {
        ScatterChart {
            title: "t <1>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x,
            log_y: false,
            points: points.iter().map(|(x, y)| Point { x: *x, y: *y, label: format!("p{x}") }).collect(),
        }
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
    fn log_axes_span_whole_decades() {
        let axis = Axis::covering([4.0, 1800.0, -1.0].into_iter(), true);
        assert_eq!((axis.lo, axis.hi), (0.0, 4.0));
        let labels: Vec<String> = axis.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(labels, ["1", "10", "100", "1000", "10000"]);
        let pixel = axis.pixel(100.0, 0.0, 400.0);
        assert!((pixel - 200.0).abs() < 1e-9);
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
        let first = place_label(100.0, 100.0, "pco:8", &[]);
        assert_eq!((first.x, first.y, first.anchor), (106.0, 95.0, "start"));
        let second = place_label(101.0, 100.0, "delta+pco:8", &[first.bounds]);
        assert_eq!((second.y, second.anchor), (113.0, "start"), "moved below");
        let crowded = [first.bounds, second.bounds, [0.0, 0.0, 720.0, 420.0]];
        let third = place_label(100.0, 100.0, "x", &crowded);
        assert_eq!((third.x, third.y), (106.0, 95.0), "falls back to above right");
    }

    #[test]
    fn empty_charts_still_render() {
        let svg = scatter(&chart(&[], false));
        assert!(svg.contains("no data"));
    }
}
