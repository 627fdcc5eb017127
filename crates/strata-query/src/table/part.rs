//! One stored piece of a table: a splayed table directory, or one date partition's
//! copy of a partitioned table. Column files are opened once and kept; the parted
//! index and the sort order are read the first time a query needs them.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arrow_buffer::{Buffer, MutableBuffer};
use strata_store::attribute::AttributeIndex;
use strata_store::column::ColumnFile;
use strata_store::column_order::check_column_order;
use strata_store::{Attribute, ColumnType, Date, Result, SplayedTable, StoreError, string_data_path};

use crate::arrow_view::StoredValues;

/// What reading has cost, summed over every scan of an engine: the evidence that
/// pushdown reads less.
#[derive(Debug, Default)]
pub struct ScanCounters {
    /// Compressed blocks read and decoded.
    pub blocks_decoded: AtomicU64,
    /// Bytes read from column files: stored bytes of decoded blocks, plus the bytes of
    /// plain values handed out (mapped pages the query touches).
    pub bytes_read: AtomicU64,
    /// Rows produced by scans, before any filter above them.
    pub rows_scanned: AtomicU64,
    /// Table pieces (date partitions or splayed tables) a scan read from.
    pub parts_scanned: AtomicU64,
    /// Table pieces opened (their `.d` and column headers read): once each, and
    /// only for the partitions a query's date tests keep.
    pub parts_opened: AtomicU64,
}

/// A copy of [`ScanCounters`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Compressed blocks decoded.
    pub blocks_decoded: u64,
    /// Bytes read from column files.
    pub bytes_read: u64,
    /// Rows produced by scans.
    pub rows_scanned: u64,
    /// Pieces of tables scanned.
    pub parts_scanned: u64,
    /// Pieces of tables opened.
    pub parts_opened: u64,
}

impl ScanCounters {
    /// The counts now.
    pub fn snapshot(&self) -> ScanStats {
        ScanStats {
            blocks_decoded: self.blocks_decoded.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            rows_scanned: self.rows_scanned.load(Ordering::Relaxed),
            parts_scanned: self.parts_scanned.load(Ordering::Relaxed),
            parts_opened: self.parts_opened.load(Ordering::Relaxed),
        }
    }
}

impl ScanStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &ScanStats) -> ScanStats {
        ScanStats {
            blocks_decoded: self.blocks_decoded - earlier.blocks_decoded,
            bytes_read: self.bytes_read - earlier.bytes_read,
            rows_scanned: self.rows_scanned - earlier.rows_scanned,
            parts_scanned: self.parts_scanned - earlier.parts_scanned,
            parts_opened: self.parts_opened - earlier.parts_opened,
        }
    }
}

/// The rows of each value of a parted column, by stored key bits.
#[derive(Debug)]
pub struct PartedRuns {
    /// `(value bits, start, end)` in row order.
    pub runs: Vec<(u64, usize, usize)>,
    by_value: HashMap<u64, (usize, usize)>,
}

impl PartedRuns {
    /// Rows holding `value`, if any.
    pub fn rows_of(&self, value: u64) -> Option<(usize, usize)> {
        self.by_value.get(&value).copied()
    }
}

/// What one piece's column headers promise, read once: which scans can narrow
/// their rows and which orders hold.
#[derive(Debug, Default)]
pub struct Traits {
    /// The first symbol column with the parted attribute.
    pub parted: Option<String>,
    /// Columns with the sorted attribute.
    pub sorted: Vec<String>,
    /// Compressed columns whose blocks carry min/max bounds.
    pub compressed: Vec<String>,
}

/// One table directory.
#[derive(Debug)]
pub struct Part {
    /// The partition's date; `None` for a splayed table.
    pub date: Option<Date>,
    /// The table directory.
    pub dir: PathBuf,
    /// Rows in every column.
    pub rows: usize,
    table: SplayedTable,
    files: Mutex<HashMap<String, Arc<OpenColumn>>>,
    parted: OnceLock<Option<Arc<PartedRuns>>>,
    sorted_within: Mutex<HashMap<String, bool>>,
    /// Samples of `i64` columns searched by position (see [`Part::samples`]).
    samples: Mutex<HashMap<String, Arc<Vec<i64>>>>,
    /// Whether plain column files are checked against their checksum when opened.
    verify_plain: bool,
    /// The table's column types (its schema), which every column opened here
    /// must have (set for every partition, see [`Part::expect_types`]).
    expected: OnceLock<Expected>,
    traits: OnceLock<Traits>,
}

/// The types a piece's columns must have, and the piece they were read from.
#[derive(Debug)]
struct Expected {
    types: Vec<(String, ColumnType)>,
    from: PathBuf,
}

