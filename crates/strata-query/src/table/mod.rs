//! The table provider for tables stored by Strata: a splayed table, or a table
//! spread over date partitions with a virtual `date` column.
//!
//! Every table also has hidden virtual columns, which a query can name but `*` does
//! not list (see [`StrataTable::with_hidden`]): `i`, kdb+'s row number (within its
//! date partition), and `rowid`, DuckDB's (within the table). A scan reads only the
//! projected columns and only the rows the pushed filters leave:
//! - `date` tests (`=`, `IN`, ranges) drop whole partitions;
//! - `i` tests cut a row range;
//! - `sym = x` and `sym IN (...)` on the parted column read the symbols' row ranges
//!   from the parted index;
//! - ranges on the time column, which ascends within each symbol's rows, narrow
//!   every range by binary search; ranges on a column with the sorted attribute do
//!   the same over the whole piece (plain files: the search touches a few pages);
//! - ranges on compressed columns keep only the blocks whose min/max can match.
//!
//! The first three are exact (DataFusion drops the filter); the others narrow the
//! rows and DataFusion still checks each row. A piece sorted by `(sym, time)` (the
//! parted column, then a time column ascending within each run) declares that order,
//! so sorts and as-of joins above the scan do not sort again.

mod filter;
mod part;
mod ranges;
mod read_in_order;
mod scan;

use std::collections::HashMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use arrow_array::Array;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::Result as DfResult;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use strata_store::column::ColumnFile;
use strata_store::{ColumnType, Database, Date, PartitionStatus, StoreError, TableLocation};

pub use part::{ScanCounters, ScanStats};
pub(crate) use read_in_order::ReadInOrder;

use crate::arrow_view::{SymbolDictionary, sql_field, symbol_values};
use crate::error::{Result, external};
use filter::{ColumnTest, Test, column_test, float_of, integer_bounds, integer_of, text_of};
use part::Part;
use ranges::{RowSet, SampledColumn};
use scan::{ScanColumn, ScanPiece, ScanPlan, StrataScanExec};

/// The name of the virtual partition column.
pub const DATE_COLUMN: &str = "date";
/// The name of the hidden row-number column (kdb+'s `i`), which only the table's
/// [`StrataTable::with_hidden`] view lists.
pub const ROW_NUMBER_COLUMN: &str = "i";
/// The name of the hidden table row-number column (DuckDB's `rowid`), which only
/// the table's [`StrataTable::with_hidden`] view lists.
pub const ROWID_COLUMN: &str = "rowid";
/// The hidden columns, in the order the view lists them (after the others).
pub const HIDDEN_COLUMNS: [&str; 2] = [ROW_NUMBER_COLUMN, ROWID_COLUMN];

/// A table stored by Strata, as a DataFusion table.
///
/// Opening one reads its schema and nothing per partition: the pieces are the
/// database's partition dates, and a piece's files are opened the first time a
/// query's date tests keep it (then kept open). So a query of one day costs the
/// same whether the database holds one day or ten years of them.
#[derive(Clone, Debug)]
pub struct StrataTable {
    name: String,
    db: Database,
    /// Shared with the table's view of hidden columns, so a piece is opened once for both.
    pieces: Arc<[Piece]>,
    partitioned: bool,
    stored: Vec<(String, ColumnType)>,
    /// The file the stored columns were read from: the schema record, the splayed
    /// table, or (a database from before records) the newest partition's table.
    stored_source: PathBuf,
    schema: SchemaRef,
    symbols: SymbolDictionary,
    symbol_keys: Arc<HashMap<String, u32>>,
    counters: Arc<ScanCounters>,
    /// Whether the schema lists the hidden columns (the view [`StrataTable::with_hidden`]).
    hidden: bool,
}

/// One piece of the table: a date partition (or the splayed table), opened on
/// first use. `None` once opened means the partition does not serve this table.
#[derive(Debug)]
struct Piece {
    date: Option<Date>,
    opened: OnceLock<Option<Arc<Part>>>,
}

/// One `date` test with its literals as day numbers.
#[derive(Debug)]
enum DayTest {
    /// The day is one of these.
    OneOf(Vec<i64>),
    /// The day is within these inclusive bounds (`None`: bounds that are not days,
    /// which keep nothing).
    Range(Option<(i64, i64)>),
    /// The day is not this one (`None`: a literal that is not a day).
    Not(Option<i64>),
}

