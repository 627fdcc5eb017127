//! Scatter charts of labelled points, optionally in coloured series and with labels
//! only on the best trade-offs (the Pareto front).

use super::{Cell, ReportError, Table, svg};

/// One labelled point of a [`ScatterChart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Horizontal position, in the x column's units.
    pub x: f64,
    /// Vertical position, in the y column's units.
    pub y: f64,
    /// Text drawn beside the point (or only in its tooltip; see [`Labels`]).
    pub label: String,
    /// The series the point belongs to (its colour and legend entry); empty for a
    /// chart without series.
    pub series: String,
}

/// Which way is better along an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Larger values are better (ratio, throughput).
    Higher,
    /// Smaller values are better (time, size).
    Lower,
}

/// Which points carry a visible label (every point keeps its tooltip).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Labels {
    /// Every point: for charts of a few points.
    #[default]
    All,
    /// None: the legend names the series, which is all a point's label would say.
    None,
    /// Only the points no other point of their series beats on both axes (each
    /// series' Pareto front, drawn as a line in its colour; the whole chart's
    /// front when there are no series), for charts of many points where labels
    /// would pile up.
    Front {
        /// Which way is better horizontally.
        x: Goal,
        /// Which way is better vertically.
        y: Goal,
    },
}

/// A scatter chart of labelled points, drawn as inline SVG in HTML reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ScatterChart {
    /// Shown above the chart.
    pub title: String,
    /// The horizontal axis's caption.
    pub x_label: String,
    /// The vertical axis's caption.
    pub y_label: String,
    /// Logarithmic horizontal axis (for throughputs spanning decades).
    pub log_x: bool,
    /// Logarithmic vertical axis.
    pub log_y: bool,
    /// The points.
    pub points: Vec<Point>,
    /// Which points are labelled.
    pub labels: Labels,
}

impl ScatterChart {
    /// A chart of one point per row of `table`: `x` against `y`, labelled by `label`.
    /// Rows whose x or y cell is not a finite number are left out.
    pub fn from_table(
        title: impl Into<String>,
        table: &Table,
        x: &str,
        y: &str,
        label: &str,
    ) -> Result<ScatterChart, ReportError> {
        ScatterChart::from_table_where(title, table, x, y, label, |_| true)
    }

    /// Like [`ScatterChart::from_table`], keeping only rows for which `keep` is true.
    pub fn from_table_where(
        title: impl Into<String>,
        table: &Table,
        x: &str,
        y: &str,
        label: &str,
        mut keep: impl FnMut(&[Cell]) -> bool,
    ) -> Result<ScatterChart, ReportError> {
        let (xi, yi, li) = (table.require_column(x)?, table.require_column(y)?, table.require_column(label)?);
        let points = (0..table.rows.len())
            .filter(|r| keep(&table.rows[*r]))
            .filter_map(|r| {
                let x = table.rows[r][xi].as_number()?;
                let y = table.rows[r][yi].as_number()?;
                (x.is_finite() && y.is_finite()).then(|| Point {
                    x,
                    y,
                    label: table.display_cell(r, li),
                    series: String::new(),
                })
            })
            .collect();
        Ok(ScatterChart {
            title: title.into(),
            x_label: x.to_string(),
            y_label: y.to_string(),
            log_x: false,
            log_y: false,
            points,
            labels: Labels::All,
        })
    }

    /// Makes the horizontal axis logarithmic.
    pub fn with_log_x(mut self) -> ScatterChart {
        self.log_x = true;
        self
    }

    /// Makes the vertical axis logarithmic.
    pub fn with_log_y(mut self) -> ScatterChart {
        self.log_y = true;
        self
    }

    /// Puts each point in the series `series_of` names for its label (a codec
    /// spec's algorithm, say): one colour per series and a legend.
    pub fn with_series(mut self, series_of: impl Fn(&str) -> String) -> ScatterChart {
        for point in &mut self.points {
            point.series = series_of(&point.label);
        }
        self
    }

    /// Labels only the Pareto front, `x` and `y` better in the given directions.
    pub fn with_front_labels(mut self, x: Goal, y: Goal) -> ScatterChart {
        self.labels = Labels::Front { x, y };
        self
    }

    /// Draws no labels; the series' legend names the points.
    pub fn without_labels(mut self) -> ScatterChart {
        self.labels = Labels::None;
        self
    }

    /// The series in order of first appearance (empty names left out).
    pub fn series(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for point in &self.points {
            if !point.series.is_empty() && !names.contains(&point.series.as_str()) {
                names.push(&point.series);
            }
        }
        names
    }

