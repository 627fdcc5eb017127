//! Checking everything a database holds on disk against its own checksums and
//! against the other files it must agree with, `strata verify`'s logic.
//!
//! Unlike a reader, which stops at the first fault, [`verify_database`] goes on and
//! returns every [`Finding`]: what is wrong, in which file and where in it (block,
//! byte range, line), and whether it can be rebuilt from what is intact (an attribute
//! index from its column, a `.d` from the column files) or only restored from a copy
//! (a column's values, the sym file). Checked:
//! - the sym file against its record (`sym.crc`);
//! - per table: `.d` against the directory ([`crate::column_order`]), every column
//!   file (plain: header, length against the count, values checksum; compressed:
//!   header, trailer, index, every block's checksum and decode), row counts across
//!   columns, string offsets against their data file, symbol keys against the sym
//!   list, and `col.parted` / `col.grouped` (checksum, and equal to the index the
//!   column's values give);
//! - per partition: its completion record, through [`verify_partition_record`], and
//!   each served table's columns and types against the table's schema record
//!   ([`crate::schema`]), through [`verify_table_schemas`].

use std::fmt;
use std::fs;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::append::stored_schema;
use crate::attribute::{AttributeIndex, check_attribute, index_path, read_index};
use crate::column::{ColumnFile, TRAILER_MAGIC};
use crate::column_data::Column;
use crate::column_order::{OrderProblem, column_order_problems};
use crate::database::Database;
use crate::date::Date;
use crate::error::{Result, StoreError};
use crate::partition::PartitionStatus;
use crate::progress::{NoProgress, Progress, Unit};
use crate::schema::{SchemaMismatch, TableSchema};
use crate::splayed::{COLUMN_ORDER_FILE, SplayedTable, string_data_path};
use crate::sym::RecordStatus;
use crate::table::is_valid_name;
use crate::types::{Attribute, ColumnType};

/// What to verify: the whole database, one partition, one table, or one table in
/// one partition. The sym file is always verified (every symbol column needs it).
#[derive(Clone, Debug, Default)]
pub struct VerifyScope {
    /// Only this date partition (and no splayed tables).
    pub partition: Option<Date>,
    /// Only tables of this name.
    pub table: Option<String>,
}

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Data is wrong, missing or unreadable.
    Damaged,
    /// Worth knowing, harmless to readers (a torn append's leftover bytes, a sym file
    /// from before records).
    Note,
}

/// Where in a file a finding lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// The file as a whole (missing, unreadable header, wrong length).
    File,
    /// A byte range of the file.
    Bytes(Range<u64>),
    /// A compressed block: its number and its stored bytes in the file.
    Block {
        /// Block number.
        index: usize,
        /// The block's stored bytes.
        bytes: Range<u64>,
    },
    /// A row of a column (0-based).
    Row(u64),
}

/// What can be done about a finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// Nothing needs doing.
    NotNeeded,
    /// The file can be rebuilt from intact data; the text says from what.
    Rebuild(String),
    /// The data exists nowhere else in the database: restore it from a copy or
    /// its source; the text says what is affected.
    Restore(String),
}

/// One thing found wrong (or worth noting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// How serious.
    pub severity: Severity,
    /// The file (or directory) at fault.
    pub path: PathBuf,
    /// Where in it.
    pub place: Place,
    /// What was found and what was expected.
    pub problem: String,
    /// What can be done.
    pub repair: Repair,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Damaged => "damaged",
            Severity::Note => "note",
        };
        write!(f, "{severity}: {}", self.path.display())?;
        match &self.place {
            Place::File => {}
            Place::Bytes(r) => write!(f, ": bytes {}..{}", r.start, r.end)?,
            Place::Block { index, bytes } => write!(f, ": block {index} (bytes {}..{})", bytes.start, bytes.end)?,
            Place::Row(row) => write!(f, ": row {row}")?,
        }
        write!(f, ": {}", self.problem)?;
        match &self.repair {
            Repair::NotNeeded => Ok(()),
            Repair::Rebuild(how) => write!(f, "\n  can be rebuilt: {how}"),
            Repair::Restore(what) => write!(f, "\n  cannot be rebuilt: {what}"),
        }
    }
}

