//! A database root: configuration, the sym file, splayed tables, date partitions and
//! `par.txt` segments.
//!
//! ```text
//! root/strata.toml            configuration (default compression, durability)
//! root/sym                    symbol list shared by every symbol column
//! root/<table>/               splayed tables that are not partitioned
//! root/YYYY.MM.DD/<table>/    one directory per date partition
//! root/par.txt                optional: one segment root per line; partitions then
//!                             live in the segments instead of the root
//! ```
//!
//! Partitions are written whole and carry a completion record ([`crate::partition`]);
//! every reader finds them through [`Database::partition`], which applies the rule
//! of what is served.

use std::fs;
use std::path::{Path, PathBuf};

use crate::append::{DroppedAttribute, append_table, stored_schema};
use crate::column_data::{Column, SymbolDomain};
use crate::config::DbConfig;
use crate::date::Date;
use crate::durable::{Durability, sync_parent};
use crate::error::{IoContext, Result, StoreError, corrupt};
use crate::partition::{
    Partition, PartitionRecord, PartitionStatus, Staging, WriteLock, clear_leftovers, leftover_date, link_table,
};
use crate::progress::{NoProgress, Progress};
use crate::schema::{SCHEMA_SUFFIX, SchemaLock, TableSchema};
use crate::splayed::{
    COLUMN_ORDER_FILE, SplayedTable, WriteOptions, remove_leftovers, replace_dir, staging_dir,
    write_splayed_with_progress,
};
use crate::sym::SymFile;
use crate::table::{Table, is_valid_name};
use crate::table_spec::TableSpec;
use crate::types::{Attribute, ColumnType};

/// The file listing segment roots.
pub const SEGMENTS_FILE: &str = "par.txt";

/// Where a table lives in a database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableLocation {
    /// `root/<table>`.
    Splayed(String),
    /// `<segment>/YYYY.MM.DD/<table>`.
    Partition(Date, String),
}

impl TableLocation {
    /// The table's name.
    pub fn table(&self) -> &str {
        match self {
            TableLocation::Splayed(t) | TableLocation::Partition(_, t) => t,
        }
    }
}

/// How a table is to be written into a database.
#[derive(Clone, Debug, Default)]
pub struct TableWrite {
    /// Compression per column (falls back to the database default).
    pub spec: TableSpec,
    /// Sort rows by these columns first (stable, like `xasc`).
    pub sort_by: Vec<String>,
    /// Attributes to validate and store.
    pub attributes: Vec<(String, Attribute)>,
}

/// One table of a partition write ([`Database::write_partition`]).
#[derive(Clone, Copy, Debug)]
pub struct PartitionTable<'a> {
    /// The table's name.
    pub name: &'a str,
    /// Its rows.
    pub table: &'a Table,
    /// How to write it.
    pub how: &'a TableWrite,
}

/// What a write does with a table that is already there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteMode {
    /// End of day's way: in a partition, the stored rows then the new ones,
    /// re-sorted by the write's sort columns; a splayed table is replaced.
    #[default]
    Merge,
    /// Refuse the write: the table exists (`strata import`'s default).
    Fail,
    /// Add the new rows after the stored ones, appending to the column files
    /// ([`crate::append`]): stored rows keep their order, attributes are checked
    /// again (and dropped, with the reason, when the new rows break them).
    Append,
    /// Replace the table with the new rows, atomically.
    Replace,
}

/// What a write did to one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The table.
    pub table: String,
    /// Rows it held before; `None` when it was not there.
    pub rows_before: Option<u64>,
    /// Rows it holds now.
    pub rows_after: u64,
    /// Attributes an append dropped because the new rows break them.
    pub dropped: Vec<DroppedAttribute>,
    /// Whether this write recorded the table's schema (its first partition, or the
    /// first write since schemas were recorded).
    pub schema_recorded: bool,
}

/// Everything in a database's partition directories, for `strata ls`.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    /// Every dated directory, served or not, by date.
    pub partitions: Vec<Partition>,
    /// Staging and retired directories left by writers that died (never served;
    /// removed by the next write of their date).
    pub leftovers: Vec<PathBuf>,
}

/// What [`Database::listing`] finds: everything a reader needs before a query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Dates of the partition directories, ascending (served or not: a day's
    /// record is read when a reader needs the day).
    pub dates: Vec<Date>,
    /// Names of the tables readers see, sorted.
    pub tables: Vec<String>,
}

/// Dated directories in the partition roots, each with its date, by date.
type DatedDirs = Vec<(Date, PathBuf)>;

/// An open database.
#[derive(Clone, Debug)]
pub struct Database {
    root: PathBuf,
    config: DbConfig,
    sym: SymFile,
    segments: Vec<PathBuf>,
}