impl DayTest {
    /// Whether partition `date` passes.
    fn keeps(&self, Date(day): Date) -> bool {
        let day = day as i64;
        match self {
            DayTest::OneOf(days) => days.contains(&day),
            DayTest::Range(bounds) => bounds.is_some_and(|(lo, hi)| (lo..=hi).contains(&day)),
            DayTest::Not(other) => *other != Some(day),
        }
    }
}

/// What every piece a scan reads promises.
#[derive(Debug, Default)]
struct Knowledge {
    /// The symbol column with the parted attribute in every piece.
    parted: Option<String>,
    /// Stored columns that are compressed (with block min/max) in some piece.
    compressed: Vec<String>,
    /// Columns with the sorted attribute in every piece.
    sorted: Vec<String>,
    /// The time column, when in every piece it is stored plain and ascends within
    /// each run of the parted symbol column: a range test on it is then answered
    /// exactly by binary search in each run (no filter need look at it again).
    ordered_time: Option<String>,
}

impl Knowledge {
    /// What `parts` all promise (nothing for no parts); `time` is the table's time
    /// column.
    fn of(parts: &[Arc<Part>], time: Option<&str>) -> DfResult<Knowledge> {
        let mut k = Knowledge::default();
        for (i, part) in parts.iter().enumerate() {
            let traits = part.traits().map_err(external)?;
            if i == 0 {
                k.parted = traits.parted.clone();
                k.sorted = traits.sorted.clone();
            } else {
                if k.parted != traits.parted {
                    k.parted = None;
                }
                k.sorted.retain(|c| traits.sorted.contains(c));
            }
            for c in &traits.compressed {
                if !k.compressed.contains(c) {
                    k.compressed.push(c.clone());
                }
            }
        }
        if let (Some(sym), Some(time), false) = (&k.parted, time, parts.is_empty()) {
            let mut ordered = true;
            for part in parts {
                let Some(runs) = part.parted(sym).map_err(external)? else {
                    ordered = false;
                    break;
                };
                let plain = matches!(part.column(time).map_err(external)?.file().file(), ColumnFile::Plain(_));
                if !plain || !part.ascends_within(time, &runs, &ScanCounters::default()).map_err(external)? {
                    ordered = false;
                    break;
                }
            }
            k.ordered_time = ordered.then(|| time.to_string());
        }
        Ok(k)
    }
}

impl StrataTable {
    /// The table `name` of `db`: splayed at the root, or partitioned over `dates`
    /// ([`Database::listing`], listed once for every table), with the
    /// columns of its schema record ([`Database::table_schema`]). `symbols` is the
    /// database's sym list (loaded once by the engine); `counters` collect what
    /// scans read.
    pub fn open(
        db: &Database,
        name: &str,
        dates: &[Date],
        symbols: &strata_store::SymbolDomain,
        counters: Arc<ScanCounters>,
    ) -> Result<StrataTable> {
        let splayed = db.table_dir(&TableLocation::Splayed(name.to_string()));
        let (pieces, partitioned, stored, stored_source) = if splayed.join(strata_store::COLUMN_ORDER_FILE).is_file() {
            let part = Part::open(&splayed, None, db.config().verify_plain_checksums)?;
            let stored =
                part.names().iter().map(|c| Ok((c.clone(), part.column(c)?.ty()))).collect::<Result<Vec<_>>>()?;
            counters.parts_opened.fetch_add(1, Ordering::Relaxed);
            let piece = Piece { date: None, opened: OnceLock::from(Some(Arc::new(part))) };
            (vec![piece], false, stored, splayed)
        } else {
            let Some((schema, source)) = db.table_schema_and_source(name)? else {
                return Err(crate::QueryError::Invalid(format!("{}: no table {name}", db.root().display())));
            };
            let pieces = dates.iter().map(|&d| Piece { date: Some(d), opened: OnceLock::new() }).collect();
            (pieces, true, schema.columns, source)
        };
        let mut fields = Vec::new();
        let has = |n: &str| stored.iter().any(|(c, _)| c == n);
        if partitioned && !has(DATE_COLUMN) {
            fields.push(Field::new(DATE_COLUMN, DataType::Date32, false));
        }
        fields.extend(stored.iter().map(|(n, ty)| sql_field(n, *ty)));
        let symbol_keys = symbols.iter().enumerate().map(|(k, s)| (s.clone(), k as u32)).collect();
        Ok(StrataTable {
            name: name.to_string(),
            db: db.clone(),
            pieces: pieces.into(),
            partitioned,
            stored,
            stored_source,
            schema: Arc::new(Schema::new(fields)),
            symbols: symbol_values(symbols),
            symbol_keys: Arc::new(symbol_keys),
            counters,
            hidden: false,
        })
    }