/// Everything a verification found, and how much it read.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Findings in the order they were made (sym file, then table by table).
    pub findings: Vec<Finding>,
    /// Files checked.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Table directories checked.
    pub tables: usize,
    /// Date partitions checked.
    pub partitions: usize,
}

impl VerifyReport {
    /// Findings of [`Severity::Damaged`].
    pub fn damaged(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Damaged).count()
    }

    /// Whether nothing is damaged.
    pub fn is_intact(&self) -> bool {
        self.damaged() == 0
    }

    fn add(&mut self, severity: Severity, path: &Path, place: Place, problem: impl Into<String>, repair: Repair) {
        self.findings.push(Finding { severity, path: path.to_path_buf(), place, problem: problem.into(), repair });
    }

    fn damaged_file(&mut self, path: &Path, error: &StoreError, repair: Repair) {
        self.add(Severity::Damaged, path, Place::File, detail_of(error), repair);
    }

    /// Counts `path` as read, when it exists.
    fn counted(&mut self, path: &Path) {
        if let Ok(meta) = fs::metadata(path) {
            self.files += 1;
            self.bytes += meta.len();
        }
    }

    fn merge(&mut self, other: VerifyReport) {
        self.findings.extend(other.findings);
        self.files += other.files;
        self.bytes += other.bytes;
        self.tables += other.tables;
    }
}

/// An error's message without the path a finding already names.
fn detail_of(error: &StoreError) -> String {
    match error {
        StoreError::Corrupt { detail, .. } => detail.clone(),
        StoreError::Io { source, .. } => source.to_string(),
        StoreError::Checksum { stored, computed, .. } => {
            format!("checksum {computed:#010x} where the index records {stored:#010x}")
        }
        StoreError::Codec { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

const RESTORE_COLUMN: &str = "the column's values are stored only here: restore the table from a copy or re-import it";

/// Verifies the database `db` within `scope`. Fails only when the database itself
/// cannot be listed, or the scope names a partition or table it does not have;
/// everything found in files is a [`Finding`] in the report.
pub fn verify_database(db: &Database, scope: &VerifyScope) -> Result<VerifyReport> {
    verify_database_with_progress(db, scope, &NoProgress)
}

/// [`verify_database`], telling `progress` one step in [`Unit::Bytes`] of the
/// table directories' files, advanced as their columns are checked.
pub fn verify_database_with_progress(
    db: &Database,
    scope: &VerifyScope,
    progress: &dyn Progress,
) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let symbols = verify_sym(db, &mut report);
    let mut tables: Vec<PathBuf> = Vec::new();
    let dates = match scope.partition {
        Some(date) if db.partition(date)?.is_none() => {
            return Err(StoreError::Invalid(format!("{}: no partition {date}", db.root().display())));
        }
        Some(date) => vec![date],
        None => {
            // Splayed tables, including a directory whose `.d` is lost (readers no
            // longer see it as a table), but not the segments of a `par.txt`.
            let splayed = table_dirs(db.root())?;
            tables.extend(splayed.into_iter().filter(|dir| !db.segments().contains(dir)));
            db.survey()?.partitions.iter().map(|p| p.date).collect()
        }
    };
    for &date in &dates {
        verify_partition_record(db, date, &mut report);
        verify_table_schemas(db, date, scope.table.as_deref(), &mut report);
        tables.extend(table_dirs(&db.partition_dir(date))?);
    }
    report.partitions = dates.len();
    if let Some(name) = &scope.table {
        tables.retain(|dir| dir.file_name().is_some_and(|n| n == name.as_str()));
        if tables.is_empty() {
            return Err(StoreError::Invalid(format!("{}: no table {name} in the scope given", db.root().display())));
        }
    }
    let sizes: Vec<u64> = tables.iter().map(|dir| files_bytes(dir)).collect();
    let name = db.root().file_name().unwrap_or(db.root().as_os_str()).to_string_lossy();
    progress.start(&format!("verifying {name}"), sizes.iter().sum(), Unit::Bytes);
    let per_table: Vec<VerifyReport> = tables
        .par_iter()
        .zip(&sizes)
        .map(|(dir, &bytes)| {
            let mut share = TableShare { progress, left: bytes };
            let report = verify_table(dir, symbols, &mut share);
            share.done();
            report
        })
        .collect();
    progress.finish();
    per_table.into_iter().for_each(|r| report.merge(r));
    Ok(report)
}

/// Bytes of the files in directory `dir` (a table's share of the verify step;
/// what cannot be listed counts nothing, and is reported by the table's checks).
fn files_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
}

/// One table's share of the verify step: advanced by the bytes its checks read,
/// never past the table's files' size at the start, which it reaches when the
/// table is done (files that could not be read count as checked).
struct TableShare<'a> {
    progress: &'a dyn Progress,
    left: u64,
}

