//! Small tick tables written with strata-store, and helpers to read results.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use datafusion::arrow::compute::{cast, concat_batches};
use strata_store::{Attribute, Column, ColumnType, Database, Date, Table, TableLocation, TableSpec, TableWrite};

/// A deterministic generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub const DAY: &str = "2024.01.02";
pub const DAY2: &str = "2024.01.03";

/// Quote rows: (sym, time ns, ex, bid, bsize, seq).
pub struct Quotes {
    pub sym: Vec<String>,
    pub time: Vec<i64>,
    pub ex: Vec<u8>,
    pub bid: Vec<f64>,
    pub bsize: Vec<i64>,
    pub seq: Vec<i64>,
}

/// `n` quotes over symbols S0..S{syms}, times in random order within a day (ties
/// possible), exchanges A..C.
pub fn quotes(rng: &mut Rng, n: usize, syms: u64, day: Date) -> Quotes {
    let mut q = Quotes { sym: vec![], time: vec![], ex: vec![], bid: vec![], bsize: vec![], seq: vec![] };
    for i in 0..n {
        q.sym.push(format!("S{}", rng.below(syms)));
        q.time.push(day.start_nanos() + rng.below(1_000) as i64 * 1_000_000);
        q.ex.push(b'A' + rng.below(3) as u8);
        q.bid.push(100.0 + rng.below(1000) as f64 / 100.0);
        q.bsize.push(1 + rng.below(50) as i64);
        q.seq.push(i as i64);
    }
    q
}

impl Quotes {
    pub fn table(&self) -> Table {
        Table::new(vec![
            ("sym".into(), Column::from_symbols(&self.sym)),
            ("time".into(), Column::from_values(ColumnType::Timestamp, self.time.clone()).unwrap()),
            ("ex".into(), Column::from_values(ColumnType::Char, self.ex.clone()).unwrap()),
            ("bid".into(), Column::from_values(ColumnType::Float, self.bid.clone()).unwrap()),
            ("bsize".into(), Column::from_values(ColumnType::Long, self.bsize.clone()).unwrap()),
            ("seq".into(), Column::from_values(ColumnType::Long, self.seq.clone()).unwrap()),
        ])
        .unwrap()
    }
}

/// How tables are written: sorted by sym then time with sym parted (as at end of
/// day), with `spec` compression.
pub fn sorted_write(spec: &str) -> TableWrite {
    TableWrite {
        spec: TableSpec::uniform(spec.parse().unwrap()),
        sort_by: vec!["sym".into(), "time".into()],
        attributes: vec![("sym".into(), Attribute::Parted)],
    }
}

/// Writes `table` as partition `day` of `name`.
pub fn write(root: &Path, day: &str, name: &str, table: &Table, how: &TableWrite) {
    let db = Database::open(root).unwrap();
    db.write_table(&TableLocation::Partition(day.parse().unwrap(), name.into()), table, how).unwrap();
}

/// All batches as one.
pub fn one(batches: &[RecordBatch]) -> RecordBatch {
    let schema = batches.first().expect("a batch").schema();
    concat_batches(&schema, batches).unwrap()
}

/// Column `name` as floats.
pub fn floats(batch: &RecordBatch, name: &str) -> Vec<Option<f64>> {
    let c = cast(batch.column_by_name(name).unwrap(), &DataType::Float64).unwrap();
    c.as_primitive::<Float64Type>().iter().collect()
}

/// Column `name` as integers.
pub fn ints(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let c = cast(batch.column_by_name(name).unwrap(), &DataType::Int64).unwrap();
    c.as_primitive::<Int64Type>().iter().collect()
}

/// Column `name` as text.
pub fn texts(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let c = cast(batch.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
    let s = c.as_string::<i32>();
    (0..s.len()).map(|i| s.is_valid(i).then(|| s.value(i).to_string())).collect()
}

/// Rows in the result.
pub fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

/// Rows of a join side: (sym, ex, time, value).
pub type Rows = Vec<(String, u8, i64, i64)>;

/// `n` rows over symbols S0..S{syms}, exchanges A and B, times `0..times` scaled
/// by `unit`, values the row numbers.
pub fn random_rows(rng: &mut Rng, n: usize, syms: u64, times: u64, unit: i64) -> Rows {
    (0..n)
        .map(|i| (format!("S{}", rng.below(syms)), b'A' + rng.below(2) as u8, rng.below(times) as i64 * unit, i as i64))
        .collect()
}

/// `rows` as a table (sym, ex, time, v).
pub fn rows_table(rows: &Rows) -> Table {
    Table::new(vec![
        ("sym".into(), Column::from_symbols(rows.iter().map(|r| r.0.as_str()))),
        ("ex".into(), Column::from_values(ColumnType::Char, rows.iter().map(|r| r.1).collect()).unwrap()),
        ("time".into(), Column::from_values(ColumnType::Timestamp, rows.iter().map(|r| r.2).collect()).unwrap()),
        ("v".into(), Column::from_values(ColumnType::Long, rows.iter().map(|r| r.3).collect()).unwrap()),
    ])
    .unwrap()
}

/// `rows` in the order a table written with [`sorted_write`] stores them (a
/// stable sort by sym, then time).
pub fn sorted(rows: &Rows) -> Rows {
    let mut rows = rows.clone();
    rows.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
    rows
}