impl Database {
    /// Opens the database at `root`, creating the directory if needed. Reads
    /// `strata.toml` and `par.txt` when present.
    pub fn open(root: &Path) -> Result<Database> {
        fs::create_dir_all(root).at(root)?;
        let config = DbConfig::load(root)?;
        let par = root.join(SEGMENTS_FILE);
        let segments = match fs::read_to_string(&par) {
            Ok(text) => text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| root.join(l)).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(StoreError::Io { path: par, source: e }),
        };
        Ok(Database { root: root.to_path_buf(), config, sym: SymFile::new(&root.join("sym")), segments })
    }

    /// Opens the database at `root`, which must exist: for commands that only read,
    /// so that a mistyped path is an error, not a new, empty database.
    /// A directory with files but nothing of a database in it (no sym file,
    /// `par.txt`, `strata.toml`, schema record, date partition or table) is refused
    /// too: `strata sql --db ~/Downloads` is a mistake. An empty directory is an empty
    /// database.
    pub fn open_existing(root: &Path) -> Result<Database> {
        if !root.is_dir() {
            return Err(StoreError::Invalid(format!("{}: no such database directory", root.display())));
        }
        if !holds_a_database(root)? {
            return Err(StoreError::Invalid(format!(
                "{}: not a Strata database (no sym file, par.txt, strata.toml, date partitions or tables in it); \
                 give the database's root directory",
                root.display()
            )));
        }
        Database::open(root)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The configuration.
    pub fn config(&self) -> &DbConfig {
        &self.config
    }

    /// Replaces and saves the configuration.
    pub fn set_config(&mut self, config: DbConfig) -> Result<()> {
        config.save(&self.root)?;
        self.config = config;
        Ok(())
    }

    /// The sym file.
    pub fn sym(&self) -> &SymFile {
        &self.sym
    }

    /// The segment roots from `par.txt` (empty when partitions live in the root).
    pub fn segments(&self) -> &[PathBuf] {
        &self.segments
    }

    /// The roots partitions live in: the segments, or the root itself.
    fn partition_roots(&self) -> Vec<PathBuf> {
        if self.segments.is_empty() { vec![self.root.clone()] } else { self.segments.clone() }
    }

    /// Every dated directory and leftover in the partition roots.
    fn dated_entries(&self) -> Result<(DatedDirs, Vec<PathBuf>)> {
        let (mut dated, mut leftovers) = (Vec::new(), Vec::new());
        for root in self.partition_roots() {
            let entries = match fs::read_dir(&root) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::Io { path: root, source: e }),
            };
            for entry in entries {
                let entry = entry.at(&root)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                // The entry's type comes with the listing on most file systems: no
                // stat per day, which matters with thousands of them. A link (a
                // partition kept on other storage) is followed.
                let kind = entry.file_type().at(&root)?;
                if !(kind.is_dir() || kind.is_symlink() && entry.path().is_dir()) {
                    continue;
                }
                if let Ok(date) = name.parse::<Date>() {
                    dated.push((date, entry.path()));
                } else if leftover_date(&name).is_some() {
                    leftovers.push(entry.path());
                }
            }
        }
        dated.sort();
        leftovers.sort();
        Ok((dated, leftovers))
    }

    /// Partition `date` as readers may see it (`None` when it does not exist): the
    /// one place the rule of what is served lives. A partition with a valid
    /// completion record serves the tables the record lists; one without a record
    /// (written before records existed) serves every table directory in it; one
    /// with a bad record serves nothing. Staging directories are never partitions.
    pub fn partition(&self, date: Date) -> Result<Option<Partition>> {
        let dir = self.partition_dir(date);
        if !dir.is_dir() {
            return Ok(None);
        }
        Partition::inspect(&dir, date).map(Some)
    }

    /// Every served date partition, ascending, across all segments (see
    /// [`Database::partition`]).
    ///
    /// A partition with a bad completion record is an error, not a partition left
    /// out: its directory was published whole, so a bad record is damage, and a
    /// reader that skipped the day would give answers silently short of its rows.
    pub fn partitions(&self) -> Result<Vec<Date>> {
        self.published()?
            .into_iter()
            .map(|p| match p.status {
                PartitionStatus::BadRecord(why) => Err(corrupt(
                    &p.dir,
                    format!("partition {} cannot be served: {why} (`strata verify` reports the damage)", p.date),
                )),
                _ => Ok(p.date),
            })
            .collect()
    }

    /// What a reader lists before any query, reading no partition's files: the
    /// partition dates and the table names. It costs one listing of the root (and
    /// of each segment), so opening a database of ten years costs about what one of
    /// a day does; which days are served, and which tables each serves, is
    /// [`Database::partition`]'s to say, asked only of the days a query keeps
    /// (kdb+ lists an HDB's partitions the same way, and maps a partition's columns
    /// only when a query touches it).
    ///
    /// The tables are the splayed tables at the root, those with a schema record
    /// ([`crate::schema`]; every partition write keeps one), and those of the
    /// newest served partition (kdb+ takes an HDB's tables from its last
    /// partition), which covers a database written before schema records. A
    /// database with no record at all is such a database throughout: every
    /// partition is read for its tables.
    pub fn listing(&self) -> Result<Listing> {
        let root = &self.root;
        let (mut dates, mut tables, mut recorded) = (Vec::new(), Vec::new(), Vec::new());
        for entry in fs::read_dir(root).at(root)? {
            let entry = entry.at(root)?;
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str() else { continue };
            // The type comes with the listing on most file systems: no stat per
            // day. A link (a partition kept on other storage) is followed.
            let kind = entry.file_type().at(root)?;
            if let Some(table) = name.strip_suffix(SCHEMA_SUFFIX) {
                if kind.is_file() && is_valid_name(table) {
                    recorded.push(table.to_string());
                }
            } else if !(kind.is_dir() || kind.is_symlink() && entry.path().is_dir()) {
                continue;
            } else if let Ok(date) = name.parse::<Date>() {
                // Without segments, a day's directory is its date in the root.
                if self.segments.is_empty() && date.to_string() == name {
                    dates.push(date);
                }
            } else if is_valid_name(name) && entry.path().join(COLUMN_ORDER_FILE).is_file() {
                tables.push(name.to_string());
            }
        }
        if self.segments.is_empty() {
            dates.sort();
        } else {
            dates = self.partition_dates()?;
        }
        let legacy = recorded.is_empty();
        tables.extend(recorded);
        for &date in dates.iter().rev() {
            let Some(partition) = self.partition(date)? else { continue };
            if partition.is_served() {
                tables.extend(partition.tables);
                if !legacy {
                    break;
                }
            }
        }
        tables.sort();
        tables.dedup();
        Ok(Listing { dates, tables })
    }

    /// The dates of the partition directories in the segment each date maps to,
    /// ascending, with no completion record read.
    fn partition_dates(&self) -> Result<Vec<Date>> {
        let mut dates: Vec<Date> = self
            .dated_entries()?
            .0
            .into_iter()
            .filter(|(date, dir)| *dir == self.partition_dir(*date))
            .map(|(date, _)| date)
            .collect();
        dates.dedup();
        Ok(dates)
    }

    /// Every partition in the segment its date maps to (a dated directory elsewhere
    /// is not served), ascending, with a bad record or not: for writers, which must
    /// go on with other days when one is damaged.
    fn published(&self) -> Result<Vec<Partition>> {
        let mut found = Vec::new();
        for date in self.partition_dates()? {
            found.extend(self.partition(date)?);
        }
        Ok(found)
    }

    /// Every dated directory (served or not) and every leftover staging directory.
    pub fn survey(&self) -> Result<Survey> {
        let (dated, leftovers) = self.dated_entries()?;
        let partitions = dated.iter().map(|(date, dir)| Partition::inspect(dir, *date)).collect::<Result<_>>()?;
        Ok(Survey { partitions, leftovers })
    }

    /// The directory of partition `date`: in the root, or in segment
    /// `days since 1970-01-01 mod segments` when `par.txt` lists segments. kdb+
    /// counts its days from 2000.01.01, so with more than one segment the two
    /// place a date in different segments (docs/file-formats.md says so); this
    /// rule is kept because existing segmented databases are laid out by it.
    pub fn partition_dir(&self, date: Date) -> PathBuf {
        let root = match self.segments.len() {
            0 => &self.root,
            n => &self.segments[date.0.rem_euclid(n as i32) as usize],
        };
        root.join(date.to_string())
    }

    /// The directory of a table.
    pub fn table_dir(&self, location: &TableLocation) -> PathBuf {
        match location {
            TableLocation::Splayed(t) => self.root.join(t),
            TableLocation::Partition(d, t) => self.partition_dir(*d).join(t),
        }
    }

    /// Tables in partition `date` that readers see ([`Database::partition`]), or the
    /// splayed tables at the root for `None`.
    pub fn tables(&self, date: Option<Date>) -> Result<Vec<String>> {
        let dir = match date {
            Some(d) => return Ok(Partition::inspect(&self.partition_dir(d), d)?.tables),
            None => self.root.clone(),
        };
        let mut names = Vec::new();
        for entry in fs::read_dir(&dir).at(&dir)? {
            let entry = entry.at(&dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_valid_name(&name) && entry.path().join(crate::splayed::COLUMN_ORDER_FILE).is_file() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Opens a table for reading (in a partition, only a served one).
    pub fn open_table(&self, location: &TableLocation) -> Result<SplayedTable> {
        let dir = self.table_dir(location);
        let found = match location {
            TableLocation::Splayed(_) => dir.join(crate::splayed::COLUMN_ORDER_FILE).is_file(),
            TableLocation::Partition(d, t) => self.tables(Some(*d)).is_ok_and(|served| served.contains(t)),
        };
        if !found {
            let there = match location {
                TableLocation::Splayed(_) => self.tables(None).unwrap_or_default(),
                TableLocation::Partition(d, _) => self.tables(Some(*d)).unwrap_or_default(),
            };
            return Err(StoreError::Invalid(format!(
                "{}: no table {}; tables there: {}",
                self.root.display(),
                location.table(),
                if there.is_empty() { "none".to_string() } else { there.join(", ") }
            )));
        }
        SplayedTable::open(&dir)
    }

    /// Reads a whole table, after checking its `.d` against its files (and plain
    /// columns' checksums when `strata.toml` asks).
    pub fn read_table(&self, location: &TableLocation) -> Result<Table> {
        crate::column_order::read_table_checked(self, location)
    }

    /// The current symbol list.
    pub fn symbols(&self) -> Result<SymbolDomain> {
        self.sym.load()
    }

    /// Writes `table` at `location`: sorts it if asked, keys symbol columns against
    /// the sym file, checks attributes, then writes every column (compressed as the
    /// table spec, else the database default, says) and swaps the table into place.
    /// A splayed table is replaced; a table in a date partition goes through
    /// [`Database::write_partition`] (added to the partition, or merged with the
    /// table already there).
    pub fn write_table(&self, location: &TableLocation, table: &Table, how: &TableWrite) -> Result<()> {
        self.write_table_as(location, table, how, WriteMode::Merge, &NoProgress).map(drop)
    }

    /// Writes `table` at `location` as [`Database::write_table`] does, doing `mode`
    /// with a table already there ([`WriteMode`]), and says what it did.
    /// `progress` hears the write of the table's columns as one step in
    /// [`Unit::Bytes`](crate::progress::Unit::Bytes) of their values.
    pub fn write_table_as(
        &self,
        location: &TableLocation,
        table: &Table,
        how: &TableWrite,
        mode: WriteMode,
        progress: &dyn Progress,
    ) -> Result<WriteOutcome> {
        match location {
            TableLocation::Splayed(name) => {
                check_name(name)?;
                self.write_splayed_as(name, table, how, mode, progress)
            }
            TableLocation::Partition(date, name) => {
                let tables = [PartitionTable { name, table, how }];
                let mut outcomes = self.write_partition_as(*date, &tables, mode, progress)?;
                Ok(outcomes.remove(0))
            }
        }
    }

    /// A splayed table at the root, written as `mode` says.
    fn write_splayed_as(
        &self,
        name: &str,
        table: &Table,
        how: &TableWrite,
        mode: WriteMode,
        progress: &dyn Progress,
    ) -> Result<WriteOutcome> {
        let dir = self.root.join(name);
        // Serialises appends (each copies the stored table) with other writers of
        // the root.
        let _lock = WriteLock::acquire(&self.root)?;
        let rows_before =
            if dir.join(crate::splayed::COLUMN_ORDER_FILE).is_file() { Some(stored_rows_of(&dir)?) } else { None };
        let outcome = |rows_after, dropped| WriteOutcome {
            table: name.to_string(),
            rows_before,
            rows_after,
            dropped,
            schema_recorded: false,
        };
        match (rows_before, mode) {
            (Some(rows), WriteMode::Fail) => Err(StoreError::Invalid(format!(
                "{}: table {name} already holds {rows} rows; write it in mode append to add rows or replace to \
                 replace them",
                dir.display()
            ))),
            (Some(_), WriteMode::Append) => {
                remove_leftovers(&self.root, name)?;
                let staged = staging_dir(&self.root, name);
                let appended = append_table(name, &dir, &staged, table, how, self, progress).and_then(|appended| {
                    replace_dir(&staged, &dir, self.config.durability)?;
                    Ok(appended)
                });
                if appended.is_err() {
                    let _ = fs::remove_dir_all(&staged);
                }
                let appended = appended.map_err(|e| self.named_for(e, &staged, &dir, name))?;
                Ok(outcome(appended.rows_after, appended.dropped))
            }
            _ => {
                self.write_table_at(&dir, table, how, progress)?;
                Ok(outcome(table.len() as u64, Vec::new()))
            }
        }
    }

    /// `error` of writing table `name` in `staged`, with paths named as the user
    /// finds them (under `target`, not the staging copy) and rule breaks prefixed by
    /// where they happened.
    fn named_for(&self, error: StoreError, staged: &Path, target: &Path, name: &str) -> StoreError {
        match error {
            StoreError::Invalid(what) => StoreError::Invalid(format!("{}: table {name}: {what}", target.display())),
            other => published_name(other, staged, target),
        }
    }

    /// The schema table `name` must keep: its record at the root, else (a database
    /// written before records) the stored columns of the newest partition holding
    /// the table; `None` for a table no partition holds yet.
    pub fn table_schema(&self, name: &str) -> Result<Option<TableSchema>> {
        Ok(self.schema_and_source(name, None)?.map(|(schema, _, _)| schema))
    }

    /// [`Database::table_schema`] with the file it was read from: the record, or
    /// the newest partition's table directory it was derived from. Readers name it
    /// when a partition disagrees.
    pub fn table_schema_and_source(&self, name: &str) -> Result<Option<(TableSchema, PathBuf)>> {
        Ok(self.schema_and_source(name, None)?.map(|(schema, source, _)| (schema, source)))
    }

    /// The schema a replacement of table `name` in partition `date` must keep: as
    /// [`Database::table_schema`], but never derived from `date` itself (whose
    /// types may be the drift being repaired).
    pub fn table_schema_beside(&self, name: &str, date: Date) -> Result<Option<TableSchema>> {
        Ok(self.schema_and_source(name, Some(date))?.map(|(schema, _, _)| schema))
    }

    /// [`Database::table_schema`], with the file it came from and whether that is
    /// the record; `except` is a partition not to derive it from.
    fn schema_and_source(&self, name: &str, except: Option<Date>) -> Result<Option<(TableSchema, PathBuf, bool)>> {
        if let Some(schema) = TableSchema::read(&self.root, name)? {
            return Ok(Some((schema, TableSchema::path(&self.root, name), true)));
        }
        // A damaged partition (bad record) serves nothing to derive from: the newest
        // sound one that holds the table does.
        for p in self.published()?.into_iter().rev().filter(|p| Some(p.date) != except) {
            if p.tables.iter().any(|t| t == name) {
                let dir = p.dir.join(name);
                return Ok(Some((stored_schema(name, &dir)?, dir, false)));
            }
        }
        Ok(None)
    }

    /// Whether a partition other than `date` serves table `name`. A damaged one
    /// (bad record) may hold it: yes, so that a replace does not reset the schema a
    /// day that cannot be read was written with.
    fn held_elsewhere(&self, name: &str, date: Date) -> Result<bool> {
        Ok(self.published()?.iter().filter(|p| p.date != date).any(|p| match p.status {
            PartitionStatus::BadRecord(_) => p.unlisted.iter().any(|t| t == name),
            _ => p.tables.iter().any(|t| t == name),
        }))
    }

    /// Checks each table against its schema ([`crate::schema`]) and returns the
    /// records to write once the partition is published: a new table's, and a
    /// derived one's (a database from before records). Replacing a table that only
    /// partition `date` holds sets its schema anew.
    fn check_schemas(&self, date: Date, tables: &[PartitionTable<'_>], mode: WriteMode) -> Result<Vec<TableSchema>> {
        let mut pending = Vec::new();
        for t in tables {
            let offered = TableSchema::of(t.name, t.table);
            if mode == WriteMode::Replace && !self.held_elsewhere(t.name, date)? {
                if TableSchema::read(&self.root, t.name)?.as_ref() != Some(&offered) {
                    pending.push(offered);
                }
                continue;
            }
            let except = (mode == WriteMode::Replace).then_some(date);
            match self.schema_and_source(t.name, except)? {
                Some((schema, source, recorded)) => {
                    schema.check(t.table, &source)?;
                    if !recorded {
                        pending.push(schema);
                    }
                }
                None => pending.push(offered),
            }
        }
        Ok(pending)
    }

    /// Writes `tables` into partition `date` as one atomic step: readers see the
    /// partition as it was or with every one of these tables, never in between.
    ///
    /// The partition is built in a staging directory in the segment `date` maps to
    /// and swapped in ([`crate::partition`]); its completion record is written last.
    /// When the partition exists (a second end of day, `strata import` into an
    /// existing day, several writers sharing a date):
    /// - tables it serves that are not written here are carried over unchanged
    ///   (hard links) and stay in the record;
    /// - a table not yet there is added;
    /// - a table already there is merged: the stored rows, then these, re-sorted by
    ///   `how.sort_by` (attributes checked again). Columns must match by name, order
    ///   and type, otherwise the write is refused with an error naming the date,
    ///   table and columns, and nothing changes. Rows are never overwritten.
    ///
    /// A partition whose completion record is bad is refused (it needs an operator:
    /// its tables are not served and would otherwise be dropped). On any error the
    /// partition is untouched and the staging directory removed.
    pub fn write_partition(&self, date: Date, tables: &[PartitionTable<'_>]) -> Result<()> {
        self.write_partition_as(date, tables, WriteMode::Merge, &NoProgress).map(drop)
    }

    /// Writes `tables` into partition `date` as [`Database::write_partition`] does,
    /// doing `mode` with a table the partition already serves, and says what it
    /// did to each table (in the order given).
    ///
    /// Every table must keep its schema ([`crate::schema`]): columns, order and
    /// types as the table's record at the root says (the first partition written
    /// fixes it; a database from before records takes it from its newest
    /// partition). A table that differs refuses the whole write, naming the table,
    /// the column, the stored type and the offered one. Replacing a table that no
    /// other partition holds sets its schema anew.
    ///
    /// `progress` hears one step per table written, in
    /// [`Unit::Bytes`](crate::progress::Unit::Bytes) of its columns' values.
    pub fn write_partition_as(
        &self,
        date: Date,
        tables: &[PartitionTable<'_>],
        mode: WriteMode,
        progress: &dyn Progress,
    ) -> Result<Vec<WriteOutcome>> {
        for (i, t) in tables.iter().enumerate() {
            check_name(t.name)?;
            if tables[..i].iter().any(|u| u.name == t.name) {
                return Err(StoreError::Invalid(format!("partition {date}: table {} is written twice", t.name)));
            }
        }
        // Records are created under the root's schema lock, held until the partition
        // that fixes them is published; a check against existing records needs it
        // only while reading (a record never changes once written).
        let schema_lock = SchemaLock::acquire(&self.root)?;
        let pending = self.check_schemas(date, tables, mode)?;
        let schema_lock = if pending.is_empty() { None } else { Some(schema_lock) };
        let target = self.partition_dir(date);
        let segment = target.parent().expect("a partition has a segment");
        if !segment.is_dir() {
            fs::create_dir_all(segment).at(segment)?;
            if self.config.durability == Durability::Fsync {
                sync_parent(segment)?;
            }
        }
        let lock = WriteLock::acquire(segment)?;
        clear_leftovers(segment, date, &lock)?;
        let existing = match fs::metadata(&target) {
            Ok(meta) if meta.is_dir() => Some(Partition::inspect(&target, date)?),
            Ok(_) => {
                return Err(StoreError::Invalid(format!(
                    "{}: partition {date} is not a directory; cannot write tables {}",
                    target.display(),
                    tables.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(StoreError::Io { path: target.clone(), source: e }),
        };
        if let Some(Partition { status: PartitionStatus::BadRecord(why), .. }) = &existing {
            return Err(StoreError::Invalid(format!(
                "{}: partition {date} is not served ({why}); refusing to write into it: repair or move it first",
                target.display()
            )));
        }
        let staging = Staging::create(segment, date, &lock)?;
        let mut record = PartitionRecord { date, tables: Vec::new() };
        if let Some(old) = &existing {
            for name in old.tables.iter().filter(|n| !tables.iter().any(|t| t.name == n.as_str())) {
                link_table(&target.join(name), &staging.dir().join(name), self.config.durability)?;
                record.tables.push((name.clone(), stored_rows(old, name)?));
            }
        }
        let mut outcomes = Vec::with_capacity(tables.len());
        for t in tables {
            let stored = match &existing {
                Some(old) if old.tables.iter().any(|n| n == t.name) => Some(stored_rows(old, t.name)?),
                _ => None,
            };
            let named = |e: StoreError| match e {
                StoreError::Invalid(what) => StoreError::Invalid(format!("partition {date}: table {}: {what}", t.name)),
                other => published_name(other, staging.dir(), &target),
            };
            let staged = staging.dir().join(t.name);
            let (rows_after, dropped) = match (stored, mode) {
                (Some(rows), WriteMode::Fail) => {
                    return Err(StoreError::Invalid(format!(
                        "{}: partition {date} already holds table {} ({rows} rows); write it in mode append to add \
                         rows or replace to replace them",
                        target.display(),
                        t.name
                    )));
                }
                (Some(_), WriteMode::Append) => {
                    let appended = append_table(t.name, &target.join(t.name), &staged, t.table, t.how, self, progress)
                        .map_err(named)?;
                    (appended.rows_after, appended.dropped)
                }
                (Some(_), WriteMode::Merge) => {
                    let merged = self.merged(&target.join(t.name), date, t)?;
                    self.write_table_at(&staged, &merged, t.how, progress).map_err(named)?;
                    (merged.len() as u64, Vec::new())
                }
                _ => {
                    self.write_table_at(&staged, t.table, t.how, progress).map_err(named)?;
                    (t.table.len() as u64, Vec::new())
                }
            };
            record.tables.push((t.name.to_string(), rows_after));
            crate::fault::point("store.partition.table-staged");
            let schema_recorded = pending.iter().any(|p| p.table == t.name);
            outcomes.push(WriteOutcome {
                table: t.name.to_string(),
                rows_before: stored,
                rows_after,
                dropped,
                schema_recorded,
            });
        }
        record.tables.sort();
        record.write(staging.dir(), self.config.durability)?;
        crate::fault::point("store.partition.record-written");
        staging.publish(&target, self.config.durability)?;
        crate::fault::point("store.partition.published");
        // The partition is in place: record the schemas it fixed. A crash before this
        // leaves tables without a record, which the next write derives and records.
        for schema in &pending {
            schema.write(&self.root, self.config.durability)?;
        }
        drop(schema_lock);
        Ok(outcomes)
    }

    /// The rows stored in table `dir` of partition `date`, then `new`'s rows.
    fn merged(&self, dir: &Path, date: Date, new: &PartitionTable<'_>) -> Result<Table> {
        let old = SplayedTable::open(dir)?.read(&self.sym.load()?)?;
        let refused = |what: String| {
            StoreError::Invalid(format!("partition {date}: table {}: cannot merge the new rows: {what}", new.name))
        };
        if old.names() != new.table.names() {
            return Err(refused(format!(
                "stored columns are {}, new rows have {}",
                old.names().join(" "),
                new.table.names().join(" ")
            )));
        }
        let columns = old
            .iter()
            .zip(new.table.columns())
            .map(|((name, stored), added)| {
                let joined = stored.concat(added).map_err(|e| refused(format!("column {name}: {e}")))?;
                Ok((name.to_string(), joined))
            })
            .collect::<Result<Vec<_>>>()?;
        Table::new(columns)
    }

    /// Sorts, keys symbols and writes `table` as a splayed table at `dir`.
    fn write_table_at(&self, dir: &Path, table: &Table, how: &TableWrite, progress: &dyn Progress) -> Result<()> {
        let sorted;
        let mut table = if how.sort_by.is_empty() {
            table
        } else {
            let by: Vec<&str> = how.sort_by.iter().map(String::as_str).collect();
            sorted = table.xasc(&by)?;
            &sorted
        };
        let mut keyed = None;
        for (name, column) in table.iter() {
            if column.ty() == ColumnType::Symbol {
                let stored = self.sym.enumerate_column(column, self.config.durability)?;
                keyed = Some(keyed.as_ref().unwrap_or(table).with_column(name, stored)?);
            }
        }
        if let Some(k) = &keyed {
            table = k;
        }
        let options = WriteOptions {
            spec: how.spec.clone(),
            database_default: self.config.default_spec.clone(),
            attributes: how.attributes.clone(),
            durability: self.config.durability,
        };
        write_splayed_with_progress(dir, table, &options, progress)
    }

    /// Reads one column of a table.
    pub fn read_column(&self, location: &TableLocation, column: &str) -> Result<Column> {
        let domain = self.sym.load()?;
        self.open_table(location)?.read_column(column, &domain)
    }
}

/// `error` of a write under `staged` (a staging copy), named as the user will find
/// it once published at `target`: a write that fails (a full disk) names the
/// table's column, not the staging copy, which follows as the file being written.
fn published_name(error: StoreError, staged: &Path, target: &Path) -> StoreError {
    match error {
        StoreError::Write { path, temp, source } => {
            let path = path.strip_prefix(staged).map_or(path.clone(), |rest| target.join(rest));
            StoreError::Write { path, temp, source }
        }
        StoreError::Io { path, source } if path.starts_with(staged) => {
            let named = target.join(path.strip_prefix(staged).expect("under the staging copy"));
            StoreError::Write { path: named, temp: path, source }
        }
        other => other,
    }
}

/// Refuses a table name that is not an identifier.
fn check_name(name: &str) -> Result<()> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!("table name {name:?} is not an identifier")))
    }
}

/// Rows of the table at `dir`, from its first column.
fn stored_rows_of(dir: &Path) -> Result<u64> {
    Ok(SplayedTable::open(dir)?.stats()?.first().map_or(0, |s| s.rows))
}

/// Rows of served table `name` of `partition`: from its record, or (no record) from
/// the table's first column.
fn stored_rows(partition: &Partition, name: &str) -> Result<u64> {
    if let PartitionStatus::Complete(record) = &partition.status
        && let Some(rows) = record.rows(name)
    {
        return Ok(rows);
    }
    stored_rows_of(&partition.dir.join(name))
}

/// Whether `root` is empty or holds something of a database: the sym file,
/// `par.txt`, `strata.toml`, a schema record, a date partition or a splayed table.
fn holds_a_database(root: &Path) -> Result<bool> {
    let mut empty = true;
    for entry in fs::read_dir(root).at(root)? {
        let entry = entry.at(root)?;
        empty = false;
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str() else { continue };
        let path = entry.path();
        let known_file =
            matches!(name, "sym" | SEGMENTS_FILE | crate::config::CONFIG_FILE) || name.ends_with(SCHEMA_SUFFIX);
        let partition = name.parse::<Date>().is_ok() && path.is_dir();
        if known_file || partition || path.join(COLUMN_ORDER_FILE).is_file() {
            return Ok(true);
        }
    }
    Ok(empty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::Durability;
    use crate::progress::ProgressLog;
    use crate::splayed::write_splayed;

    fn quotes(syms: &[&str]) -> Table {
        let n = syms.len();
        Table::new(vec![
            ("sym".into(), Column::from_symbols(syms.iter().copied())),
            ("time".into(), Column::from_values(ColumnType::Timestamp, (0..n as i64).rev().collect()).unwrap()),
            ("note".into(), Column::from_strings(syms.iter().map(|s| format!("{s}!")))),
        ])
        .unwrap()
    }

    #[test]
    fn partitions_sort_and_part_by_sym() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let how = TableWrite {
            sort_by: vec!["sym".into(), "time".into()],
            attributes: vec![("sym".into(), Attribute::Parted)],
            ..Default::default()
        };
        for (d, syms) in [("2024.01.03", ["B", "A", "B"]), ("2024.01.02", ["C", "A", "C"])] {
            db.write_table(&TableLocation::Partition(d.parse().unwrap(), "quote".into()), &quotes(&syms), &how)
                .unwrap();
        }
        assert_eq!(
            db.partitions().unwrap().iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["2024.01.02", "2024.01.03"]
        );
        let loc = TableLocation::Partition("2024.01.03".parse().unwrap(), "quote".into());
        let t = db.read_table(&loc).unwrap();
        let sym = t.column("sym").unwrap();
        assert_eq!((0..3).map(|i| sym.symbol(i)).collect::<Vec<_>>(), ["A", "B", "B"]);
        assert_eq!(t.column("time").unwrap().values::<i64>(), [1, 0, 2]);
        assert_eq!(t.column("note").unwrap().string(0), "A!");
        assert_eq!(*db.symbols().unwrap(), ["B", "A", "C"]);
        let index = crate::attribute::read_index(&db.table_dir(&loc).join("sym.parted")).unwrap();
        assert_eq!(index.parted_rows(1), Some(0..1), "A is key 1");
        let err = db.open_table(&TableLocation::Partition("2024.01.03".parse().unwrap(), "trade".into())).unwrap_err();
        assert!(err.to_string().contains("no table trade; tables there: quote"), "{err}");
    }

    #[test]
    fn segments_spread_partitions() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SEGMENTS_FILE), "seg0\nseg1\n").unwrap();
        let mut db = Database::open(dir.path()).unwrap();
        db.set_config(DbConfig { durability: Durability::Rename, ..DbConfig::default() }).unwrap();
        for d in ["2024.01.02", "2024.01.03"] {
            db.write_table(
                &TableLocation::Partition(d.parse().unwrap(), "t".into()),
                &quotes(&["X"]),
                &TableWrite::default(),
            )
            .unwrap();
        }
        assert_eq!(db.partitions().unwrap().len(), 2);
        for seg in ["seg0", "seg1"] {
            let names = entries(&dir.path().join(seg));
            assert_eq!(names.iter().filter(|n| !n.starts_with('.')).count(), 1, "{seg}: {names:?}");
        }
        assert!(dir.path().join("sym").is_file(), "one sym file at the root");
    }

    fn longs(values: &[i64]) -> Table {
        Table::new(vec![
            ("sym".into(), Column::from_symbols(values.iter().map(|v| if v % 2 == 0 { "A" } else { "B" }))),
            ("x".into(), Column::from_values(ColumnType::Long, values.to_vec()).unwrap()),
        ])
        .unwrap()
    }

    fn x_values(db: &Database, date: Date, table: &str) -> Vec<i64> {
        let t = db.read_table(&TableLocation::Partition(date, table.into())).unwrap();
        t.column("x").unwrap().values::<i64>().to_vec()
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_partition_is_written_whole_with_its_record_and_merges_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let date: Date = "2024.03.04".parse().unwrap();
        let sorted = TableWrite {
            sort_by: vec!["sym".into(), "x".into()],
            attributes: vec![("sym".into(), Attribute::Parted)],
            ..Default::default()
        };
        let (trade, quote) = (longs(&[3, 2, 1]), longs(&[10, 11]));
        db.write_partition(
            date,
            &[
                PartitionTable { name: "trade", table: &trade, how: &sorted },
                PartitionTable { name: "quote", table: &quote, how: &sorted },
            ],
        )
        .unwrap();
        let p = db.partition(date).unwrap().unwrap();
        let PartitionStatus::Complete(record) = &p.status else { panic!("{:?}", p.status) };
        assert_eq!(record.tables, [("quote".to_string(), 2), ("trade".to_string(), 3)]);
        let root = [".partition-write.lock", "2024.03.04", "quote.schema", "sym", "sym.crc", "trade.schema"];
        assert_eq!(entries(dir.path()), root, "no staging left; each table's schema recorded");

        // A second end of day for the date: trade merged (appended, re-sorted), a
        // new table added, quote carried over.
        let more = longs(&[4, 0]);
        let extra = longs(&[7]);
        db.write_partition(
            date,
            &[
                PartitionTable { name: "trade", table: &more, how: &sorted },
                PartitionTable { name: "extra", table: &extra, how: &sorted },
            ],
        )
        .unwrap();
        assert_eq!(x_values(&db, date, "trade"), [0, 2, 4, 1, 3], "A rows then B rows, each by x");
        assert_eq!(x_values(&db, date, "quote"), [10, 11]);
        assert_eq!(db.tables(Some(date)).unwrap(), ["extra", "quote", "trade"]);
        let PartitionStatus::Complete(record) = db.partition(date).unwrap().unwrap().status else { panic!() };
        assert_eq!(record.rows("trade"), Some(5));

        // `strata import` into the partition goes the same way; other columns are
        // refused (by the table's schema, before the merge would find them).
        let other = Table::new(vec![("y".into(), Column::from_values(ColumnType::Long, vec![1i64]).unwrap())]).unwrap();
        let err = db
            .write_table(&TableLocation::Partition(date, "trade".into()), &other, &TableWrite::default())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("table trade: column sym of the table's schema (symbol) is missing"), "{err}");
        assert_eq!(x_values(&db, date, "trade"), [0, 2, 4, 1, 3], "untouched by the refused write");
        let root =
            [".partition-write.lock", "2024.03.04", "extra.schema", "quote.schema", "sym", "sym.crc", "trade.schema"];
        assert_eq!(entries(dir.path()), root);
    }

    #[test]
    fn an_end_of_day_of_other_types_is_refused_and_a_database_without_records_adopts_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let (day1, day2): (Date, Date) = ("2024.03.04".parse().unwrap(), "2024.03.05".parse().unwrap());
        let ints = |v: &[i32]| {
            Table::new(vec![
                ("sym".into(), Column::from_symbols(v.iter().map(|_| "A"))),
                ("x".into(), Column::from_values(ColumnType::Int, v.to_vec()).unwrap()),
            ])
            .unwrap()
        };
        let how = TableWrite::default();
        db.write_partition(day1, &[PartitionTable { name: "trade", table: &longs(&[1, 2]), how: &how }]).unwrap();
        let err = db.write_partition(day2, &[PartitionTable { name: "trade", table: &ints(&[3]), how: &how }]);
        let err = err.unwrap_err().to_string();
        assert!(
            err.starts_with("table trade: column x is int in the new rows but long in the table's schema"),
            "{err}"
        );
        assert!(db.partition(day2).unwrap().is_none(), "nothing written");

        // Without its record (a database from before records), the schema comes from
        // the newest partition, and the next write records it.
        fs::remove_file(TableSchema::path(dir.path(), "trade")).unwrap();
        let err = db.write_table(&TableLocation::Partition(day2, "trade".into()), &ints(&[3]), &how).unwrap_err();
        assert!(err.to_string().contains("schema of") && err.to_string().contains("2024.03.04/trade"), "{err}");
        let outcomes = db
            .write_partition_as(
                day2,
                &[PartitionTable { name: "trade", table: &longs(&[3]), how: &how }],
                WriteMode::Fail,
                &NoProgress,
            )
            .unwrap();
        assert!(outcomes[0].schema_recorded && outcomes[0].rows_before.is_none(), "{outcomes:?}");
        assert_eq!(db.table_schema("trade").unwrap(), Some(TableSchema::of("trade", &longs(&[3]))));
        // Replacing the only partition of a table may change its schema.
        let only = |table: &Table| {
            db.write_table_as(
                &TableLocation::Partition(day1, "solo".into()),
                table,
                &how,
                WriteMode::Replace,
                &NoProgress,
            )
        };
        only(&longs(&[1])).unwrap();
        assert!(only(&ints(&[1])).unwrap().schema_recorded);
        assert_eq!(db.table_schema("solo").unwrap().unwrap().type_of("x"), Some(ColumnType::Int));
    }

    #[test]
    fn appends_extend_strings_symbols_and_compressed_columns_and_recheck_attributes() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let rows = |ids: &[&str], syms: &[&str]| {
            Table::new(vec![
                ("id".into(), Column::from_strings(ids.iter().copied())),
                ("sym".into(), Column::from_symbols(syms.iter().copied())),
                ("x".into(), Column::from_values(ColumnType::Long, (0..ids.len() as i64).collect()).unwrap()),
            ])
            .unwrap()
        };
        let how = TableWrite {
            spec: TableSpec::uniform("zstd:1@12".parse().unwrap()),
            attributes: vec![("id".into(), Attribute::Sorted)],
            ..Default::default()
        };
        let day: Date = "2024.03.06".parse().unwrap();
        for location in [TableLocation::Splayed("t".into()), TableLocation::Partition(day, "t".into())] {
            let log = ProgressLog::default();
            db.write_table_as(&location, &rows(&["a", "b"], &["X", "Y"]), &how, WriteMode::Fail, &log).unwrap();
            let grown =
                db.write_table_as(&location, &rows(&["c", "dd"], &["Z", "X"]), &how, WriteMode::Append, &log).unwrap();
            assert_eq!((grown.rows_before, grown.rows_after, grown.dropped.len()), (Some(2), 4, 0), "{location:?}");
            // Per write: id's bytes and offsets (3 x 8), sym's keys (2 x 4), x (2 x 8).
            let steps = log.complete_steps().unwrap();
            let steps: Vec<_> = steps.iter().map(|s| (s.name.as_str(), s.total, s.advances.len())).collect();
            assert_eq!(steps, [("writing t", 2 + 24 + 8 + 16, 3), ("appending to t", 3 + 24 + 8 + 16, 3)]);
            let t = db.read_table(&location).unwrap();
            assert_eq!((0..4).map(|i| t.column("id").unwrap().string(i)).collect::<Vec<_>>(), ["a", "b", "c", "dd"]);
            assert_eq!((0..4).map(|i| t.column("sym").unwrap().symbol(i)).collect::<Vec<_>>(), ["X", "Y", "Z", "X"]);
            assert_eq!(t.column("x").unwrap().values::<i64>(), [0, 1, 0, 1]);
            let stats = db.open_table(&location).unwrap().stats().unwrap();
            assert!(stats.iter().all(|c| c.spec.to_string() == "zstd:1@12"), "{stats:?}");
            assert_eq!(stats[0].attribute, Attribute::Sorted);

            // An id that steps back: sorted no longer holds, and the append says so.
            let broke = db.write_table_as(
                &location,
                &rows(&["b"], &["Y"]),
                &TableWrite::default(),
                WriteMode::Append,
                &NoProgress,
            );
            let dropped = broke.unwrap().dropped;
            assert_eq!((dropped[0].column.as_str(), dropped[0].attribute), ("id", Attribute::Sorted));
            assert!(dropped[0].reason.contains("row 4"), "{}", dropped[0].reason);
            let stats = db.open_table(&location).unwrap().stats().unwrap();
            assert_eq!((stats[0].attribute, stats[0].rows), (Attribute::None, 5));
            // Without an attribute, strings are appended in place: offsets shifted past
            // the stored bytes.
            let appended = rows(&["e", ""], &["W", "X"]);
            db.write_table_as(&location, &appended, &TableWrite::default(), WriteMode::Append, &NoProgress).unwrap();
            let t = db.read_table(&location).unwrap();
            let ids: Vec<_> = (0..7).map(|i| t.column("id").unwrap().string(i)).collect();
            assert_eq!(ids, ["a", "b", "c", "dd", "b", "e", ""]);
            assert_eq!(t.column("sym").unwrap().symbol(5), "W");
            let report = crate::verify::verify_database(&db, &Default::default()).unwrap();
            assert!(report.is_intact(), "{:?}", report.findings);
        }
    }

    #[test]
    fn only_what_the_record_lists_is_served() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path()).unwrap();
        let date: Date = "2024.03.05".parse().unwrap();
        let how = TableWrite::default();
        db.write_table(&TableLocation::Partition(date, "trade".into()), &longs(&[1]), &how).unwrap();
        let part = db.partition_dir(date);

        // A table directory the record does not list (a writer that died before
        // its record) is not served.
        write_splayed(&part.join("quote"), &longs(&[2]), &WriteOptions::default()).unwrap();
        assert_eq!(db.tables(Some(date)).unwrap(), ["trade"]);
        assert_eq!(db.partition(date).unwrap().unwrap().unlisted, ["quote"]);
        assert!(db.open_table(&TableLocation::Partition(date, "quote".into())).is_err());

        // A damaged record: nothing of the partition is served, and writes are refused.
        let record = part.join(crate::PARTITION_RECORD);
        let text = fs::read_to_string(&record).unwrap();
        fs::write(&record, text.replace("trade 1", "trade 2")).unwrap();
        let err = db.partitions().unwrap_err().to_string();
        assert!(err.contains("partition 2024.03.05 cannot be served") && err.contains("checksum"), "{err}");
        assert_eq!(db.tables(Some(date)).unwrap(), Vec::<String>::new());
        let err = db.write_table(&TableLocation::Partition(date, "x".into()), &longs(&[1]), &how).unwrap_err();
        assert!(err.to_string().contains("refusing to write"), "{err}");
        // ... while a write of another day goes on.
        let next: Date = "2024.03.06".parse().unwrap();
        db.write_table(&TableLocation::Partition(next, "trade".into()), &longs(&[7]), &how).unwrap();

        // No record at all (written before records existed): served as it is.
        fs::remove_file(&record).unwrap();
        assert_eq!(db.partitions().unwrap(), [date, next]);
        assert_eq!(db.tables(Some(date)).unwrap(), ["quote", "trade"]);
        assert_eq!(db.partition(date).unwrap().unwrap().status, PartitionStatus::NoRecord);
        // ... and the next write gives it a record listing everything.
        db.write_table(&TableLocation::Partition(date, "extra".into()), &longs(&[5]), &how).unwrap();
        let PartitionStatus::Complete(record) = db.partition(date).unwrap().unwrap().status else { panic!() };
        assert_eq!(record.tables, [("extra".to_string(), 1), ("quote".to_string(), 1), ("trade".to_string(), 1)]);
    }

    #[test]
    fn staging_leftovers_are_never_served_and_the_next_write_clears_them() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SEGMENTS_FILE), "seg0\nseg1\n").unwrap();
        let db = Database::open(dir.path()).unwrap();
        let date: Date = "2024.03.06".parse().unwrap();
        let segment = db.partition_dir(date).parent().unwrap().to_path_buf();
        assert_eq!(segment, dir.path().join(format!("seg{}", date.0 % 2)), "the segment the date maps to");
        // A writer killed mid-write left a staging directory with one table in it.
        let staging = segment.join(format!(".{date}.staging-999999-0"));
        write_splayed(&staging.join("trade"), &longs(&[1]), &WriteOptions::default()).unwrap();
        assert_eq!(db.partitions().unwrap(), []);
        assert_eq!(db.survey().unwrap().leftovers, std::slice::from_ref(&staging));
        db.write_table(&TableLocation::Partition(date, "quote".into()), &longs(&[2]), &TableWrite::default()).unwrap();
        assert!(!staging.exists());
        assert_eq!(db.partitions().unwrap(), [date]);
        assert_eq!(db.tables(Some(date)).unwrap(), ["quote"]);
        assert!(db.survey().unwrap().leftovers.is_empty());
        // A partition a dead writer moved aside (no-exchange path) is put back.
        let retired = segment.join(format!(".{date}.retired-999999-0"));
        fs::rename(db.partition_dir(date), &retired).unwrap();
        db.write_table(&TableLocation::Partition(date, "trade".into()), &longs(&[3]), &TableWrite::default()).unwrap();
        assert_eq!(db.tables(Some(date)).unwrap(), ["quote", "trade"]);
        assert!(!retired.exists());
    }
}
