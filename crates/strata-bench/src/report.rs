//! Benchmark reports: titled tables and scatter charts, rendered for a terminal,
//! as CSV files or as one self-contained HTML page.
//!
//! Every Strata benchmark builds a [`Report`] and hands it to the CLI, which decides
//! where it goes. Tables hold typed [`Cell`]s, so each renderer formats numbers
//! itself: the terminal and HTML show a column's chosen decimals, CSV keeps full
//! precision for tools.
//!
//! ```
//! use strata_bench::report::{Cell, Column, Report, ScatterChart, Table};
//! let mut table = Table::new(
//!     "speeds",
//!     vec![Column::text("codec"), Column::number("MBps", 1).higher_is_better()],
//! );
//! table.push_row(vec!["zstd:1".into(), 512.25.into()]);
//! table.push_row(vec!["gzip:6".into(), 48.0.into()]);
//! let chart = ScatterChart::from_table("speed", &table, "MBps", "MBps", "codec").unwrap();
//! let mut report = Report::new("demo");
//! report.push_table(table);
//! report.push_chart(chart);
//! assert!(report.to_terminal().contains("512.2"));
//! assert!(report.to_html().contains("<svg"));
//! ```

mod csv;
mod html;
mod svg;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// One value in a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// No value (shown blank; never coloured).
    Empty,
    /// Text, shown as is.
    Text(String),
    /// A number, shown with its column's decimals and coloured if the column asks.
    Number(f64),
}

impl Cell {
    /// The number in the cell, if it holds one.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Cell::Number(v) => Some(*v),
            _ => None,
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::Text(text.to_string())
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::Text(text)
    }
}

impl From<f64> for Cell {
    fn from(value: f64) -> Cell {
        Cell::Number(value)
    }
}

impl From<usize> for Cell {
    fn from(value: usize) -> Cell {
        Cell::Number(value as f64)
    }
}

impl From<bool> for Cell {
    /// Booleans read as "yes" and "no" in every rendering.
    fn from(value: bool) -> Cell {
        Cell::Text(if value { "yes" } else { "no" }.to_string())
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(value: Option<T>) -> Cell {
        value.map_or(Cell::Empty, Into::into)
    }
}

/// Whether and how a numeric column is heat-map coloured in HTML.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Heat {
    /// No colouring.
    #[default]
    Off,
    /// Larger values are better (ratios, throughput): largest is green.
    HigherIsBetter,
    /// Smaller values are better (latency, size): smallest is green.
    LowerIsBetter,
}

/// A column's name and how its numbers are shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Header text; also the name charts and [`Table::column_index`] look up.
    pub name: String,
    /// Digits after the decimal point for numbers on the terminal and in HTML.
    pub decimals: usize,
    /// Heat-map colouring in HTML.
    pub heat: Heat,
    /// Whether cells are right-aligned (numbers) or left-aligned (text).
    pub numeric: bool,
}

impl Column {
    /// A left-aligned text column.
    pub fn text(name: impl Into<String>) -> Column {
        Column { name: name.into(), decimals: 0, heat: Heat::Off, numeric: false }
    }

    /// A right-aligned numeric column showing `decimals` digits after the point.
    pub fn number(name: impl Into<String>, decimals: usize) -> Column {
        Column { name: name.into(), decimals, heat: Heat::Off, numeric: true }
    }

    /// Colours the column in HTML, largest value best.
    pub fn higher_is_better(mut self) -> Column {
        self.heat = Heat::HigherIsBetter;
        self
    }

    /// Colours the column in HTML, smallest value best.
    pub fn lower_is_better(mut self) -> Column {
        self.heat = Heat::LowerIsBetter;
        self
    }
}

/// A titled table of named columns and rows of cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Shown above the table; also names its CSV file in [`Report::write_csv`].
    pub title: String,
    /// The columns, left to right.
    pub columns: Vec<Column>,
    /// The rows; each has exactly one cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// If set, heat-map colours compare a row only with rows that have the same
    /// value in this column (say, one data column's codecs with each other).
    pub heat_group: Option<usize>,
    /// If true, heat-map colours compare the cells of each row with each other
    /// instead of each column's cells (a matrix of data columns by codecs, as the
    /// TAQ case study colours its tables).
    pub heat_by_row: bool,
}

impl Table {
    /// An empty table with the given columns.
    pub fn new(title: impl Into<String>, columns: Vec<Column>) -> Table {
        Table { title: title.into(), columns, rows: Vec::new(), heat_group: None, heat_by_row: false }
    }