    /// Under [`Labels::Front`], the indices of each series' front points (one
    /// group per series, in [`ScatterChart::series`] order; one group for a chart
    /// without series); empty under [`Labels::All`] and [`Labels::None`].
    pub fn fronts(&self) -> Vec<Vec<usize>> {
        let Labels::Front { x, y } = self.labels else { return Vec::new() };
        let mut groups: Vec<&str> = self.series();
        if groups.is_empty() {
            groups.push("");
        }
        groups
            .into_iter()
            .map(|name| {
                let members: Vec<usize> = (0..self.points.len()).filter(|&i| self.points[i].series == name).collect();
                let points: Vec<Point> = members.iter().map(|&i| self.points[i].clone()).collect();
                members.into_iter().zip(pareto_front(&points, x, y)).filter(|(_, on)| *on).map(|(i, _)| i).collect()
            })
            .collect()
    }

    /// Whether each point is labelled: all under [`Labels::All`], none under
    /// [`Labels::None`], those on a front under [`Labels::Front`].
    pub fn labelled(&self) -> Vec<bool> {
        match self.labels {
            Labels::All => return vec![true; self.points.len()],
            Labels::None => return vec![false; self.points.len()],
            Labels::Front { .. } => {}
        }
        let mut labelled = vec![false; self.points.len()];
        for i in self.fronts().into_iter().flatten() {
            labelled[i] = true;
        }
        labelled
    }

    /// The chart as a standalone `<svg>` element.
    pub fn to_svg(&self) -> String {
        svg::scatter(self)
    }
}

/// For each point, whether no other point is at least as good on both axes and
/// better on one. Of identical points, only the first counts as on the front.
/// Non-finite points are never on it.
pub fn pareto_front(points: &[Point], x: Goal, y: Goal) -> Vec<bool> {
    // Turn both axes into "higher is better", then sweep from the best x down: a
    // point is on the front if it beats the best y seen so far.
    let score = |v: f64, goal: Goal| if goal == Goal::Higher { v } else { -v };
    let mut order: Vec<usize> =
        (0..points.len()).filter(|&i| points[i].x.is_finite() && points[i].y.is_finite()).collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&points[a], &points[b]);
        score(pb.x, x).total_cmp(&score(pa.x, x)).then(score(pb.y, y).total_cmp(&score(pa.y, y))).then(a.cmp(&b))
    });
    let mut front = vec![false; points.len()];
    let mut best_y = f64::NEG_INFINITY;
    for i in order {
        let v = score(points[i].y, y);
        if v > best_y {
            front[i] = true;
            best_y = v;
        }
    }
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(xy: &[(f64, f64)]) -> Vec<Point> {
        xy.iter().map(|&(x, y)| Point { x, y, label: format!("{x},{y}"), series: String::new() }).collect()
    }

    #[test]
    fn the_front_keeps_only_undominated_points() {
        // Time (lower better) against ratio (higher better).
        let p = points(&[(1.0, 2.0), (2.0, 3.0), (2.0, 2.5), (3.0, 3.0), (0.5, 1.0), (4.0, 5.0), (1.0, 2.0)]);
        let front = pareto_front(&p, Goal::Lower, Goal::Higher);
        assert_eq!(front, [true, true, false, false, true, true, false]);
        // The same points with both axes higher-is-better: only the top right survives.
        let front = pareto_front(&p, Goal::Higher, Goal::Higher);
        assert_eq!(front, [false, false, false, false, false, true, false]);
        assert_eq!(pareto_front(&points(&[(f64::NAN, 1.0)]), Goal::Lower, Goal::Lower), [false]);
        assert!(pareto_front(&[], Goal::Lower, Goal::Lower).is_empty());
    }

    #[test]
    fn series_come_from_labels_in_first_seen_order() {
        let mut table = Table::new("t", vec![super::super::Column::text("spec"), super::super::Column::number("x", 1)]);
        for spec in ["zstd:1", "gzip:6", "zstd:9"] {
            table.push_row(vec![spec.into(), 1.0.into()]);
        }
        let chart = ScatterChart::from_table("c", &table, "x", "x", "spec")
            .unwrap()
            .with_series(|label| label.split(':').next().unwrap_or_default().to_string());
        assert_eq!(chart.series(), ["zstd", "gzip"]);
        assert_eq!(chart.labelled(), [true, true, true]);
        let chart = chart.with_front_labels(Goal::Lower, Goal::Higher);
        assert_eq!(chart.fronts(), [vec![0], vec![1]], "each series' own front; of identical points, the first");
        assert_eq!(chart.labelled(), [true, true, false]);
    }
}