    /// The table with its hidden columns ([`HIDDEN_COLUMNS`]) as more virtual
    /// columns, last: `i`, each row's number within its date partition (kdb+'s), and
    /// `rowid`, each row's number within the whole table, read as stored (the
    /// partitions in date order, each in its stored order), from 0 (DuckDB's). A
    /// separate view because neither kdb+'s `select from t` nor DuckDB's `*` lists
    /// them: the engine plans a query over the view only where the query names one,
    /// and writes its stars out without them. A column the table stores under one
    /// of these names is that column, not hidden; `None` when it stores both.
    pub fn with_hidden(&self) -> Option<StrataTable> {
        let hidden = self.hidden_columns();
        if hidden.is_empty() {
            return None;
        }
        let mut fields: Vec<Field> = self.schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.extend(hidden.iter().map(|name| Field::new(*name, DataType::Int64, false)));
        Some(StrataTable { schema: Arc::new(Schema::new(fields)), hidden: true, ..self.clone() })
    }

    /// The hidden columns the view [`StrataTable::with_hidden`] adds: those of
    /// [`HIDDEN_COLUMNS`] the table does not list.
    pub fn hidden_columns(&self) -> Vec<&'static str> {
        HIDDEN_COLUMNS.into_iter().filter(|name| self.schema.field_with_name(name).is_err()).collect()
    }

    /// The table row number of each of `parts`' first rows (parts of this table, in
    /// table order): the rows of every piece before it, the pieces a query's date
    /// tests dropped included (opened here, as counting their rows needs).
    fn first_rows(&self, parts: &[Arc<Part>]) -> DfResult<Vec<i64>> {
        let mut firsts = Vec::with_capacity(parts.len());
        let mut before = 0i64;
        for piece in self.pieces.iter() {
            if firsts.len() == parts.len() {
                break;
            }
            let Some(part) = self.part(piece).map_err(external)? else { continue };
            if Arc::ptr_eq(&part, &parts[firsts.len()]) {
                firsts.push(before);
            }
            before += part.rows as i64;
        }
        Ok(firsts)
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn stored_type(&self, column: &str) -> Option<ColumnType> {
        self.stored.iter().find(|(n, _)| n == column).map(|(_, ty)| *ty)
    }

    fn is_virtual_date(&self, column: &str) -> bool {
        self.partitioned && column == DATE_COLUMN && self.stored_type(column).is_none()
    }

    fn is_virtual_row_number(&self, column: &str) -> bool {
        self.hidden && column == ROW_NUMBER_COLUMN && self.stored_type(column).is_none()
    }

    fn is_virtual_rowid(&self, column: &str) -> bool {
        self.hidden && column == ROWID_COLUMN && self.stored_type(column).is_none()
    }

    /// The part of `piece`, opening it on first use: `None` when its partition
    /// does not serve the table. A partition with a bad completion record is an
    /// error (its day was published whole, so skipping it would answer short of
    /// its rows), and so is one whose columns differ from the table's.
    fn part(&self, piece: &Piece) -> strata_store::Result<Option<Arc<Part>>> {
        if let Some(opened) = piece.opened.get() {
            return Ok(opened.clone());
        }
        let date = piece.date.expect("a splayed table's piece is opened with the table");
        let opened = match self.db.partition(date)? {
            None => None,
            Some(partition) => {
                if let PartitionStatus::BadRecord(why) = &partition.status {
                    return Err(StoreError::Corrupt {
                        path: partition.dir,
                        detail: format!(
                            "partition {date} cannot be served: {why} (`strata verify` reports the damage)"
                        ),
                    });
                }
                if partition.tables.contains(&self.name) {
                    Some(Arc::new(self.open_part(&partition.dir.join(&self.name), date)?))
                } else {
                    None
                }
            }
        };
        Ok(piece.opened.get_or_init(|| opened).clone())
    }

    /// Opens the table directory `dir` of partition `date`, checked against the
    /// table's columns.
    fn open_part(&self, dir: &std::path::Path, date: Date) -> strata_store::Result<Part> {
        let part = Part::open(dir, Some(date), self.db.config().verify_plain_checksums)?;
        let names: Vec<&str> = self.stored.iter().map(|(n, _)| n.as_str()).collect();
        if part.names() != names.as_slice() {
            return Err(StoreError::Invalid(format!(
                "{}: columns ({}) differ from the table's ({}, from {}); every partition of a table needs the same \
                 columns",
                dir.display(),
                part.names().join(", "),
                names.join(", "),
                self.stored_source.display()
            )));
        }
        part.expect_types(&self.stored, &self.stored_source);
        self.counters.parts_opened.fetch_add(1, Ordering::Relaxed);
        Ok(part)
    }

    /// The parts the `date` tests keep, opened, in date order.
    fn kept(&self, tests: &[ColumnTest]) -> DfResult<Vec<Arc<Part>>> {
        let mut parts = Vec::new();
        let days = self.day_tests(tests);
        for piece in self.pieces.iter().filter(|p| p.date.is_none_or(|d| days.iter().all(|t| t.keeps(d)))) {
            parts.extend(self.part(piece).map_err(external)?);
        }
        Ok(parts)
    }

    /// The i64-valued column to treat as the time within each symbol: `time` in any
    /// case, else the first timestamp or timespan column.
    fn time_column(&self) -> Option<&str> {
        let temporal = |ty: &ColumnType| matches!(ty, ColumnType::Timestamp | ColumnType::Timespan);
        self.stored
            .iter()
            .find(|(n, ty)| n.eq_ignore_ascii_case("time") && temporal(ty))
            .or_else(|| self.stored.iter().find(|(_, ty)| temporal(ty)))
            .map(|(n, _)| n.as_str())
    }

    /// How far a filter can be pushed into this table, given what the parts the
    /// query keeps promise.
    fn pushdown_of(&self, expr: &Expr, k: &Knowledge) -> DfResult<TableProviderFilterPushDown> {
        let Some(test) = column_test(expr) else { return Ok(TableProviderFilterPushDown::Unsupported) };
        let column = test.column.as_str();
        if self.is_virtual_date(column) || self.is_virtual_row_number(column) {
            let exact = match &test.test {
                Test::OneOf(values) => values.iter().all(|v| integer_of(v).is_some()),
                Test::Range(lo, hi) => integer_bounds(lo, hi).is_some(),
                Test::Not(v) => integer_of(v).is_some(),
            };
            return Ok(if exact {
                TableProviderFilterPushDown::Exact
            } else {
                TableProviderFilterPushDown::Unsupported
            });
        }
        // Exact but for the empty symbol, which is NULL and equal to nothing: its
        // rows are read and the filter above drops them.
        if k.parted.as_deref() == Some(column)
            && let Test::OneOf(values) = &test.test
            && values.iter().all(|v| text_of(v).is_some_and(|s| !s.is_empty()))
        {
            return Ok(TableProviderFilterPushDown::Exact);
        }
        if matches!(test.test, Test::Not(_)) {
            return Ok(TableProviderFilterPushDown::Unsupported);
        }
        // A range of the time column, answered by binary search in every run (see
        // `rows_of`), when its bounds are of the column's own type and unit.
        if k.ordered_time.as_deref() == Some(column)
            && let Test::Range(lo, hi) = &test.test
            && integer_bounds(lo, hi).is_some()
            && let Some(ty) = self.stored_type(column)
            && [lo, hi].iter().all(|b| match b {
                Bound::Included(v) | Bound::Excluded(v) => v.data_type() == ty.arrow_type(),
                Bound::Unbounded => true,
            })
        {
            return Ok(TableProviderFilterPushDown::Exact);
        }
        let narrows = (self.time_column() == Some(column) && k.parted.is_some())
            || k.sorted.iter().any(|c| c == column)
            || k.compressed.iter().any(|c| c == column);
        Ok(if narrows { TableProviderFilterPushDown::Inexact } else { TableProviderFilterPushDown::Unsupported })
    }

    /// At most how many rows a scan with `filters` reads, or `None` once the count
    /// passes `limit` (counting stops there, so a large database is not opened
    /// whole for the answer). It counts the rows of the dates kept, narrowed only by
    /// the exact, index-answered tests: row numbers and the symbols a `sym = / IN`
    /// test names (so an upper bound: range tests narrow further at the scan).
    pub fn rows_at_most(&self, filters: &[Expr], limit: usize) -> DfResult<Option<usize>> {
        let tests: Vec<ColumnTest> = filters.iter().filter_map(column_test).collect();
        let days = self.day_tests(&tests);
        let mut rows = 0;
        for piece in self.pieces.iter().filter(|p| p.date.is_none_or(|d| days.iter().all(|t| t.keeps(d)))) {
            let Some(part) = self.part(piece).map_err(external)? else { continue };
            let parted = part.traits().map_err(external)?.parted.clone();
            rows += self.rows_located(&part, &tests, parted.as_deref())?.len();
            if rows > limit {
                return Ok(None);
            }
        }
        Ok(Some(rows))
    }

    /// The rows of `part` left by its row-number tests and by the symbols named in
    /// tests on `parted`, its column with the parted attribute: the tests answered
    /// from the part's index alone, without reading a column.
    fn rows_located(&self, part: &Part, tests: &[ColumnTest], parted: Option<&str>) -> DfResult<RowSet> {
        let mut rows = RowSet::all(part.rows);
        let runs = match parted {
            Some(column) => part.parted(column).map_err(external)?,
            None => None,
        };
        for test in tests {
            let column = test.column.as_str();
            if self.is_virtual_row_number(column) {
                rows = rows.intersect(&integer_rows(&test.test, part.rows));
            } else if Some(column) == parted
                && let (Some(runs), Test::OneOf(values)) = (&runs, &test.test)
            {
                let wanted = values
                    .iter()
                    .filter_map(|v| text_of(v).and_then(|s| self.symbol_keys.get(s)))
                    .filter_map(|key| runs.rows_of(*key as u64))
                    .map(|(s, e)| s..e)
                    .collect();
                rows = rows.intersect(&RowSet::from_ranges(wanted));
            }
        }
        Ok(rows)
    }

    /// The rows of `part` that `tests` leave.
    fn rows_of(&self, part: &Part, tests: &[ColumnTest], k: &Knowledge) -> DfResult<RowSet> {
        let mut rows = self.rows_located(part, tests, k.parted.as_deref())?;
        let parted = match &k.parted {
            Some(column) => part.parted(column).map_err(external)?,
            None => None,
        };
        for test in tests {
            let column = test.column.as_str();
            let Some(ty) = self.stored_type(column) else { continue };
            let Some(file) = part.column(column).ok() else { continue };
            let narrowed = match file.file().file() {
                ColumnFile::Plain(_) if ty.width() == 8 && !matches!(ty, ColumnType::Float | ColumnType::String) => {
                    let Some((min, max)) = integer_range(&test.test) else { continue };
                    // i64::MIN is the null, which no comparison passes.
                    let min = min.max(i64::MIN + 1);
                    let within_runs = self.time_column() == Some(column)
                        && parted.as_ref().is_some_and(|runs| {
                            part.ascends_within(column, runs, &ScanCounters::default()).unwrap_or(false)
                        });
                    let globally = k.sorted.iter().any(|c| c == column);
                    if !(within_runs || globally) {
                        continue;
                    }
                    let values = file.file().read(0, part.rows, &ScanCounters::default()).map_err(external)?;
                    let v: &[i64] = values.typed_data();
                    let pieces: Vec<_> = if globally {
                        rows.ranges().to_vec()
                    } else {
                        let runs = parted.as_ref().expect("checked above");
                        rows.split_by(&runs.runs.iter().map(|&(_, s, e)| s..e).collect::<Vec<_>>())
                    };
                    let samples = part.samples(column, v);
                    let column = SampledColumn { values: v, samples: &samples };
                    RowSet::from_ranges(pieces.into_iter().map(|r| column.window(r, min, max)).collect())
                }
                ColumnFile::Compressed(c) => {
                    let per_block = c.rows_per_block();
                    let keep: Vec<_> = c
                        .blocks()
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| b.bounds.is_none_or(|bounds| may_match(&test.test, bounds)))
                        .map(|(i, _)| i * per_block..((i + 1) * per_block).min(part.rows))
                        .collect();
                    rows.intersect(&RowSet::from_ranges(keep))
                }
                ColumnFile::Plain(_) => continue,
            };
            rows = rows.intersect(&narrowed);
        }
        Ok(rows)
    }

    /// The `date` tests as day numbers, converted once per call rather than once
    /// per partition (a literal's conversion allocates, and a database may hold
    /// thousands of days).
    fn day_tests(&self, tests: &[ColumnTest]) -> Vec<DayTest> {
        tests
            .iter()
            .filter(|t| self.is_virtual_date(&t.column))
            .map(|t| match &t.test {
                Test::OneOf(values) => DayTest::OneOf(values.iter().filter_map(integer_of).collect()),
                Test::Range(lo, hi) => DayTest::Range(integer_bounds(lo, hi)),
                Test::Not(v) => DayTest::Not(integer_of(v)),
            })
            .collect()
    }

    /// The order every piece's rows are in: the parted symbol column (symbols in
    /// ascending text) then the time column ascending within each symbol; and
    /// whether either may hold a null (an empty symbol's run, a null time first in
    /// its run).
    fn sort_order(&self, parts: &[Arc<Part>], k: &Knowledge) -> DfResult<Option<(String, String, bool)>> {
        let (Some(sym), Some(time)) = (&k.parted, self.time_column()) else { return Ok(None) };
        let mut nulls = false;
        let names = self.symbols.values.as_any().downcast_ref::<arrow_array::StringArray>().expect("symbol dictionary");
        for part in parts {
            let Some(runs) = part.parted(sym).map_err(external)? else { return Ok(None) };
            if let Some(run) = runs.runs.iter().find(|r| r.0 >= names.len() as u64) {
                let index = strata_store::attribute::index_path(&part.dir, sym, strata_store::Attribute::Parted);
                return Err(external(strata_store::StoreError::Corrupt {
                    path: index,
                    detail: format!(
                        "symbol key {} (rows {}..{}) is outside the sym list of {} symbols: the sym file lost lines",
                        run.0,
                        run.1,
                        run.2,
                        names.len()
                    ),
                }));
            }
            let text_ascends =
                runs.runs.windows(2).all(|w| names.value(w[0].0 as usize) < names.value(w[1].0 as usize));
            if !text_ascends || !part.ascends_within(time, &runs, &ScanCounters::default()).map_err(external)? {
                return Ok(None);
            }
            let empty_symbol = self.symbols.empty_key.is_some_and(|key| runs.rows_of(key as u64).is_some());
            nulls = nulls
                || empty_symbol
                || part.null_first_within(time, &runs, &ScanCounters::default()).map_err(external)?;
        }
        Ok(Some((sym.clone(), time.to_string(), nulls)))
    }
}