    /// Appends a row.
    ///
    /// # Panics
    /// If the row does not have one cell per column: that is a bug in the benchmark
    /// building the table, not a condition to handle.
    pub fn push_row(&mut self, row: Vec<Cell>) {
        assert_eq!(row.len(), self.columns.len(), "table '{}': a row needs one cell per column", self.title);
        self.rows.push(row);
    }

    /// Colours heat-map columns within groups of rows sharing a value in `column`.
    pub fn with_heat_groups(mut self, column: &str) -> Result<Table, ReportError> {
        self.heat_group = Some(self.require_column(column)?);
        Ok(self)
    }

    /// Colours each row's heat-map cells against each other (see [`Table::heat_by_row`]).
    pub fn with_heat_by_row(mut self) -> Table {
        self.heat_by_row = true;
        self
    }

    /// The position of the column called `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    fn require_column(&self, name: &str) -> Result<usize, ReportError> {
        self.column_index(name).ok_or_else(|| ReportError::UnknownColumn {
            table: self.title.clone(),
            column: name.to_string(),
            available: self.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
        })
    }

    /// The cell at `row`, `column` as shown on the terminal and in HTML.
    pub fn display_cell(&self, row: usize, column: usize) -> String {
        match &self.rows[row][column] {
            Cell::Empty => String::new(),
            Cell::Text(text) => text.clone(),
            Cell::Number(v) if v.is_nan() => String::new(),
            Cell::Number(v) => format!("{v:.*}", self.columns[column].decimals),
        }
    }

    /// The table drawn with box characters for a terminal (title on the first line).
    pub fn to_terminal(&self) -> String {
        let mut table = comfy_table::Table::new();
        table.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
        // Wraps cells to the terminal's width when there is one; unlimited otherwise.
        table.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        table.set_header(self.columns.iter().map(|c| c.name.as_str()));
        for row in 0..self.rows.len() {
            table.add_row((0..self.columns.len()).map(|c| self.display_cell(row, c)));
        }
        for (i, column) in self.columns.iter().enumerate() {
            if column.numeric
                && let Some(c) = table.column_mut(i)
            {
                c.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        format!("{}\n{table}", self.title)
    }

    /// The table as RFC 4180 CSV: a header line, then one line per row. Numbers keep
    /// full precision; text is quoted when it holds a comma, quote or line break.
    pub fn to_csv(&self) -> String {
        csv::table_to_csv(self)
    }

    /// Writes [`Table::to_csv`] to `path`, replacing any file there.
    pub fn write_csv(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_csv()).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }
}

/// One labelled point of a [`ScatterChart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Horizontal position, in the x column's units.
    pub x: f64,
    /// Vertical position, in the y column's units.
    pub y: f64,
    /// Text drawn beside the point.
    pub label: String,
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
                (x.is_finite() && y.is_finite()).then(|| Point { x, y, label: table.display_cell(r, li) })
            })
            .collect();
        Ok(ScatterChart {
            title: title.into(),
            x_label: x.to_string(),
            y_label: y.to_string(),
            log_x: false,
            log_y: false,
            points,
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

    /// The chart as a standalone `<svg>` element.
    pub fn to_svg(&self) -> String {
        svg::scatter(self)
    }
}

/// One part of a report, in the order it is shown.
#[derive(Clone, Debug, PartialEq)]
pub enum Section {
    /// A paragraph of plain text (what was measured, on what).
    Note(String),
    /// A table.
    Table(Table),
    /// A chart (HTML only; the terminal shows its title and point count).
    Chart(ScatterChart),
}

/// A benchmark's result: a title and an ordered list of notes, tables and charts.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The page title.
    pub title: String,
    /// The contents, in order.
    pub sections: Vec<Section>,
}

impl Report {
    /// An empty report.
    pub fn new(title: impl Into<String>) -> Report {
        Report { title: title.into(), sections: Vec::new() }
    }

    /// Appends a paragraph of text.
    pub fn push_note(&mut self, text: impl Into<String>) {
        self.sections.push(Section::Note(text.into()));
    }

    /// Appends a table.
    pub fn push_table(&mut self, table: Table) {
        self.sections.push(Section::Table(table));
    }

    /// Appends a chart.
    pub fn push_chart(&mut self, chart: ScatterChart) {
        self.sections.push(Section::Chart(chart));
    }