impl TableShare<'_> {
    fn advance(&mut self, bytes: u64) {
        let bytes = bytes.min(self.left);
        if bytes > 0 {
            self.left -= bytes;
            self.progress.advance(bytes);
        }
    }

    fn done(mut self) {
        self.advance(self.left);
    }
}

/// Checks partition `date`'s completion record (`.partition`, see
/// [`crate::partition`]): a bad record means nothing of the day is served; a row
/// count that differs from the record, or a table on disk the record does not
/// list, is reported; a partition from before records is a note.
fn verify_partition_record(db: &Database, date: Date, report: &mut VerifyReport) {
    let dir = db.partition_dir(date);
    let record_path = dir.join(crate::partition::PARTITION_RECORD);
    let partition = match db.partition(date) {
        Ok(Some(partition)) => partition,
        Ok(None) => return,
        Err(e) => return report.damaged_file(&dir, &e, Repair::Restore(format!("partition {date}"))),
    };
    report.counted(&record_path);
    match &partition.status {
        PartitionStatus::NoRecord => report.add(
            Severity::Note,
            &record_path,
            Place::File,
            "no completion record (written before records existed): served as it is, not known to be whole",
            Repair::NotNeeded,
        ),
        PartitionStatus::BadRecord(why) => report.add(
            Severity::Damaged,
            &record_path,
            Place::File,
            format!("{why}: nothing of partition {date} is served"),
            Repair::Restore(format!("partition {date}: rewrite the day (strata eod from its journal) or restore it")),
        ),
        PartitionStatus::Complete(record) => {
            for (table, recorded) in &record.tables {
                let rows = SplayedTable::open(&dir.join(table))
                    .and_then(|t| t.stats())
                    .map(|stats| stats.first().map_or(0, |c| c.rows));
                if let Ok(rows) = rows
                    && rows != *recorded
                {
                    report.add(
                        Severity::Damaged,
                        &dir.join(table),
                        Place::File,
                        format!("{rows} rows, but the completion record says {recorded}"),
                        Repair::Restore(format!("table {table} of {date}")),
                    );
                }
            }
        }
    }
    for table in &partition.unlisted {
        report.add(
            Severity::Note,
            &dir.join(table),
            Place::File,
            "a table directory the completion record does not list (a write that died before it was recorded): not served",
            Repair::NotNeeded,
        );
    }
}

