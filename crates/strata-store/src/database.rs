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

use std::fs;
use std::path::{Path, PathBuf};

use crate::column_data::{Column, SymbolDomain};
use crate::config::DbConfig;
use crate::date::Date;
use crate::error::{IoContext, Result, StoreError};
use crate::splayed::{SplayedTable, WriteOptions, write_splayed};
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

    /// Every date partition, ascending, across all segments.
    pub fn partitions(&self) -> Result<Vec<Date>> {
        let roots = if self.segments.is_empty() { vec![self.root.clone()] } else { self.segments.clone() };
        let mut dates = Vec::new();
        for root in roots {
            let entries = match fs::read_dir(&root) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::Io { path: root, source: e }),
            };
            for entry in entries {
                let entry = entry.at(&root)?;
                if let Some(date) = entry.file_name().to_str().and_then(|n| n.parse::<Date>().ok())
                    && entry.path().is_dir()
                {
                    dates.push(date);
                }
            }
        }
        dates.sort();
        dates.dedup();
        Ok(dates)
    }

    /// The directory of partition `date`: in the root, or in segment
    /// `days mod segments` when `par.txt` lists segments (as kdb+ spreads dates).
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

    /// Tables in partition `date`, or the splayed tables at the root for `None`.
    pub fn tables(&self, date: Option<Date>) -> Result<Vec<String>> {
        let dir = match date {
            Some(d) => self.partition_dir(d),
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

    /// Opens a table for reading.
    pub fn open_table(&self, location: &TableLocation) -> Result<SplayedTable> {
        let dir = self.table_dir(location);
        if !dir.join(crate::splayed::COLUMN_ORDER_FILE).is_file() {
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

    /// Reads a whole table.
    pub fn read_table(&self, location: &TableLocation) -> Result<Table> {
        let domain = self.sym.load()?;
        self.open_table(location)?.read(&domain)
    }

    /// The current symbol list.
    pub fn symbols(&self) -> Result<SymbolDomain> {
        self.sym.load()
    }

    /// Writes `table` at `location`: sorts it if asked, keys symbol columns against
    /// the sym file, checks attributes, then writes every column (compressed as the
    /// table spec, else the database default, says) and swaps the table into place.
    pub fn write_table(&self, location: &TableLocation, table: &Table, how: &TableWrite) -> Result<()> {
        if !is_valid_name(location.table()) {
            return Err(StoreError::Invalid(format!("table name {:?} is not an identifier", location.table())));
        }
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
        write_splayed(&self.table_dir(location), table, &options)
    }

    /// Reads one column of a table.
    pub fn read_column(&self, location: &TableLocation, column: &str) -> Result<Column> {
        let domain = self.sym.load()?;
        self.open_table(location)?.read_column(column, &domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durable::Durability;

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
        assert!(dir.path().join("seg0").read_dir().unwrap().count() == 1);
        assert!(dir.path().join("seg1").read_dir().unwrap().count() == 1);
        assert!(dir.path().join("sym").is_file(), "one sym file at the root");
    }
}