    /// The tables, in order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.sections.iter().filter_map(|s| match s {
            Section::Table(t) => Some(t),
            _ => None,
        })
    }

    /// The first table with this title.
    pub fn table(&self, title: &str) -> Option<&Table> {
        self.tables().find(|t| t.title == title)
    }

    /// The charts, in order.
    pub fn charts(&self) -> impl Iterator<Item = &ScatterChart> {
        self.sections.iter().filter_map(|s| match s {
            Section::Chart(c) => Some(c),
            _ => None,
        })
    }

    /// The report for a terminal: notes and tables; charts are only named, since
    /// they need the HTML page.
    pub fn to_terminal(&self) -> String {
        let mut out = format!("{}\n", self.title);
        for section in &self.sections {
            out.push('\n');
            match section {
                Section::Note(text) => out.push_str(text),
                Section::Table(table) => out.push_str(&table.to_terminal()),
                Section::Chart(chart) => out.push_str(&format!(
                    "(chart '{}': {} points, in the HTML report)",
                    chart.title,
                    chart.points.len()
                )),
            }
            out.push('\n');
        }
        out
    }

    /// Writes the tables as CSV: the first to `path`, each further table beside it
    /// as `<stem>-<table title slug>.csv`. Returns the paths written, in table order.
    pub fn write_csv(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        for (i, table) in self.tables().enumerate() {
            let target = if i == 0 { path.to_path_buf() } else { csv::sibling_path(path, &table.title) };
            table.write_csv(&target)?;
            written.push(target);
        }
        Ok(written)
    }

    /// The report as one HTML page with inline CSS and SVG and no external assets.
    pub fn to_html(&self) -> String {
        html::page(self)
    }

    /// Writes [`Report::to_html`] to `path`, replacing any file there.
    pub fn write_html(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_html()).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }
}

/// Why a report could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportError {
    /// A chart or heat grouping named a column the table does not have.
    UnknownColumn {
        /// The table's title.
        table: String,
        /// The name asked for.
        column: String,
        /// The table's columns, comma-separated.
        available: String,
    },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::UnknownColumn { table, column, available } => {
                write!(f, "table '{table}' has no column '{column}'; it has: {available}")
            }
        }
    }
}

impl std::error::Error for ReportError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut table = Table::new(
            "codecs",
            vec![
                Column::text("spec"),
                Column::number("ratio", 2).higher_is_better(),
                Column::number("MBps", 1).higher_is_better(),
            ],
        );
        table.push_row(vec!["zstd:1".into(), 3.081.into(), 488.0.into()]);
        table.push_row(vec!["pco:8".into(), 4.0.into(), 406.5.into()]);
        table.push_row(vec!["none".into(), Cell::Empty, 9000.0.into()]);
        table
    }

    #[test]
    fn terminal_shows_title_headers_and_rounded_numbers() {
        let text = sample().to_terminal();
        assert!(text.starts_with("codecs\n"));
        for needle in ["spec", "ratio", "3.08", "4.00", "406.5", "pco:8"] {
            assert!(text.contains(needle), "{needle} in\n{text}");
        }
    }

    #[test]
    fn unknown_columns_are_errors_naming_the_choices() {
        let err = ScatterChart::from_table("c", &sample(), "speed", "ratio", "spec").unwrap_err();
        assert_eq!(err.to_string(), "table 'codecs' has no column 'speed'; it has: spec, ratio, MBps");
        assert!(sample().with_heat_groups("nope").is_err());
    }

    #[test]
    fn charts_skip_rows_without_numbers() {
        let chart = ScatterChart::from_table("c", &sample(), "MBps", "ratio", "spec").unwrap();
        assert_eq!(chart.points.len(), 2);
        assert_eq!(chart.points[1].label, "pco:8");
        let chart = ScatterChart::from_table_where("c", &sample(), "MBps", "ratio", "spec", |row| {
            row[0] == Cell::from("pco:8")
        })
        .unwrap();
        assert_eq!(chart.points.len(), 1);
    }

    #[test]
    fn report_writes_one_csv_per_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut report = Report::new("r");
        report.push_table(sample());
        let mut second = sample();
        second.title = "Per column: best".into();
        report.push_table(second);
        let written = report.write_csv(&dir.path().join("out.csv")).unwrap();
        assert_eq!(written, vec![dir.path().join("out.csv"), dir.path().join("out-per-column-best.csv")]);
        let text = std::fs::read_to_string(&written[1]).unwrap();
        assert!(text.starts_with("spec,ratio,MBps\n"), "{text}");
    }

    #[test]
    #[should_panic(expected = "one cell per column")]
    fn short_rows_are_refused() {
        sample().push_row(vec!["x".into()]);
    }
}