/// Checks each table partition `date` serves (only `only`, if given) against the
/// table's schema record: a partition whose columns or types differ (written before
/// tables had one schema) makes queries on the table fail. A damaged record is
/// reported on the record. Tables without a record are not checked.
fn verify_table_schemas(db: &Database, date: Date, only: Option<&str>, report: &mut VerifyReport) {
    let Ok(Some(partition)) = db.partition(date) else { return };
    for table in partition.tables.iter().filter(|t| only.is_none_or(|o| o == t.as_str())) {
        let record = TableSchema::path(db.root(), table);
        let schema = match TableSchema::read(db.root(), table) {
            Ok(Some(schema)) => schema,
            Ok(None) => continue,
            Err(e) => {
                let repair = Repair::Rebuild(format!("remove it: the next write of {table} records it again"));
                report.damaged_file(&record, &e, repair);
                continue;
            }
        };
        // A table whose `.d` or files cannot be trusted is reported by the table's
        // own checks.
        let dir = partition.dir.join(table);
        let sound = SplayedTable::open(&dir).and_then(|t| crate::column_order::check_column_order(&t)).is_ok();
        let Ok(stored) = stored_schema(table, &dir) else { continue };
        if !sound {
            continue;
        }
        let problem = match schema.mismatch(&stored.columns) {
            None => continue,
            Some(SchemaMismatch::Type { column, stored, offered }) => {
                format!("column {column} is stored as {offered} here but as {stored} in the table's schema")
            }
            Some(SchemaMismatch::Missing { column, stored }) => {
                format!("column {column} ({stored}) of the table's schema is missing here")
            }
            Some(SchemaMismatch::Extra { column, offered, .. }) => {
                format!("column {column} ({offered}) is not in the table's schema")
            }
            Some(SchemaMismatch::Order { offered, stored }) => {
                format!("columns are in the order {offered}, the table's schema {stored}")
            }
        };
        report.add(
            Severity::Damaged,
            &partition.dir.join(table),
            Place::File,
            format!("{problem} ({}): queries on table {table} fail", record.display()),
            Repair::Rebuild(format!(
                "from its own rows: export it and import it again with --mode replace --cast (partition {date})"
            )),
        );
    }
}

/// The table directories of a partition or the root: every visible subdirectory
/// named like a table, whether or not its `.d` survived.
fn table_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut tables = Vec::new();
    for entry in fs::read_dir(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })? {
        let entry = entry.map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_valid_name(&name) && entry.path().is_dir() {
            tables.push(entry.path());
        }
    }
    tables.sort();
    Ok(tables)
}

/// Checks the sym file against its record; the number of symbols when it is sound.
fn verify_sym(db: &Database, report: &mut VerifyReport) -> Option<usize> {
    let sym = db.sym();
    report.counted(sym.path());
    let check = match sym.check() {
        Ok(check) => check,
        Err(e) => {
            let at = match &e {
                StoreError::Corrupt { path, .. } | StoreError::Io { path, .. } => path.clone(),
                _ => sym.path().to_path_buf(),
            };
            let restore = format!(
                "every symbol column stores keys into this file: restore {} from a copy (if the file is known \
                 good and only its record is damaged, delete {} and the next write records it again)",
                sym.path().display(),
                sym.record_path().display()
            );
            report.damaged_file(&at, &e, Repair::Restore(restore));
            return None;
        }
    };
    match check.status {
        RecordStatus::Missing if check.file_bytes > 0 => report.add(
            Severity::Note,
            &sym.record_path(),
            Place::File,
            "no record: the sym file predates records, so damage to it cannot be told; the next table write \
             records it",
            Repair::NotNeeded,
        ),
        RecordStatus::Behind { record } => report.add(
            Severity::Note,
            sym.path(),
            Place::Bytes(record..check.complete_bytes),
            "symbols appended by a writer that stopped before recording them; kept, and recorded by the next write",
            Repair::NotNeeded,
        ),
        _ => {}
    }
    if check.file_bytes > check.complete_bytes {
        report.add(
            Severity::Note,
            sym.path(),
            Place::Bytes(check.complete_bytes..check.file_bytes),
            "a line without its newline: the tail of an interrupted append, ignored by readers",
            Repair::NotNeeded,
        );
    }
    report.counted(&sym.record_path());
    Some(check.symbols.len())
}