/// An open column: its file, and for strings the data file.
#[derive(Debug)]
pub struct OpenColumn {
    file: ColumnFileHandle,
    data: Option<ColumnFileHandle>,
}

/// A column file with a one-block decode cache, so consecutive batches that share a
/// block decode it once.
pub struct ColumnFileHandle {
    path: PathBuf,
    file: ColumnFile,
    last_block: Mutex<Option<(usize, Arc<Vec<u8>>)>>,
}

impl std::fmt::Debug for ColumnFileHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ColumnFileHandle({})", self.path.display())
    }
}

impl ColumnFileHandle {
    /// `file`, opened from `path`'s table version, its values checked when
    /// `verify_plain` says so.
    fn new(path: PathBuf, file: ColumnFile, verify_plain: bool) -> Result<ColumnFileHandle> {
        Ok(ColumnFileHandle { path, file: file.checked(verify_plain)?, last_block: Mutex::new(None) })
    }

    /// The open file.
    pub fn file(&self) -> &ColumnFile {
        &self.file
    }

    /// Values `start..end` as raw bytes: a view of the mapping for plain files,
    /// the covering blocks decoded for compressed ones. Counts what was read.
    pub fn read(&self, start: usize, end: usize, counters: &ScanCounters) -> Result<Buffer> {
        match &self.file {
            ColumnFile::Plain(p) => {
                let values = p.values(start, end);
                counters.bytes_read.fetch_add(values.len() as u64, Ordering::Relaxed);
                Ok(values)
            }
            ColumnFile::Compressed(c) => {
                let width = c.header().ty.width();
                let per_block = c.rows_per_block();
                let mut out = Vec::with_capacity((end - start) * width);
                if start == end {
                    return Ok(Buffer::from_vec(out));
                }
                for block in start / per_block..=(end - 1) / per_block {
                    let bytes = self.block(block, counters)?;
                    let first = block * per_block;
                    let lo = start.max(first) - first;
                    let hi = end.min(first + bytes.len() / width) - first;
                    out.extend_from_slice(&bytes[lo * width..hi * width]);
                }
                Ok(Buffer::from_vec(out))
            }
        }
    }

    /// Values of `ranges` (ascending) one after another as raw bytes, copied into
    /// one buffer sized up front. A plain file's covering span is viewed once and
    /// each range copied out of it: a time window in every symbol's run is
    /// thousands of short ranges, and a view and a growing copy per range cost
    /// more than the copying. Counts the bytes of the ranges only.
    pub fn gather(&self, ranges: &[Range<usize>], counters: &ScanCounters) -> Result<Buffer> {
        let width = self.file.ty().width();
        let rows: usize = ranges.iter().map(|r| r.len()).sum();
        let mut out = MutableBuffer::with_capacity(rows * width);
        match (&self.file, ranges) {
            (_, []) => {}
            (ColumnFile::Plain(p), [first, .., last]) | (ColumnFile::Plain(p), [first @ last]) => {
                let span = p.values(first.start, last.end);
                let bytes = span.as_slice();
                for r in ranges {
                    out.extend_from_slice(&bytes[(r.start - first.start) * width..(r.end - first.start) * width]);
                }
                counters.bytes_read.fetch_add((rows * width) as u64, Ordering::Relaxed);
            }
            (ColumnFile::Compressed(_), _) => {
                for r in ranges {
                    out.extend_from_slice(self.read(r.start, r.end, counters)?.as_slice());
                }
            }
        }
        Ok(out.into())
    }

    fn block(&self, i: usize, counters: &ScanCounters) -> Result<Arc<Vec<u8>>> {
        let ColumnFile::Compressed(c) = &self.file else { unreachable!("blocks exist in compressed files only") };
        if let Some((at, bytes)) = self.last_block.lock().expect("block cache lock").as_ref()
            && *at == i
        {
            return Ok(bytes.clone());
        }
        let bytes = Arc::new(c.decode_block(i)?);
        counters.blocks_decoded.fetch_add(1, Ordering::Relaxed);
        counters.bytes_read.fetch_add(c.blocks()[i].stored_len as u64, Ordering::Relaxed);
        *self.last_block.lock().expect("block cache lock") = Some((i, bytes.clone()));
        Ok(bytes)
    }
}

impl OpenColumn {
    /// The column's file (the offsets file for strings).
    pub fn file(&self) -> &ColumnFileHandle {
        &self.file
    }

    /// The stored type.
    pub fn ty(&self) -> ColumnType {
        self.file.file.ty()
    }

    /// Whether rows `start..end` may hold kdb+ nulls: what the column file's null
    /// counts say (strings always may: an empty one is two equal offsets).
    pub fn may_hold_nulls(&self, start: usize, end: usize) -> bool {
        self.data.is_some() || self.file.file.may_hold_nulls(start, end)
    }