/// The rows whose row number passes `test`.
fn integer_rows(test: &Test, rows: usize) -> RowSet {
    let clamp = |v: i64| v.clamp(0, rows as i64) as usize;
    match test {
        Test::OneOf(values) => RowSet::from_ranges(
            values
                .iter()
                .filter_map(integer_of)
                .filter(|v| (0..rows as i64).contains(v))
                .map(|v| v as usize..v as usize + 1)
                .collect(),
        ),
        Test::Range(lo, hi) => match integer_bounds(lo, hi) {
            Some((lo, hi)) if lo <= hi => {
                RowSet::from_ranges(std::iter::once(clamp(lo)..clamp(hi.saturating_add(1))).collect())
            }
            _ => RowSet::from_ranges(vec![]),
        },
        Test::Not(v) => match integer_of(v) {
            Some(v) => RowSet::from_ranges(vec![0..clamp(v), clamp(v.saturating_add(1))..rows]),
            None => RowSet::all(rows),
        },
    }
}

/// The inclusive integer range a test allows.
fn integer_range(test: &Test) -> Option<(i64, i64)> {
    match test {
        Test::OneOf(values) => {
            let ints = values.iter().map(integer_of).collect::<Option<Vec<_>>>()?;
            Some((*ints.iter().min()?, *ints.iter().max()?))
        }
        Test::Range(lo, hi) => integer_bounds(lo, hi),
        Test::Not(_) => None,
    }
}

