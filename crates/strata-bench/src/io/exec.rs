//! One worker's directory and how each catalogue test is set up (untimed) and run
//! (timed) in it.
//!
//! ```text
//! readtiny readsmall readmedium readlarge readhuge   long vectors
//! kdbdb/sym  kdbdb/tbl/{.d,sym,floatcol}             the table the sort tests use
//! tinyappend randomread0..3                          append targets, random-read files
//! readbinary mmap openclose flock                    files the read and meta tests use
//! ```

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_store::column::ColumnFile;
use strata_store::{Column, ColumnType, Durability, SymFile, write_atomic};

use super::IoBenchError;
use super::catalogue::{Block, Order, Suite, Test, Vector};
use super::ops::{self, RandomReads};
use super::results::Work;
use super::scale::{RANDOM_FILES, SYMBOLS, Scale};
use super::vectors::{self, SEED};
use crate::rng::SplitMix64;

const TABLE: &str = "kdbdb/tbl";
const SYM: &str = "kdbdb/sym";
const TINY_APPENDS: usize = 200;
const LOCK_SYMBOLS: [&str; 5] = ["aaa", "bbb", "ccc", "ddd", "eee"];
/// The value Nano writes into the float column's replaced positions.
#[allow(clippy::approx_constant)] // Nano's literal `3.14`, not an approximation of pi.
const NANO_FLOAT: f64 = 3.14;

/// What a test's set-up leaves for its timed run.
enum Prepared {
    None,
    /// The vector to write or append.
    Vector(Column),
    /// Positions and value to overwrite, and how many times.
    Replace {
        positions: Vec<u64>,
        value: [u8; 8],
        repeats: usize,
    },
    /// A random-read plan, with the files already mapped unless each read maps anew.
    RandomReads {
        plan: RandomReads,
        mapped: Vec<ColumnFile>,
    },
    /// Values in the file a sync test syncs (Nano's `length` column).
    Count(u64),
}

/// A worker's directory and sizes.
pub struct Workspace {
    dir: PathBuf,
    scale: Scale,
    symbols: Arc<Vec<String>>,
    prepared: Prepared,
}

