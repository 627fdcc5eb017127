//! A result as a boxed table for a terminal. Like DuckDB's shell, a long result
//! shows its first and last rows around a `…` row, with a line saying how many rows
//! there were: printing five million rows to a terminal helps no one, and formatting
//! them all took seconds and gigabytes.

use std::io::Write;

use arrow_array::RecordBatch;
use comfy_table::{Cell, ContentLineStyle, LineStyle, Table, TableStyle};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use super::plain_text;
use crate::error::{QueryError, Result};

/// Rows a table shows unless told otherwise: DuckDB's shell default.
pub const DEFAULT_TABLE_ROWS: usize = 40;

/// The ASCII box of arrow's pretty printer, which results were always shown in.
const ASCII_BOX: TableStyle = TableStyle::new()
    .top_border(LineStyle::new('+', '-', '+', '+'))
    .header_lines(ContentLineStyle::new('|', '|', '|'))
    .header_separator(LineStyle::new('+', '-', '+', '+'))
    .content_lines(ContentLineStyle::new('|', '|', '|'))
    .bottom_border(LineStyle::new('+', '-', '+', '+'));

/// Writes `batches` to `out` as a table of at most `max_rows` rows (0: all of them):
/// the first half and the last half when there are more, then `N rows (M shown)`.
pub fn write_table(batches: &[RecordBatch], max_rows: usize, out: &mut dyn Write) -> Result<()> {
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let (head, tail) = match max_rows {
        0 => (total, 0),
        limit if total <= limit => (total, 0),
        limit => (limit.div_ceil(2), limit / 2),
    };
    let shown_head = row_range(batches, 0, head);
    let shown_tail = row_range(batches, total - tail, total);
    let (_, shown_head) = plain_text(&shown_head, false)?;
    let (_, shown_tail) = plain_text(&shown_tail, false)?;
    let fail = |e: &dyn std::fmt::Display| QueryError::Invalid(format!("cannot write results: {e}"));

    let mut table = Table::new();
    table.load_style(ASCII_BOX);
    if let Some(first) = batches.first() {
        table.set_header(first.schema().fields().iter().map(|f| Cell::new(f.name())));
    }
    add_rows(&mut table, &shown_head).map_err(|e| fail(&e))?;
    if tail > 0 {
        let columns = table.column_count();
        table.add_row(vec![Cell::new("…"); columns]);
    }
    add_rows(&mut table, &shown_tail).map_err(|e| fail(&e))?;
    writeln!(out, "{table}").map_err(QueryError::Output)?;
    if head + tail < total {
        writeln!(out, "{total} rows ({} shown)", head + tail).map_err(QueryError::Output)?;
    }
    Ok(())
}

/// Rows `start..end` of the concatenation of `batches`, as slices of them.
fn row_range(batches: &[RecordBatch], start: usize, end: usize) -> Vec<RecordBatch> {
    let mut slices = Vec::new();
    let mut offset = 0;
    for batch in batches {
        let (from, to) = (start.max(offset), end.min(offset + batch.num_rows()));
        if from < to {
            slices.push(batch.slice(from - offset, to - from));
        }
        offset += batch.num_rows();
    }
    slices
}

/// Appends every row of `batches` to `table`, one cell per column.
fn add_rows(
    table: &mut Table,
    batches: &[RecordBatch],
) -> std::result::Result<(), datafusion::arrow::error::ArrowError> {
    let options = FormatOptions::default().with_display_error(true);
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c, &options))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            table.add_row(formatters.iter().map(|f| Cell::new(f.value(row))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array};

    use super::*;

    fn numbered(ranges: &[std::ops::Range<i64>]) -> Vec<RecordBatch> {
        ranges
            .iter()
            .map(|r| {
                let n: ArrayRef = Arc::new(Int64Array::from_iter_values(r.clone()));
                RecordBatch::try_from_iter([("n", n)]).unwrap()
            })
            .collect()
    }

    fn shown(batches: &[RecordBatch], max_rows: usize) -> String {
        let mut text = Vec::new();
        write_table(batches, max_rows, &mut text).unwrap();
        String::from_utf8(text).unwrap()
    }

    fn cells(text: &str) -> Vec<String> {
        text.lines().filter(|l| l.starts_with('|')).skip(1).map(|l| l.trim_matches(['|', ' ']).to_string()).collect()
    }

    #[test]
    fn long_results_show_their_first_and_last_rows_across_batches() {
        let batches = numbered(&[0..3, 3..4, 4..10]);
        let text = shown(&batches, 5);
        assert_eq!(cells(&text), ["0", "1", "2", "…", "8", "9"]);
        assert!(text.ends_with("10 rows (5 shown)\n"), "{text}");
    }

    #[test]
    fn short_results_and_no_limit_show_every_row_without_a_count() {
        let batches = numbered(&[0..2, 2..4]);
        for max_rows in [0, 4, 40] {
            let text = shown(&batches, max_rows);
            assert_eq!(cells(&text), ["0", "1", "2", "3"]);
            assert!(!text.contains("shown"), "{text}");
        }
    }
}