    /// Rows of `ranges` (ascending) one after another, in the form
    /// [`crate::arrow_view::to_array`] takes.
    pub fn gather(&self, ranges: &[Range<usize>], counters: &ScanCounters) -> Result<StoredValues> {
        if self.data.is_none() {
            return Ok(StoredValues::Fixed(self.file.gather(ranges, counters)?));
        }
        let pieces = ranges.iter().map(|r| self.read(r.start, r.end, counters)).collect::<Result<_>>()?;
        Ok(StoredValues::concat(pieces))
    }

    /// Rows `start..end` in the form [`crate::arrow_view::to_array`] takes.
    pub fn read(&self, start: usize, end: usize, counters: &ScanCounters) -> Result<StoredValues> {
        let Some(data) = &self.data else {
            return Ok(StoredValues::Fixed(self.file.read(start, end, counters)?));
        };
        let offsets = self.file.read(start, end + 1, counters)?;
        let offs: &[i64] = offsets.typed_data();
        let (first, last) = (offs[0], offs[offs.len() - 1]);
        let broken = first < 0 || last < first || last as usize > data.file.len();
        if broken || offs.windows(2).any(|w| w[0] > w[1]) {
            return Err(StoreError::Corrupt {
                path: self.file.path.clone(),
                detail: format!("string offsets of rows {start}..{end} are not ascending within the data file"),
            });
        }
        let bytes = data.read(first as usize, last as usize, counters)?;
        let rebased: Vec<i64> = offs.iter().map(|o| o - first).collect();
        Ok(StoredValues::Strings { offsets: Buffer::from_vec(rebased), data: bytes })
    }
}

impl Part {
    /// Opens the table directory `dir` (its `.d`, checked against the directory, and
    /// the row count of its first column). `verify_plain`: check plain column files
    /// against their checksum as they are opened.
    pub fn open(dir: &Path, date: Option<Date>, verify_plain: bool) -> Result<Part> {
        let table = SplayedTable::open(dir)?;
        check_column_order(&table)?;
        let part = Part {
            date,
            dir: dir.to_path_buf(),
            rows: 0,
            table,
            files: Mutex::new(HashMap::new()),
            parted: OnceLock::new(),
            sorted_within: Mutex::new(HashMap::new()),
            samples: Mutex::new(HashMap::new()),
            verify_plain,
            expected: OnceLock::new(),
            traits: OnceLock::new(),
        };
        let rows = match part.table.names().first() {
            Some(first) => {
                let column = part.column(first)?;
                let n = column.file.file.len();
                if column.ty() == ColumnType::String { n.saturating_sub(1) } else { n }
            }
            None => 0,
        };
        Ok(Part { rows, ..part })
    }

    /// Makes every column opened from now on check its stored type against
    /// `types` (the table's, read from `from`): a partition written with
    /// other types (an int column where the table has long) is an error naming the
    /// partition, the column and both types, never a read of the wrong width.
    pub fn expect_types(&self, types: &[(String, ColumnType)], from: &Path) {
        let _ = self.expected.set(Expected { types: types.to_vec(), from: from.to_path_buf() });
    }

