//! Column statistics, as the TAQ compression case study tabulates them: per column
//! its type, raw size, number of distinct values, number of value changes and the
//! entropy of its value distribution. They predict compressibility: few changes
//! favour run-friendly codecs, low entropy favours any entropy coder.
//!
//! ```
//! use strata_bench::column_stats::column_statistics;
//! use strata_store::{Column, ColumnType};
//! let column = Column::from_values(ColumnType::Long, vec![7i64, 7, 8, 7]).unwrap();
//! let stats = column_statistics("x", &column);
//! assert_eq!((stats.unique, stats.differ), (2, 3));
//! assert!((stats.entropy - 0.8113).abs() < 1e-4);
//! ```

use rayon::prelude::*;
use strata_store::{Column, ColumnType, Table};
use strata_taq::reference::ReferenceColumn;

use crate::report::{Cell, Column as ReportColumn, Report, Table as ReportTable};

/// The statistics of one column.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnStatistics {
    /// Column name.
    pub name: String,
    /// Column type.
    pub ty: ColumnType,
    /// Rows.
    pub rows: u64,
    /// Uncompressed bytes (for strings: the offsets plus the text).
    pub raw_bytes: u64,
    /// Distinct values.
    pub unique: u64,
    /// Rows whose value differs from the row before, the first row included (q's
    /// `sum differ x`): 1 for a constant column, `rows` when every row changes.
    pub differ: u64,
    /// Shannon entropy of the value distribution, bits per value.
    pub entropy: f64,
}

/// The statistics of `column`. Fixed-width values are compared by their bits (so
/// `-0.0` and `0.0` are distinct floats, and every NaN pattern is its own value);
/// symbols by key, strings by text.
pub fn column_statistics(name: &str, column: &Column) -> ColumnStatistics {
    let rows = column.len() as u64;
    let (unique, differ, entropy) = match column.ty() {
        ColumnType::String => {
            let values: Vec<&str> = (0..column.len()).map(|i| column.string(i)).collect();
            counts(values)
        }
        ty => match ty.width() {
            1 => counts(column.values::<u8>().to_vec()),
            2 => counts(column.values::<u16>().to_vec()),
            4 => counts(column.values::<u32>().to_vec()),
            _ => counts(column.values::<u64>().to_vec()),
        },
    };
    let raw_bytes = column.value_bytes().len() as u64 + column.offsets().map_or(0, |o| 8 * o.len() as u64);
    ColumnStatistics { name: name.to_string(), ty: column.ty(), rows, raw_bytes, unique, differ, entropy }
}

/// Distinct values, changes and entropy of a sequence, by sorting a copy.
fn counts<T: Ord + Copy>(values: Vec<T>) -> (u64, u64, f64) {
    let n = values.len();
    if n == 0 {
        return (0, 0, 0.0);
    }
    let differ = 1 + values.windows(2).filter(|w| w[0] != w[1]).count() as u64;
    let mut sorted = values;
    sorted.sort_unstable();
    let (mut unique, mut entropy, mut run) = (0u64, 0.0f64, 1usize);
    for i in 1..=n {
        if i < n && sorted[i] == sorted[i - 1] {
            run += 1;
            continue;
        }
        unique += 1;
        let p = run as f64 / n as f64;
        entropy -= p * p.log2();
        run = 1;
    }
    (unique, differ, entropy.max(0.0))
}

/// The statistics of every column of `table`, in column order (columns in parallel).
pub fn table_statistics(table: &Table) -> Vec<ColumnStatistics> {
    table.names().par_iter().zip(table.columns()).map(|(name, column)| column_statistics(name, column)).collect()
}

/// Title of the statistics table in [`statistics_report`].
pub const STATISTICS_TABLE: &str = "Column statistics";