/// Whether a block with `bounds` may hold a value passing `test`. Floats are only
/// judged for upper bounds and equality: Arrow orders NaN above every number and
/// block bounds leave NaN out.
fn may_match(test: &Test, bounds: strata_store::column::BlockBounds) -> bool {
    use strata_store::column::BlockBounds;
    match bounds {
        BlockBounds::Signed(min, max) => match integer_range(test) {
            Some((lo, hi)) => lo <= max && min <= hi,
            None => true,
        },
        BlockBounds::Unsigned(..) => true,
        BlockBounds::Float(min, max) => {
            if min.is_nan() {
                return true;
            }
            match test {
                Test::OneOf(values) => values.iter().any(|v| float_of(v).is_none_or(|x| min <= x && x <= max)),
                Test::Range(Bound::Unbounded, hi) => match hi {
                    Bound::Included(v) => float_of(v).is_none_or(|x| min <= x),
                    Bound::Excluded(v) => float_of(v).is_none_or(|x| min < x),
                    Bound::Unbounded => true,
                },
                Test::Range(..) | Test::Not(_) => true,
            }
        }
    }
}

#[async_trait]
impl TableProvider for StrataTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        // Judged over the parts these filters' date tests keep: a claim true of
        // them holds for the scan, whose date tests are the same or narrower.
        let tests: Vec<ColumnTest> = filters.iter().filter_map(|f| column_test(f)).collect();
        let k = Knowledge::of(&self.kept(&tests)?, self.time_column())?;
        filters.iter().map(|f| self.pushdown_of(f, &k)).collect()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let tests: Vec<ColumnTest> = filters.iter().filter_map(column_test).collect();
        let indices: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let columns: Vec<ScanColumn> = indices
            .iter()
            .map(|&i| {
                let name = self.schema.field(i).name();
                if self.is_virtual_date(name) {
                    ScanColumn::Date
                } else if self.is_virtual_row_number(name) {
                    ScanColumn::RowNumber
                } else if self.is_virtual_rowid(name) {
                    ScanColumn::TableRowNumber
                } else {
                    ScanColumn::Stored(name.clone(), self.stored_type(name).expect("a stored column"))
                }
            })
            .collect();
        let parts = self.kept(&tests)?;
        let k = Knowledge::of(&parts, self.time_column())?;
        let first_rows = if columns.iter().any(|c| matches!(c, ScanColumn::TableRowNumber)) {
            self.first_rows(&parts)?
        } else {
            vec![0; parts.len()]
        };
        let mut pieces = Vec::new();
        for (part, first_row) in parts.iter().zip(first_rows) {
            let rows = self.rows_of(part, &tests, &k)?;
            if !rows.is_empty() {
                pieces.push(ScanPiece { part: part.clone(), rows, first_row });
            }
        }
        let (order, order_may_hold_nulls) = match self.sort_order(&parts, &k)? {
            Some((sym, time, nulls)) => (Some((sym, time)), nulls),
            None => (None, false),
        };
        let projected = Arc::new(self.schema.project(&indices)?);
        let plan = ScanPlan {
            table: self.name.clone(),
            schema: projected,
            columns,
            pieces,
            symbols: self.symbols.clone(),
            counters: self.counters.clone(),
            batch_rows: state.config().batch_size(),
            limit,
            order,
            order_may_hold_nulls,
            several_dates: self.partitioned && parts.len() > 1,
            partitions: self.partitioned.then_some((parts.len(), self.pieces.len())),
        };
        Ok(Arc::new(StrataScanExec::new(plan, state.config().target_partitions())))
    }
}