/// One column file checked: its type, attribute and values (when it could be read
/// whole).
struct CheckedColumn {
    ty: ColumnType,
    attribute: Attribute,
    rows: u64,
    values: Option<arrow_buffer::Buffer>,
}

/// Checks one table directory. `symbols`: how many symbols the sym file holds, when
/// it is sound; `share` hears the bytes of each column checked.
fn verify_table(dir: &Path, symbols: Option<usize>, share: &mut TableShare<'_>) -> VerifyReport {
    let mut report = VerifyReport { tables: 1, ..Default::default() };
    let order = dir.join(COLUMN_ORDER_FILE);
    let listed = match SplayedTable::open(dir) {
        Ok(table) => {
            report.counted(&order);
            Some(table.names().to_vec())
        }
        Err(e) => {
            let rebuild = "write .d listing the table's column files, one name a line, in column order";
            report.damaged_file(&order, &e, Repair::Rebuild(rebuild.into()));
            None
        }
    };
    let problems = match column_order_problems(dir, listed.as_deref().unwrap_or_default()) {
        Ok(problems) => problems,
        Err(e) => {
            report.damaged_file(dir, &e, Repair::Restore("the table directory cannot be listed".into()));
            return report;
        }
    };
    // Every column file is checked, listed or not.
    let mut columns: Vec<String> = listed.clone().unwrap_or_default();
    for problem in problems {
        let repair = match &problem {
            OrderProblem::Missing { column } => {
                columns.retain(|c| c != column);
                Repair::Restore(format!("column {column}'s file is gone; {RESTORE_COLUMN}"))
            }
            OrderProblem::Unlisted { column } => {
                columns.push(column.clone());
                Repair::Rebuild(format!("add {column} to .d (where it stood in the column order is not recorded)"))
            }
            OrderProblem::Empty => Repair::Rebuild("list the column files in .d, in column order".into()),
            OrderProblem::Duplicate { .. } => Repair::Rebuild("remove the repeated line from .d".into()),
        };
        // Without a readable .d, that one finding says it all.
        if listed.is_some() {
            report.add(Severity::Damaged, &order, Place::File, problem.to_string(), repair);
        }
    }
    let mut seen = std::collections::HashSet::new();
    columns.retain(|c| seen.insert(c.clone()));
    let mut expected_rows: Option<(String, u64)> = None;
    for name in &columns {
        let path = dir.join(name);
        let read_before = report.bytes;
        let Some(column) = verify_column_file(&path, &mut report, needs_values) else { continue };
        let rows = if column.ty == ColumnType::String { column.rows.saturating_sub(1) } else { column.rows };
        match &expected_rows {
            None => expected_rows = Some((name.clone(), rows)),
            Some((first, n)) if *n != rows => report.add(
                Severity::Damaged,
                &path,
                Place::File,
                format!("{rows} rows where column {first} has {n}"),
                Repair::Restore(RESTORE_COLUMN.into()),
            ),
            Some(_) => {}
        }
        verify_values(&path, &column, symbols, &mut report);
        verify_attribute_index(dir, name, &column, &mut report);
        share.advance(report.bytes - read_before);
    }
    report
}

/// Whether a column's values are needed after its own checks: symbol keys (checked
/// against the sym list), string offsets (against the data file), columns with an
/// index (compared with it).
fn needs_values(ty: ColumnType, attribute: Attribute) -> bool {
    matches!(ty, ColumnType::Symbol | ColumnType::String) || matches!(attribute, Attribute::Parted | Attribute::Grouped)
}