/// A report of `stats` for table `table`, most entropic first as the case study
/// orders them. With `reference` (a real day's columns and its row count), each
/// column found there is shown beside its reference figures, as shares of the row
/// count, since the two days differ in size.
pub fn statistics_report(
    table: &str,
    stats: &[ColumnStatistics],
    reference: Option<(&[ReferenceColumn], u64)>,
) -> Report {
    let mut columns = vec![
        ReportColumn::text("column"),
        ReportColumn::text("type"),
        ReportColumn::number("rows", 0),
        ReportColumn::number("raw_bytes", 0),
        ReportColumn::number("unique", 0),
        ReportColumn::number("differ", 0),
        ReportColumn::number("entropy_bits", 1).lower_is_better(),
    ];
    if reference.is_some() {
        columns.extend([
            ReportColumn::number("unique_share", 4),
            ReportColumn::number("ref_unique_share", 4),
            ReportColumn::number("differ_share", 4),
            ReportColumn::number("ref_differ_share", 4),
            ReportColumn::number("ref_entropy_bits", 1),
        ]);
    }
    let mut out = ReportTable::new(format!("{STATISTICS_TABLE}: {table}"), columns);
    let mut ordered: Vec<&ColumnStatistics> = stats.iter().collect();
    ordered.sort_by(|a, b| b.entropy.total_cmp(&a.entropy));
    for s in ordered {
        let mut row: Vec<Cell> = vec![
            s.name.as_str().into(),
            s.ty.name().into(),
            Cell::Number(s.rows as f64),
            Cell::Number(s.raw_bytes as f64),
            Cell::Number(s.unique as f64),
            Cell::Number(s.differ as f64),
            s.entropy.into(),
        ];
        if let Some((columns, ref_rows)) = reference {
            let share = |n: u64, of: u64| Cell::Number(n as f64 / of.max(1) as f64);
            match columns.iter().find(|c| c.name == s.name) {
                Some(r) => row.extend([
                    share(s.unique, s.rows),
                    share(r.unique, ref_rows),
                    share(s.differ, s.rows),
                    share(r.differ, ref_rows),
                    r.entropy.into(),
                ]),
                None => row.extend([
                    share(s.unique, s.rows),
                    Cell::Empty,
                    share(s.differ, s.rows),
                    Cell::Empty,
                    Cell::Empty,
                ]),
            }
        }
        out.push_row(row);
    }
    let mut report = Report::new(format!("Column statistics of {table}"));
    report.push_note(
        "unique = distinct values; differ = rows that differ from the row before (the first row counts, \
         as q's `sum differ`); entropy = Shannon entropy of the value distribution in bits. \
         Shares are per row, so days of different sizes compare.",
    );
    if reference.is_some() {
        report.push_note(
            "ref_* columns: the same figures for one real day of NYSE TAQ (2022; 1.78 G quotes, 76.6 M trades) \
             that the built-in generator is calibrated to.",
        );
    }
    report.push_table(out);
    report
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn hand_made_columns_have_the_expected_counts() {
        let constant = Column::from_values(ColumnType::Char, vec![b' '; 1000]).unwrap();
        let s = column_statistics("c", &constant);
        assert_eq!((s.rows, s.raw_bytes, s.unique, s.differ, s.entropy), (1000, 1000, 1, 1, 0.0));

        let alternating = Column::from_values(ColumnType::Int, (0..1000).map(|i| i % 2).collect::<Vec<i32>>()).unwrap();
        let s = column_statistics("a", &alternating);
        assert_eq!((s.unique, s.differ, s.raw_bytes), (2, 1000, 4000));
        assert!((s.entropy - 1.0).abs() < 1e-12);

        let distinct = Column::from_values(ColumnType::Timespan, (0..1024i64).collect::<Vec<_>>()).unwrap();
        let s = column_statistics("t", &distinct);
        assert_eq!((s.unique, s.differ), (1024, 1024));
        assert!((s.entropy - 10.0).abs() < 1e-9);

        let floats = Column::from_values(ColumnType::Float, vec![0.0f64, -0.0, 1.5, 1.5]).unwrap();
        assert_eq!(column_statistics("f", &floats).unique, 3, "-0.0 is its own bit pattern");

        let strings = Column::from_strings(["ab", "ab", "c", "ab"]);
        let s = column_statistics("s", &strings);
        assert_eq!((s.unique, s.differ, s.raw_bytes), (2, 3, 7 + 8 * 5));

        let syms =
            Column::from_symbol_keys(vec![0, 0, 1, 1, 1, 1, 2, 2], Arc::new(vec!["A".into(), "B".into(), "C".into()]))
                .unwrap();
        let s = column_statistics("sym", &syms);
        assert_eq!((s.unique, s.differ), (3, 3));
        assert!((s.entropy - 1.5).abs() < 1e-12);

        let empty = Column::from_values(ColumnType::Long, Vec::<i64>::new()).unwrap();
        assert_eq!(column_statistics("e", &empty).differ, 0);
    }

    #[test]
    fn the_report_orders_by_entropy_and_shows_reference_shares() {
        let table = Table::new(vec![
            ("Exchange".into(), Column::from_values(ColumnType::Char, b"PPQQ".to_vec()).unwrap()),
            ("Time".into(), Column::from_values(ColumnType::Timespan, vec![1i64, 2, 3, 4]).unwrap()),
        ])
        .unwrap();
        let stats = table_statistics(&table);
        let reference = &strata_taq::reference::QUOTE[..];
        let report = statistics_report("quote", &stats, Some((reference, strata_taq::reference::QUOTE_ROWS)));
        let t = report.tables().next().unwrap();
        assert_eq!(t.rows[0][0], Cell::from("Time"), "highest entropy first");
        let col = t.column_index("ref_differ_share").unwrap();
        let share = t.rows[1][col].as_number().unwrap();
        assert!((share - 0.7575).abs() < 1e-3, "{share}");
        assert_eq!(t.rows[1][t.column_index("differ_share").unwrap()].as_number(), Some(0.5));
    }
}