    /// Refuses column `name` stored as `ty` when the table has another type.
    fn check_type(&self, name: &str, ty: ColumnType) -> Result<()> {
        match self.expected.get() {
            Some(expected) => match expected.types.iter().find(|(n, _)| n == name) {
                Some((_, wanted)) if *wanted != ty => Err(StoreError::Invalid(format!(
                    "{}: column {name} is stored as {ty} here but as {wanted} in {}: every partition of a table \
                     must store the same types (rewrite this one, e.g. strata import --mode replace --cast)",
                    self.dir.display(),
                    expected.from.display()
                ))),
                _ => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// Column names in stored order.
    pub fn names(&self) -> &[String] {
        self.table.names()
    }

    /// The open column `name` (opened on first use, then kept).
    pub fn column(&self, name: &str) -> Result<Arc<OpenColumn>> {
        if let Some(open) = self.files.lock().expect("file cache lock").get(name) {
            self.check_type(name, open.ty())?;
            return Ok(open.clone());
        }
        // Through the table's snapshot: every column of this part comes from the
        // version it was opened on, whatever a writer renames meanwhile.
        let path = self.table.column_path(name)?;
        let file = ColumnFileHandle::new(path.clone(), self.table.column_file(name)?, self.verify_plain)?;
        self.check_type(name, file.file.ty())?;
        let data = if file.file.ty() == ColumnType::String {
            let data = self.table.string_data_file(name)?;
            Some(ColumnFileHandle::new(string_data_path(&path), data, self.verify_plain)?)
        } else {
            None
        };
        let expected = if data.is_some() { self.rows + 1 } else { self.rows };
        let have = file.file.len();
        if self.rows > 0 && have != expected {
            return Err(StoreError::Corrupt {
                path,
                detail: format!("{have} values where the table's first column implies {expected}"),
            });
        }
        let open = Arc::new(OpenColumn { file, data });
        self.files.lock().expect("file cache lock").insert(name.to_string(), open.clone());
        Ok(open)
    }

    /// What the column headers promise, read once. Every column's header is read
    /// (and its type checked against the table's), but a column not already open is
    /// not kept open: a query over years of partitions maps only the columns it
    /// reads, not every column of every day (Linux allows 65,530 mappings per
    /// process; 2,500 days of a 23-column table would take 57,500).
    pub fn traits(&self) -> Result<&Traits> {
        if let Some(traits) = self.traits.get() {
            return Ok(traits);
        }
        let mut traits = Traits::default();
        for name in self.names() {
            let kept = self.files.lock().expect("file cache lock").get(name).map(|open| header_view(&open.file.file));
            let (ty, attribute, compressed) = match kept {
                Some(view) => view,
                // The header only: values are checked when the column is read.
                None => header_view(&self.table.column_file(name)?),
            };
            self.check_type(name, ty)?;
            match attribute {
                Attribute::Parted if ty == ColumnType::Symbol && traits.parted.is_none() => {
                    traits.parted = Some(name.clone());
                }
                Attribute::Sorted => traits.sorted.push(name.clone()),
                _ => {}
            }
            if compressed && ty.has_block_bounds() {
                traits.compressed.push(name.clone());
            }
        }
        Ok(self.traits.get_or_init(|| traits))
    }

    /// The per-value row ranges of the column with the parted attribute, if there is
    /// one (read once).
    pub fn parted(&self, column: &str) -> Result<Option<Arc<PartedRuns>>> {
        if let Some(runs) = self.parted.get() {
            return Ok(runs.clone());
        }
        let open = self.column(column)?;
        let runs = if open.file.file.attribute() == Attribute::Parted {
            match self.table.attribute_index(column, Attribute::Parted)? {
                AttributeIndex::Parted(runs) => {
                    let runs: Vec<(u64, usize, usize)> =
                        runs.iter().map(|r| (r.value, r.start as usize, r.end as usize)).collect();
                    let by_value = runs.iter().map(|&(v, s, e)| (v, (s, e))).collect();
                    Some(Arc::new(PartedRuns { runs, by_value }))
                }
                AttributeIndex::Grouped(_) => None,
            }
        } else {
            None
        };
        Ok(self.parted.get_or_init(|| runs).clone())
    }

    /// Whether the `i64`-valued column `column`, ascending within every run of
    /// `runs`, holds a null (`i64::MIN`, which would come first in its run). Reads
    /// nothing when the file's null counts say there is none.
    pub fn null_first_within(&self, column: &str, runs: &PartedRuns, counters: &ScanCounters) -> Result<bool> {
        let open = self.column(column)?;
        if !open.may_hold_nulls(0, self.rows) {
            return Ok(false);
        }
        for &(_, start, end) in &runs.runs {
            if start < end && open.file.read(start, start + 1, counters)?.typed_data::<i64>()[0] == i64::MIN {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The samples of column `column`, whose values are `values`, for binary
    /// searches ([`SampledColumn`](super::ranges::SampledColumn)): taken on the first
    /// search, then kept (1/64 of the column).
    pub fn samples(&self, column: &str, values: &[i64]) -> Arc<Vec<i64>> {
        let mut samples = self.samples.lock().expect("samples cache lock");
        let kept =
            samples.entry(column.to_string()).or_insert_with(|| Arc::new(super::ranges::SampledColumn::sample(values)));
        kept.clone()
    }

    /// Whether the `i64`-valued column `column` ascends within every run of `runs`
    /// (checked once by reading the column, then remembered).
    pub fn ascends_within(&self, column: &str, runs: &PartedRuns, counters: &ScanCounters) -> Result<bool> {
        if let Some(known) = self.sorted_within.lock().expect("order cache lock").get(column) {
            return Ok(*known);
        }
        let open = self.column(column)?;
        let values = open.file.read(0, self.rows, counters)?;
        let v: &[i64] = values.typed_data();
        let ascends = runs.runs.iter().all(|&(_, s, e)| v[s..e].windows(2).all(|w| w[0] <= w[1]));
        self.sorted_within.lock().expect("order cache lock").insert(column.to_string(), ascends);
        Ok(ascends)
    }
}

/// What a column file's header says that [`Traits`] need: its type, its attribute,
/// and whether it is compressed.
fn header_view(file: &ColumnFile) -> (ColumnType, Attribute, bool) {
    (file.ty(), file.attribute(), matches!(file, ColumnFile::Compressed(_)))
}