/// Checks one column file of either kind; `None` when it cannot be opened.
fn verify_column_file(
    path: &Path,
    report: &mut VerifyReport,
    wanted: fn(ColumnType, Attribute) -> bool,
) -> Option<CheckedColumn> {
    report.counted(path);
    let file = match ColumnFile::open(path) {
        Ok(file) => file,
        Err(e) => {
            report.damaged_file(path, &e, Repair::Restore(RESTORE_COLUMN.into()));
            return None;
        }
    };
    let (ty, attribute, rows) = (file.ty(), file.attribute(), file.len() as u64);
    let file_len = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let values = match &file {
        ColumnFile::Plain(plain) => {
            let end = plain.values_range().end;
            if file_len > end {
                report.add(
                    Severity::Note,
                    path,
                    Place::Bytes(end..file_len),
                    "bytes past the last value: the tail of an interrupted append, ignored by readers and \
                     dropped by the next append",
                    Repair::NotNeeded,
                );
            }
            match plain.verify() {
                Ok(()) => {
                    let values = plain.values(0, rows as usize);
                    check_null_count(
                        path,
                        ty,
                        plain.header().nulls,
                        &values,
                        Place::Bytes(plain.values_range()),
                        report,
                    );
                    Some(values)
                }
                Err(e) => {
                    report.add(
                        Severity::Damaged,
                        path,
                        Place::Bytes(plain.values_range()),
                        detail_of(&e),
                        Repair::Restore(RESTORE_COLUMN.into()),
                    );
                    None
                }
            }
        }
        ColumnFile::Compressed(compressed) => {
            verify_compressed_tail(path, file_len, compressed.stored_bytes(), report);
            let keep = wanted(ty, attribute);
            let mut values = Vec::with_capacity(if keep { rows as usize * ty.width() } else { 0 });
            let mut intact = true;
            for (i, entry) in compressed.blocks().iter().enumerate() {
                let place = || Place::Block { index: i, bytes: entry.offset..entry.offset + entry.stored_len as u64 };
                match compressed.decode_block(i) {
                    Ok(block) => {
                        check_null_count(path, ty, entry.nulls.map(u64::from), &block, place(), report);
                        if keep {
                            values.extend_from_slice(&block);
                        }
                    }
                    Err(e) => {
                        intact = false;
                        report.add(
                            Severity::Damaged,
                            path,
                            place(),
                            detail_of(&e),
                            Repair::Restore(RESTORE_COLUMN.into()),
                        );
                    }
                }
            }
            intact.then(|| arrow_buffer::Buffer::from_vec(values))
        }
    };
    Some(CheckedColumn { ty, attribute, rows, values: values.filter(|_| wanted(ty, attribute)) })
}

/// Checks a recorded null count (of a plain file, or of a compressed block at
/// `place`) against the `values` it counts. Readers trust a count of 0 to skip
/// looking for nulls, so a wrong one would show nulls as values.
fn check_null_count(
    path: &Path,
    ty: ColumnType,
    recorded: Option<u64>,
    values: &[u8],
    place: Place,
    report: &mut VerifyReport,
) {
    let (Some(recorded), Some(actual)) = (recorded, crate::nulls::count_nulls(ty, values)) else { return };
    if recorded != actual {
        report.add(
            Severity::Damaged,
            path,
            place,
            format!("the recorded null count is {recorded}, the values hold {actual} nulls"),
            Repair::Rebuild("from the values: re-encode the file (`strata compress`, or `strata decompress`)".into()),
        );
    }
}

/// Bytes past the trailer a compressed file's readers use: the leftovers of an
/// interrupted append (harmless), or a last trailer that ends the file but fails its
/// checks, so readers fall back to an earlier one and lose the rows appended since.
fn verify_compressed_tail(path: &Path, file_len: u64, in_use: u64, report: &mut VerifyReport) {
    if file_len <= in_use {
        return;
    }
    let mut last = [0u8; TRAILER_MAGIC.len()];
    let read = fs::File::open(path).and_then(|f| f.read_exact_at(&mut last, file_len - TRAILER_MAGIC.len() as u64));
    let ends_with_trailer = read.is_ok() && &last == TRAILER_MAGIC;
    if ends_with_trailer {
        report.add(
            Severity::Damaged,
            path,
            Place::Bytes(in_use..file_len),
            format!(
                "the file ends with a trailer that fails its checksum or points at a damaged index; readers use \
                 the earlier trailer ending at byte {in_use}, without the rows appended after it"
            ),
            Repair::Restore(RESTORE_COLUMN.into()),
        );
    } else {
        report.add(
            Severity::Note,
            path,
            Place::Bytes(in_use..file_len),
            "bytes past the trailer in use: the tail of an interrupted append, ignored by readers",
            Repair::NotNeeded,
        );
    }
}

