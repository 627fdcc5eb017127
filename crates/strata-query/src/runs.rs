//! Runs of equal keys in sorted batches, found column by column with Arrow's
//! vectorised comparisons rather than row by row: the operators that read a
//! table in its stored `(sym, time)` order (`rolling`, `window_top_k`) cut each
//! batch into its symbols' runs with these.

use std::ops::Range;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, make_array};
use arrow_schema::SortOptions;
use datafusion::arrow::array::make_comparator;
use datafusion::arrow::compute::partition;
use datafusion::common::Result;

/// The runs of equal values of `columns` (each `rows` long), in order; one run
/// of all rows when there are no columns.
///
/// A dictionary column (a symbol) is compared by its keys, and only where keys
/// change by its values (a dictionary may hold one value at two keys), so its
/// strings are compared a few times per batch rather than once per row.
pub(crate) fn runs(columns: &[ArrayRef], rows: usize) -> Result<Vec<Range<usize>>> {
    let mut starts = vec![false; rows];
    for column in columns {
        match column.as_any_dictionary_opt() {
            Some(dictionary) => {
                let values_differ = make_comparator(column.as_ref(), column.as_ref(), SortOptions::default())?;
                for start in changes(&make_array(dictionary.keys().to_data()))? {
                    starts[start] |= values_differ(start - 1, start).is_ne();
                }
            }
            None => changes(column)?.for_each(|start| starts[start] = true),
        }
    }
    let mut runs = Vec::new();
    let mut first = 0;
    for (row, _) in starts.iter().enumerate().skip(1).filter(|(_, starts)| **starts) {
        runs.push(first..row);
        first = row;
    }
    if rows > 0 {
        runs.push(first..rows);
    }
    Ok(runs)
}

/// The rows of `column` that differ from the row before.
fn changes(column: &ArrayRef) -> Result<impl Iterator<Item = usize>> {
    Ok(partition(std::slice::from_ref(column))?.ranges().into_iter().skip(1).map(|run| run.start))
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{DictionaryArray, Int32Array, Int64Array, StringArray};

    use super::*;

    /// Symbols A, A, A, B, B, A where the first A and the second are different keys.
    fn symbols() -> ArrayRef {
        let values = StringArray::from(vec!["A", "B", "A"]);
        let keys = Int32Array::from(vec![0, 0, 2, 1, 1, 2]);
        Arc::new(DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values)).unwrap())
    }

    #[test]
    fn runs_follow_values_not_dictionary_keys() {
        assert_eq!(runs(&[symbols()], 6).unwrap(), vec![0..3, 3..5, 5..6]);
        let times: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 2, 2, 2, 2]));
        assert_eq!(runs(&[symbols(), times], 6).unwrap(), vec![0..2, 2..3, 3..5, 5..6]);
        assert_eq!(runs(&[], 4).unwrap(), vec![0..4]);
        assert!(runs(&[symbols().slice(0, 0)], 0).unwrap().is_empty());
        assert!(same_key(&key_at(&[symbols()], 0), &[symbols()], 2).unwrap(), "A at two keys is one symbol");
        assert!(!same_key(&key_at(&[symbols()], 0), &[symbols()], 3).unwrap());
    }
}