impl Workspace {
    /// The workspace in `dir` (created if missing).
    pub fn new(dir: &Path, scale: Scale) -> Result<Workspace, IoBenchError> {
        std::fs::create_dir_all(dir.join(TABLE)).map_err(|e| IoBenchError::io(dir, e))?;
        let symbols = Arc::new(vectors::symbol_names(SYMBOLS, SEED));
        Ok(Workspace { dir: dir.to_path_buf(), scale, symbols, prepared: Prepared::None })
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    fn random_files(&self) -> Vec<PathBuf> {
        (0..RANDOM_FILES).map(|i| self.path(&format!("randomread{i}"))).collect()
    }

    /// Untimed set-up before a suite's first test: the write suite creates the files
    /// other suites read but do not time writing (Nano's `makeTable` and `prepare`).
    pub fn set_up(&self, suite: Suite) -> Result<(), IoBenchError> {
        if suite != Suite::Write {
            return Ok(());
        }
        let order = self.path(&format!("{TABLE}/.d"));
        write_atomic(&order, b"sym\nfloatcol\n", Durability::Rename)?;
        let small = vectors::int_vector(self.scale.small, SEED);
        let binary = vectors::longs(small.iter().copied().cycle().take(64 * small.len()).collect());
        let tiny = vectors::longs(vectors::int_vector(self.scale.tiny, SEED));
        let written = [("readbinary", &binary), ("mmap", &tiny), ("openclose", &tiny)];
        for (name, column) in written {
            ops::write_column(&self.path(name), column)?;
        }
        SymFile::new(&self.path("flock")).enumerate(&LOCK_SYMBOLS, Durability::Rename)?;
        let mut synced: Vec<PathBuf> = written.iter().map(|(name, _)| self.path(name)).collect();
        synced.extend([order, self.path("flock")]);
        ops::sync_files(&synced)?;
        Ok(())
    }

    /// The vector `v` as Nano makes it.
    fn vector(&self, v: Vector) -> Column {
        let s = &self.scale;
        match v {
            Vector::IntTiny => vectors::longs(vectors::int_vector(s.tiny, SEED)),
            Vector::IntSmall => vectors::longs(vectors::int_vector(s.small, SEED)),
            Vector::IntMedium => vectors::longs(vectors::int_vector(s.medium, SEED)),
            Vector::IntLarge => vectors::longs(vectors::int_vector(s.large, SEED)),
            Vector::IntHuge => vectors::til(s.huge),
            Vector::FloatLarge => vectors::floats(vectors::float_vector(s.large, SEED)),
            Vector::SymLarge => vectors::symbol_column(s.large, &self.symbols, SEED),
        }
    }

    /// Untimed set-up of `test`: builds what its run needs.
    pub fn prepare(&mut self, test: Test) -> Result<(), IoBenchError> {
        // Drop the previous test's data first: the next may need the memory.
        self.prepared = Prepared::None;
        self.prepared = match test {
            Test::Write(v) => Prepared::Vector(self.vector(v)),
            Test::Sync(v, _) => Prepared::Count(ColumnFile::open(&self.path(v.file()))?.len() as u64),
            Test::Replace(v, order) => self.prepare_replace(v, order)?,
            Test::AppendTiny => {
                ops::write_column(&self.path("tinyappend"), &vectors::longs(Vec::new()))?;
                Prepared::Vector(self.vector(Vector::IntTiny))
            }
            Test::AppendSmall => {
                for path in self.random_files() {
                    ops::write_column(&path, &vectors::longs(Vec::new()))?;
                }
                Prepared::Vector(self.vector(Vector::IntSmall))
            }
            Test::AppendMidSym => Prepared::Vector(self.vector(Vector::SymLarge)),
            Test::AppendMidFloat => Prepared::Vector(self.vector(Vector::FloatLarge)),
            Test::RandomRead { block, mmap, .. } => self.prepare_random_reads(block, mmap)?,
            _ => Prepared::None,
        };
        Ok(())
    }

    /// Nano's replace: a fifth of a tiny, small or medium vector's positions many
    /// times; one in `100 * decay` of the float column's and one in `5000 * decay` of
    /// the huge vector's once, at random positions or the same ones ascending.
    fn prepare_replace(&self, v: Vector, order: Order) -> Result<Prepared, IoBenchError> {
        let s = &self.scale;
        let len = ColumnFile::open(&self.path(v.file()))?.len() as u64;
        let (count, repeats, value) = match v {
            Vector::IntTiny => (len / 5, s.replace_repeats(20_000), 42i64.to_le_bytes()),
            Vector::IntSmall => (len / 5, s.replace_repeats(2_000), 42i64.to_le_bytes()),
            Vector::IntMedium => (len / 5, s.replace_repeats(500), 42i64.to_le_bytes()),
            Vector::FloatLarge => ((len as f64 / (100.0 * s.decay)) as u64, 1, NANO_FLOAT.to_le_bytes()),
            Vector::IntHuge if order == Order::Sorted => {
                ((len as f64 / (5000.0 * s.decay)) as u64, 1, 1089i64.to_le_bytes())
            }
            Vector::IntHuge => ((len as f64 / (5000.0 * s.decay)) as u64, 1, 42i64.to_le_bytes()),
            other => return Err(IoBenchError::Invalid(format!("no replace test for {}", other.label()))),
        };
        // The sorted replace overwrites the random one's positions, ascending.
        let mut positions = vectors::distinct_sample(&mut SplitMix64::new(SEED), len, count.max(1) as usize);
        if order == Order::Sorted {
            positions.sort_unstable();
        }
        Ok(Prepared::Replace { positions, value, repeats })
    }

    fn prepare_random_reads(&self, block: Block, mmap: bool) -> Result<Prepared, IoBenchError> {
        let paths = self.random_files();
        let file_len = ColumnFile::open(&paths[0])?.len();
        if file_len < block.longs() {
            return Err(IoBenchError::Invalid(format!(
                "{}: {file_len} values, fewer than one {} request of {} values",
                paths[0].display(),
                block.label(),
                block.longs()
            )));
        }
        let plan = RandomReads::plan(paths.len(), file_len, block.longs(), self.scale.random_read_bytes, block.seed());
        let mapped =
            if mmap { Vec::new() } else { paths.iter().map(|p| ColumnFile::open(p)).collect::<Result<_, _>>()? };
        Ok(Prepared::RandomReads { plan, mapped })
    }

    /// Runs `test` (prepared first) and says how much it did.
    pub fn run(&mut self, test: Test) -> Result<Work, IoBenchError> {
        let prepared = std::mem::replace(&mut self.prepared, Prepared::None);
        let once = |amount: u64, length: u64| Work { amount, repeat: 1, length };
        let table = self.path(TABLE);
        let sym = self.path(SYM);
        Ok(match (test, prepared) {
            (Test::Write(Vector::SymLarge), Prepared::Vector(column)) => {
                let keyed = ops::enumerate(&sym, &column)?;
                once(ops::write_column(&self.path(Vector::SymLarge.file()), &keyed)?, column.len() as u64)
            }
            (Test::Write(v), Prepared::Vector(column)) => {
                once(ops::write_column(&self.path(v.file()), &column)?, column.len() as u64)
            }
            (Test::Sync(v, _), Prepared::Count(values)) => once(ops::sync_files(&[self.path(v.file())])?, values),
            (Test::Replace(v, _), Prepared::Replace { positions, value, repeats }) => {
                let path = self.path(v.file());
                for _ in 0..repeats {
                    ops::replace(&path, &positions, value)?;
                }
                let n = positions.len() as u64;
                Work { amount: repeats as u64 * n * 8, repeat: repeats as u64, length: n }
            }
            (Test::AppendTiny, Prepared::Vector(column)) => {
                let path = self.path("tinyappend");
                self.append_then_sync(&[path], TINY_APPENDS, &column)?
            }
            (Test::AppendSmall, Prepared::Vector(column)) => {
                self.append_then_sync(&self.random_files(), self.scale.random_chunks, &column)?
            }
            (Test::AppendMidSym, Prepared::Vector(column)) => {
                let path = self.path(Vector::SymLarge.file());
                for _ in 0..self.scale.table_chunks {
                    ops::append(&path, ops::enumerate(&sym, &column)?.value_bytes())?;
                }
                ops::sync_files(&[path])?;
                let chunks = self.scale.table_chunks as u64;
                Work { amount: chunks * column.value_bytes().len() as u64, repeat: chunks, length: column.len() as u64 }
            }
            (Test::AppendMidFloat, Prepared::Vector(column)) => {
                let path = self.path(Vector::FloatLarge.file());
                self.append_then_sync(&[path], self.scale.table_chunks, &column)?
            }
            (Test::CloseOpen, _) => self.repeat(|| {
                let path = self.path("openclose");
                std::fs::File::open(&path).map(drop).map_err(|e| IoBenchError::io(&path, e))
            })?,
            (Test::Size, _) => self.repeat(|| {
                let path = self.path(Vector::IntLarge.file());
                std::fs::metadata(&path).map(|m| black_box(m.len())).map(drop).map_err(|e| IoBenchError::io(&path, e))
            })?,
            (Test::Mmap, _) => self.repeat(|| {
                black_box(ColumnFile::open(&self.path("mmap"))?.all_values()?);
                Ok(())
            })?,
            (Test::Lock, _) => self.repeat(|| {
                SymFile::new(&self.path("flock")).enumerate(&LOCK_SYMBOLS, Durability::Rename)?;
                Ok(())
            })?,
            (Test::SeqRead(v) | Test::Reread(v), _) => {
                let bytes = ops::read_touching(&self.path(v.file()))?;
                once(bytes, bytes / v_width(v))
            }
            (Test::ReadBinary { .. }, _) => {
                let path = self.path("readbinary");
                let bytes = std::fs::read(&path).map_err(|e| IoBenchError::io(&path, e))?.len() as u64;
                once(bytes, bytes / 8)
            }
            (Test::RandomRead { .. }, Prepared::RandomReads { plan, mapped }) => Work {
                amount: plan.run(&self.random_files(), &mapped)?,
                repeat: plan.requests.len() as u64,
                length: plan.longs as u64,
            },
            (Test::DiskSort, _) => once(ops::disk_sort(&sym, &table)?, self.scale.table_rows() as u64),
            (Test::SyncTableAfterSort, _) => once(ops::sync_dir(&table)?, self.scale.table_rows() as u64),
            (Test::AddAttribute, _) => once(ops::add_parted(&sym, &table)?.0, self.scale.table_rows() as u64),
            (Test::SyncAfterAttribute, _) => {
                let files = [self.path(Vector::SymLarge.file()), table.join("sym.parted")];
                once(ops::sync_files(&files)?, self.scale.table_rows() as u64)
            }
            (test, _) => return Err(IoBenchError::Invalid(format!("{} ran without its set-up", test.id()))),
        })
    }

    /// Appends `column` `chunks` times to each file, then syncs them all once.
    fn append_then_sync(&self, paths: &[PathBuf], chunks: usize, column: &Column) -> Result<Work, IoBenchError> {
        for path in paths {
            for _ in 0..chunks {
                ops::append(path, column.value_bytes())?;
            }
        }
        ops::sync_files(paths)?;
        let appends = (chunks * paths.len()) as u64;
        Ok(Work { amount: appends * column.value_bytes().len() as u64, repeat: appends, length: column.len() as u64 })
    }

    /// Runs a meta operation Nano's 50 000 times (scaled); the amount is the count.
    fn repeat(&self, mut operation: impl FnMut() -> Result<(), IoBenchError>) -> Result<Work, IoBenchError> {
        let n = self.scale.meta_repeats();
        for _ in 0..n {
            operation()?;
        }
        Ok(Work { amount: n as u64, repeat: n as u64, length: 1 })
    }
}

/// Bytes per value of vector `v`'s file.
fn v_width(v: Vector) -> u64 {
    match v {
        Vector::SymLarge => ColumnType::Symbol.width() as u64,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::scale::ScaleName;

    fn micro() -> Scale {
        let mut scale = Scale::preset(ScaleName::Tiny, 1);
        (scale.small, scale.medium, scale.large, scale.huge) = (4096, 8192, 1 << 14, 1 << 15);
        (scale.random_chunks, scale.random_read_bytes, scale.repeats) = (32, 64_000, 0.0001);
        scale
    }

    #[test]
    fn every_suite_runs_in_order_with_positive_work() {
        let dir = tempfile::tempdir().unwrap();
        let mut workspace = Workspace::new(dir.path(), micro()).unwrap();
        for suite in Suite::all() {
            workspace.set_up(suite).unwrap();
            for test in suite.tests() {
                workspace.prepare(test).unwrap();
                let work = workspace.run(test).unwrap_or_else(|e| panic!("{}: {e}", test.id()));
                assert!(work.amount > 0 && work.repeat > 0 && work.length > 0, "{}: {work:?}", test.id());
            }
        }
        // The sort left the table sorted by sym and parted.
        let domain = SymFile::new(&dir.path().join(SYM)).load().unwrap();
        let table = strata_store::SplayedTable::open(&dir.path().join(TABLE)).unwrap();
        let sym = table.read_column("sym", &domain).unwrap();
        assert_eq!(sym.len(), micro().table_rows());
        assert!((1..sym.len()).all(|i| sym.symbol(i - 1) <= sym.symbol(i)));
        assert_eq!(table.column_file("sym").unwrap().attribute(), strata_store::Attribute::Parted);
    }

    #[test]
    fn a_run_without_its_set_up_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut workspace = Workspace::new(dir.path(), micro()).unwrap();
        let err = workspace.run(Test::Write(Vector::IntTiny)).unwrap_err().to_string();
        assert!(err.contains(".write.setIntTiny ran without its set-up"), "{err}");
    }
}
