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

mod caveat;
mod chart;
mod csv;
mod heat;
mod html;
mod svg;

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

pub use caveat::{Caveat, format_seconds, timer_resolution};
pub use chart::{Goal, Labels, Point, ScatterChart, pareto_front};

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
    /// If true, every heat-map cell of the table is the same metric (a matrix of
    /// data columns by codecs, say) and one colour scale covers them all; otherwise
    /// each heat-map column is its own metric, scaled over all its rows.
    pub heat_one_scale: bool,
    /// If true, the table is the full results, for look-ups and tools: the HTML
    /// page shows it folded, after everything else.
    pub appendix: bool,
    /// Cells not to trust, by (row, column): marked, left uncoloured and counted
    /// in a warning above the table.
    pub flags: BTreeMap<(usize, usize), Caveat>,
    /// Warnings about the whole table, shown above it.
    pub warnings: Vec<String>,
}

impl Table {
    /// An empty table with the given columns.
    pub fn new(title: impl Into<String>, columns: Vec<Column>) -> Table {
        Table {
            title: title.into(),
            columns,
            rows: Vec::new(),
            heat_one_scale: false,
            appendix: false,
            flags: BTreeMap::new(),
            warnings: Vec::new(),
        }
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

    /// Colours all heat-map cells on one scale (see [`Table::heat_one_scale`]).
    pub fn with_one_heat_scale(mut self) -> Table {
        self.heat_one_scale = true;
        self
    }

    /// Marks the table as the full results (see [`Table::appendix`]).
    pub fn in_appendix(mut self) -> Table {
        self.appendix = true;
        self
    }

    /// Marks the cell at `row`, `column` as not to be trusted, for `caveat`'s
    /// reason (a later caveat for the same cell replaces an earlier one).
    ///
    /// # Panics
    /// If there is no such cell: a bug in the benchmark building the table.
    pub fn flag(&mut self, row: usize, column: usize, caveat: Caveat) {
        assert!(
            row < self.rows.len() && column < self.columns.len(),
            "table '{}': no cell ({row}, {column}) to flag",
            self.title
        );
        self.flags.insert((row, column), caveat);
    }

    /// Adds a warning about the whole table.
    pub fn warn(&mut self, text: impl Into<String>) {
        self.warnings.push(text.into());
    }

    /// Each distinct caveat summary of the flagged cells with how many cells it
    /// covers, in order of first appearance (by row, then column).
    pub fn flag_summaries(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for caveat in self.flags.values() {
            let summary = caveat.summary();
            match counts.iter_mut().find(|(s, _)| *s == summary) {
                Some((_, n)) => *n += 1,
                None => counts.push((summary, 1)),
            }
        }
        counts
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
            table.add_row((0..self.columns.len()).map(|c| {
                let text = self.display_cell(row, c);
                if self.flags.contains_key(&(row, c)) { format!("{text}*") } else { text }
            }));
        }
        for (i, column) in self.columns.iter().enumerate() {
            if column.numeric
                && let Some(c) = table.column_mut(i)
            {
                c.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        let mut out = format!("{}\n", self.title);
        for warning in &self.warnings {
            out.push_str(&format!("warning: {warning}\n"));
        }
        out.push_str(&table.to_string());
        for (summary, count) in self.flag_summaries() {
            out.push_str(&format!("\n* {count} cell{} marked: {summary}", if count == 1 { "" } else { "s" }));
        }
        out
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

/// One part of a report, in the order it is shown.
#[derive(Clone, Debug, PartialEq)]
pub enum Section {
    /// A paragraph of plain text (what was measured, on what).
    Note(String),
    /// Something the reader must know before trusting the figures (data too small,
    /// a clock too coarse), shown prominently.
    Warning(String),
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

    /// Appends a warning (see [`Section::Warning`]).
    pub fn push_warning(&mut self, text: impl Into<String>) {
        self.sections.push(Section::Warning(text.into()));
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
                Section::Warning(text) => out.push_str(&format!("warning: {text}")),
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

/// Tables shared by the report module's tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Column, Table};

    /// Two codecs on two data columns: ratio (higher better) and ms (lower
    /// better), with a tie on price's ms.
    pub(crate) fn codecs_by_column(title: &str) -> Table {
        let mut table = Table::new(
            title,
            vec![
                Column::text("column"),
                Column::text("spec"),
                Column::number("ratio", 2).higher_is_better(),
                Column::number("ms", 0).lower_is_better(),
            ],
        );
        for (col, spec, ratio, ms) in [
            ("time", "zstd:1", 3.0, 10.0),
            ("time", "pco:8", 4.0, 20.0),
            ("price", "zstd:1", 12.0, 5.0),
            ("price", "pco:8", 30.0, 5.0),
        ] {
            table.push_row(vec![col.into(), spec.into(), ratio.into(), ms.into()]);
        }
        table
    }
}

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
    fn terminal_marks_flagged_cells_and_prints_warnings() {
        let mut table = sample();
        table.flag(0, 2, Caveat::BelowTimerResolution { seconds: 1e-8, resolution: 3e-8 });
        table.flag(1, 2, Caveat::BelowTimerResolution { seconds: 2e-8, resolution: 3e-8 });
        table.warn("few rows");
        let text = table.to_terminal();
        assert!(text.contains("488.0*") && text.contains("406.5*") && !text.contains("9000.0*"), "{text}");
        assert!(text.starts_with("codecs\nwarning: few rows\n"), "{text}");
        assert!(text.ends_with("* 2 cells marked: a timing behind each is below the timer's resolution (30 ns), so it counts clock ticks, not work"), "{text}");
        let mut report = Report::new("r");
        report.push_warning("tiny data");
        assert!(report.to_terminal().contains("\nwarning: tiny data\n"));
    }

    #[test]
    #[should_panic(expected = "no cell (3, 0) to flag")]
    fn flags_outside_the_table_are_refused() {
        sample().flag(3, 0, Caveat::SmallData("x".into()));
    }

    #[test]
    #[should_panic(expected = "one cell per column")]
    fn short_rows_are_refused() {
        sample().push_row(vec!["x".into()]);
    }
}
