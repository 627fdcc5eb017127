//! Runs of equal keys in sorted batches, found column by column with Arrow's
//! vectorised comparisons rather than row by row: the operators that read a
//! table in its stored `(sym, time)` order (`rolling`, `window_top_k`) cut each
//! batch into its symbols' runs with these.

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::SortOptions;
use datafusion::arrow::array::make_comparator;
use datafusion::arrow::compute::partition;
use datafusion::common::Result;

/// The runs of equal values of `columns` (each `rows` long), in order; one run
/// of all rows when there are no columns.
pub(crate) fn runs(columns: &[ArrayRef], rows: usize) -> Result<Vec<Range<usize>>> {
    if columns.is_empty() {
        return Ok(std::iter::once(0..rows).collect());
    }
    Ok(partition(columns)?.ranges())
}

/// The values of `columns` at `row`, kept as one-row arrays to compare with a
/// later batch's rows.
pub(crate) fn key_at(columns: &[ArrayRef], row: usize) -> Vec<ArrayRef> {
    columns.iter().map(|column| column.slice(row, 1)).collect()
}

/// Whether row `row` of `columns` equals `key` (from [`key_at`]), nulls equal.
pub(crate) fn same_key(key: &[ArrayRef], columns: &[ArrayRef], row: usize) -> Result<bool> {
    for (key, column) in key.iter().zip(columns) {
        if make_comparator(key.as_ref(), column.as_ref(), SortOptions::default())?(0, row).is_ne() {
            return Ok(false);
        }
    }
    Ok(true)
}