/// Checks what a column's values must agree with: symbol keys against the sym list,
/// string offsets against the data file (itself a column file, checked here).
fn verify_values(path: &Path, column: &CheckedColumn, symbols: Option<usize>, report: &mut VerifyReport) {
    let Some(values) = &column.values else { return };
    match column.ty {
        ColumnType::Symbol => {
            let Some(limit) = symbols else { return };
            let keys: &[u32] = values.typed_data();
            if let Some(row) = keys.iter().position(|k| *k as usize >= limit) {
                report.add(
                    Severity::Damaged,
                    path,
                    Place::Row(row as u64),
                    format!(
                        "symbol key {} is outside the sym list of {limit} symbols (the column, or the sym file, \
                         lost data)",
                        keys[row]
                    ),
                    Repair::Restore(RESTORE_COLUMN.into()),
                );
            }
        }
        ColumnType::String => {
            let data_path = string_data_path(path);
            let data = verify_column_file(&data_path, report, |_, _| false);
            let offsets: &[i64] = values.typed_data();
            let data_len = data.map(|d| d.rows as i64);
            let bad = offsets.first().is_some_and(|o| *o != 0)
                || offsets.windows(2).any(|w| w[0] > w[1])
                || data_len.is_some_and(|n| offsets.last().is_some_and(|last| *last != n));
            if bad {
                report.add(
                    Severity::Damaged,
                    path,
                    Place::File,
                    format!(
                        "string offsets must start at 0, never decrease and end at the {} bytes of {}",
                        data_len.map_or("?".to_string(), |n| n.to_string()),
                        data_path.display()
                    ),
                    Repair::Restore(RESTORE_COLUMN.into()),
                );
            }
        }
        _ => {}
    }
}

/// Checks a parted or grouped column's index file: its checksum and shape, and that
/// it is the index the column's values give (so it can always be rebuilt from them).
fn verify_attribute_index(dir: &Path, name: &str, column: &CheckedColumn, report: &mut VerifyReport) {
    if !matches!(column.attribute, Attribute::Parted | Attribute::Grouped) {
        return;
    }
    let path = index_path(dir, name, column.attribute);
    report.counted(&path);
    let rebuild = || {
        Repair::Rebuild(format!(
            "from column {name}, whose values give it (rewriting the table rebuilds it: export and import, or \
             write it again with the {} attribute)",
            column.attribute
        ))
    };
    let stored = match read_index(&path) {
        Ok(index) => index,
        Err(e) => {
            report.damaged_file(&path, &e, rebuild());
            return;
        }
    };
    let Some(values) = &column.values else { return };
    if let Some(expected) = index_of(column.ty, column.attribute, values)
        && expected != stored
    {
        report.add(
            Severity::Damaged,
            &path,
            Place::File,
            format!("the index does not match column {name}'s values"),
            rebuild(),
        );
    }
}

/// The index [`check_attribute`] builds for values of `ty`'s width. Indexes key
/// values by their raw bits, so any type of the same width gives the same index;
/// `None` when the values do not keep the promise (the column file is then the
/// damaged one, and its checksum has said so).
fn index_of(ty: ColumnType, attribute: Attribute, values: &arrow_buffer::Buffer) -> Option<AttributeIndex> {
    let same_width = match ty.width() {
        1 => ColumnType::Byte,
        2 => ColumnType::Short,
        4 => ColumnType::Int,
        _ => ColumnType::Long,
    };
    let column = Column::from_buffer(same_width, values.clone(), None).ok()?;
    check_attribute("", &column, attribute).ok().flatten()
}

#[cfg(test)]
mod tests;
