//! KX Nano's disk test list as Strata runs it: test ids, display names, test types,
//! units and the suites that group them, in Nano's order.
//!
//! Display names and test types are Nano's, so result files line up with Nano's own
//! and with notebooks written for them; ids follow Nano's `.suite.name` form.

use std::fmt;
use std::str::FromStr;

/// A vector Nano writes and reads, by element type and size class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vector {
    /// Nano's tiny long vector (16 KB: fits L1).
    IntTiny,
    /// Nano's small long vector (512 KB: fits L2).
    IntSmall,
    /// Nano's medium long vector (4 MB: fits L3).
    IntMedium,
    /// The large long vector (the file the `size` meta test stats).
    IntLarge,
    /// The huge long vector (`til n`), the sequential write and read test.
    IntHuge,
    /// The large float vector: the table's `floatcol`.
    FloatLarge,
    /// The large symbol vector: the table's `sym`.
    SymLarge,
}

impl Vector {
    /// Nano's words for the vector, as in "write int tiny".
    pub fn label(self) -> &'static str {
        match self {
            Vector::IntTiny => "int tiny",
            Vector::IntSmall => "int small",
            Vector::IntMedium => "int medium",
            Vector::IntLarge => "int large",
            Vector::IntHuge => "int huge",
            Vector::FloatLarge => "float large",
            Vector::SymLarge => "sym large",
        }
    }

    /// The vector's part of a test id, as in `.write.setIntTiny`.
    fn id_part(self) -> &'static str {
        match self {
            Vector::IntTiny => "IntTiny",
            Vector::IntSmall => "IntSmall",
            Vector::IntMedium => "IntMedium",
            Vector::IntLarge => "IntLarge",
            Vector::IntHuge => "IntHuge",
            Vector::FloatLarge => "FloatLarge",
            Vector::SymLarge => "SymLarge",
        }
    }

    /// The file holding the vector, relative to a worker's directory.
    pub fn file(self) -> &'static str {
        match self {
            Vector::IntTiny => "readtiny",
            Vector::IntSmall => "readsmall",
            Vector::IntMedium => "readmedium",
            Vector::IntLarge => "readlarge",
            Vector::IntHuge => "readhuge",
            Vector::FloatLarge => "kdbdb/tbl/floatcol",
            Vector::SymLarge => "kdbdb/tbl/sym",
        }
    }
}

/// Which write a sync test follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncAfter {
    /// The vector's first write.
    Write,
    /// A replace at random positions.
    Replace,
    /// A replace at ascending positions.
    SortedReplace,
}

/// The order of the positions a replace test overwrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Random positions, as drawn.
    Random,
    /// The same positions, ascending.
    Sorted,
}

/// The bytes a random-read test reads per request (Nano's list sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Block {
    /// 1 000 000 bytes.
    OneMeg,
    /// 64 000 bytes.
    SixtyFourK,
    /// 4 000 bytes.
    FourK,
}

impl Block {
    /// Every block size, in the order Nano runs them.
    pub const ALL: [Block; 3] = [Block::OneMeg, Block::SixtyFourK, Block::FourK];

    /// Bytes per request.
    pub fn bytes(self) -> usize {
        match self {
            Block::OneMeg => 1_000_000,
            Block::SixtyFourK => 64_000,
            Block::FourK => 4_000,
        }
    }

    /// Longs per request.
    pub fn longs(self) -> usize {
        self.bytes() / 8
    }

    /// Nano's short name: `1M`, `64k`, `4k`.
    pub fn label(self) -> &'static str {
        match self {
            Block::OneMeg => "1M",
            Block::SixtyFourK => "64k",
            Block::FourK => "4k",
        }
    }

    /// Nano's random seed for this size (1, 2, 3 in run order), so every worker and
    /// every run reads the same offsets.
    pub fn seed(self) -> u64 {
        Block::ALL.iter().position(|b| *b == self).expect("listed") as u64 + 1
    }
}

/// How a test's result is expressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Throughput: decimal megabytes (10^6 bytes) per second.
    MBps,
    /// Latency: milliseconds per operation.
    Ms,
}

impl Unit {
    /// The unit as Nano writes it in its result files.
    pub fn psv(self) -> &'static str {
        match self {
            Unit::MBps => "MB/sec",
            Unit::Ms => "ms",
        }
    }
}

/// One test of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Test {
    /// Write a vector as a new column file.
    Write(Vector),
    /// fsync a vector's file.
    Sync(Vector, SyncAfter),
    /// Overwrite some positions of a vector's file.
    Replace(Vector, Order),
    /// Append the tiny vector 200 times to a column file, then fsync.
    AppendTiny,
    /// Build the four random-read files by appending small vectors, then fsync.
    AppendSmall,
    /// Append the large symbol vector to the table's `sym` column, then fsync.
    AppendMidSym,
    /// Append the large float vector to the table's `floatcol`, then fsync.
    AppendMidFloat,
    /// Open and close a file.
    CloseOpen,
    /// The size of a file.
    Size,
    /// Open (map) a tiny column file.
    Mmap,
    /// Enumerate five symbols against a sym file under its lock.
    Lock,
    /// Map a column file and touch every page, cold.
    SeqRead(Vector),
    /// The same, from the page cache.
    Reread(Vector),
    /// Read a whole file with `read(2)`, cold or from the page cache.
    ReadBinary {
        /// Whether this is the page-cache pass.
        cached: bool,
    },
    /// Read blocks at random page-aligned offsets of four files.
    RandomRead {
        /// Bytes per request.
        block: Block,
        /// Whether every request maps its file anew (Nano's "mmap," tests).
        mmap: bool,
        /// Whether this is the page-cache pass (run right after the cold one).
        cached: bool,
    },
    /// Sort the splayed table by `sym` on disk.
    DiskSort,
    /// fsync every file of the sorted table.
    SyncTableAfterSort,
    /// Rewrite the table's `sym` column with the parted attribute.
    AddAttribute,
    /// fsync the parted column and its index.
    SyncAfterAttribute,
}

impl Test {
    /// Nano-style id, `.suite.name`.
    pub fn id(&self) -> String {
        match *self {
            Test::Write(v) => format!(".write.set{}", v.id_part()),
            Test::Sync(v, SyncAfter::Write) => format!(".write.sync{}", v.id_part()),
            Test::Sync(v, SyncAfter::Replace) => format!(".write.sync{}AfterReplace", v.id_part()),
            Test::Sync(v, SyncAfter::SortedReplace) => format!(".write.sync{}AfterSortedReplace", v.id_part()),
            Test::Replace(v, Order::Random) => format!(".write.replace{}", v.id_part()),
            Test::Replace(v, Order::Sorted) => format!(".write.sortedReplace{}", v.id_part()),
            Test::AppendTiny => ".write.tinyAppend".into(),
            Test::AppendSmall => ".write.appendSmall".into(),
            Test::AppendMidSym => ".write.appendLargeSym".into(),
            Test::AppendMidFloat => ".write.appendLargeFloat".into(),
            Test::CloseOpen => ".meta.openclose".into(),
            Test::Size => ".meta.size".into(),
            Test::Mmap => ".meta.get".into(),
            Test::Lock => ".meta.lock".into(),
            Test::SeqRead(v) => format!(".read.seq{}", v.id_part()),
            Test::Reread(v) => format!(".reread.seq{}", v.id_part()),
            Test::ReadBinary { cached: false } => ".read.binary".into(),
            Test::ReadBinary { cached: true } => ".reread.binary".into(),
            Test::RandomRead { block, mmap, cached } => format!(
                ".randomread.random{}_{}{}",
                if cached { "reread" } else { "read" },
                block.bytes(),
                if mmap { "-withmmap" } else { "" }
            ),
            Test::DiskSort => ".xasc.diskSort".into(),
            Test::SyncTableAfterSort => ".xasc.syncTable".into(),
            Test::AddAttribute => ".xasc.addAttribute".into(),
            Test::SyncAfterAttribute => ".xasc.syncColumn".into(),
        }
    }

    /// Nano's display name (the `test` column).
    pub fn name(&self) -> String {
        match *self {
            Test::Write(v) => format!("write {}", v.label()),
            Test::Sync(v, SyncAfter::Write) => format!("sync {}", v.label()),
            Test::Sync(v, SyncAfter::Replace) => format!("sync {} after replace", v.label()),
            Test::Sync(v, SyncAfter::SortedReplace) => format!("sync {} after sorted replace", v.label()),
            Test::Replace(Vector::IntTiny, _) => "open replace int tiny".into(),
            Test::Replace(v, Order::Random) => format!("open replace random {}", v.label()),
            Test::Replace(v, Order::Sorted) => format!("open replace sorted {}", v.label()),
            Test::AppendTiny => "open append tiny, sync once".into(),
            Test::AppendSmall => "open append small, sync once".into(),
            Test::AppendMidSym => "open append mid sym, sync once".into(),
            Test::AppendMidFloat => "open append mid float, sync once".into(),
            Test::CloseOpen => "close open".into(),
            Test::Size => "size".into(),
            Test::Mmap => "mmap".into(),
            Test::Lock => "lock".into(),
            Test::SeqRead(v) => format!("sequential read {}", v.label()),
            Test::Reread(v) => format!("sequential reread {}", v.label()),
            Test::ReadBinary { .. } => "sequential read binary".into(),
            Test::RandomRead { block, mmap, .. } => {
                format!("{}random read {}", if mmap { "mmap, " } else { "" }, block.label())
            }
            Test::DiskSort => "disk sort".into(),
            Test::SyncTableAfterSort => "sync table after sort".into(),
            Test::AddAttribute => "add attribute".into(),
            Test::SyncAfterAttribute => "sync column after parted attribute".into(),
        }
    }

    /// Nano's test type: where the bytes come from and go to.
    pub fn testtype(&self) -> &'static str {
        match *self {
            Test::Write(_)
            | Test::Sync(..)
            | Test::Replace(..)
            | Test::AppendTiny
            | Test::AppendSmall
            | Test::AppendMidSym
            | Test::AppendMidFloat
            | Test::SyncTableAfterSort
            | Test::SyncAfterAttribute => "write disk",
            Test::CloseOpen | Test::Size | Test::Lock => "meta",
            Test::Mmap | Test::ReadBinary { cached: false } | Test::RandomRead { cached: false, .. } => "read disk",
            Test::SeqRead(_) => "read disk write mem",
            Test::Reread(_) | Test::ReadBinary { cached: true } => "read mem write mem",
            Test::RandomRead { cached: true, .. } => "read mem",
            Test::DiskSort => "read write disk",
            Test::AddAttribute => "read mem write disk",
        }
    }

    /// The Strata call the test times (Nano's `qexpression` column holds the q code).
    pub fn qexpression(&self) -> &'static str {
        match *self {
            Test::Write(Vector::SymLarge) => "SymFile::enumerate_column; write_column_file",
            Test::Write(_) => "write_column_file",
            Test::Sync(..) | Test::SyncAfterAttribute => "File::sync_all",
            Test::Replace(..) => "ColumnFile::open; all_values; amend; write_column_file",
            Test::AppendMidSym => "SymFile::enumerate_column; append_column_file; sync_all",
            Test::AppendTiny | Test::AppendSmall | Test::AppendMidFloat => "append_column_file; sync_all",
            Test::CloseOpen => "File::open; close",
            Test::Size => "fs::metadata",
            Test::Mmap => "ColumnFile::open; all_values",
            Test::Lock => "SymFile::enumerate",
            Test::SeqRead(_) | Test::Reread(_) => "ColumnFile::open; all_values; touch pages",
            Test::ReadBinary { .. } => "fs::read",
            Test::RandomRead { mmap: false, .. } => "ColumnFile::values; copy",
            Test::RandomRead { mmap: true, .. } => "ColumnFile::open; values; copy",
            Test::DiskSort => "SplayedTable::read; Table::xasc; write_splayed",
            Test::SyncTableAfterSort => "File::sync_all (each file, table dir)",
            Test::AddAttribute => "read_column; check_attribute parted; write_column_file; write_index",
        }
    }

    /// Throughput or latency.
    pub fn unit(&self) -> Unit {
        match self {
            Test::CloseOpen | Test::Size | Test::Mmap | Test::Lock => Unit::Ms,
            _ => Unit::MBps,
        }
    }
}

/// A group of tests run by one set of worker processes, after which the workers
/// exit; the page cache is flushed before each suite but the reread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Suite {
    /// Writes, syncs, replaces and appends; builds every file the other suites use.
    Write,
    /// File-system metadata latency.
    Meta,
    /// Cold sequential reads.
    Read,
    /// The same reads from the page cache (no flush before).
    Reread,
    /// A cold then a cached pass of random reads.
    RandomRead {
        /// Bytes per request.
        block: Block,
        /// Whether every request maps its file anew.
        mmap: bool,
    },
    /// Sort the table on disk and add the parted attribute.
    Xasc,
}

impl Suite {
    /// Every suite in Nano's order (its `diskonly` scope).
    pub fn all() -> Vec<Suite> {
        let mut suites = vec![Suite::Write, Suite::Meta, Suite::Read, Suite::Reread];
        for block in Block::ALL {
            for mmap in [false, true] {
                suites.push(Suite::RandomRead { block, mmap });
            }
        }
        suites.push(Suite::Xasc);
        suites
    }

    /// Whether the page cache is flushed before the suite (all but the reread, which
    /// exists to measure the cache).
    pub fn flush_before(self) -> bool {
        self != Suite::Reread
    }

    /// The suite's tests, in run order.
    pub fn tests(self) -> Vec<Test> {
        use Vector::*;
        match self {
            Suite::Write => {
                let mut tests = Vec::new();
                for v in [IntTiny, IntSmall, IntMedium] {
                    tests.extend([Test::Write(v), Test::Sync(v, SyncAfter::Write), Test::Replace(v, Order::Random)]);
                }
                for v in [IntLarge, SymLarge] {
                    tests.extend([Test::Write(v), Test::Sync(v, SyncAfter::Write)]);
                }
                tests.extend([
                    Test::Write(FloatLarge),
                    Test::Sync(FloatLarge, SyncAfter::Write),
                    Test::Replace(FloatLarge, Order::Random),
                    Test::Sync(FloatLarge, SyncAfter::Replace),
                    Test::Write(IntHuge),
                    Test::Sync(IntHuge, SyncAfter::Write),
                    Test::Replace(IntHuge, Order::Random),
                    Test::Sync(IntHuge, SyncAfter::Replace),
                    Test::Replace(IntHuge, Order::Sorted),
                    Test::Sync(IntHuge, SyncAfter::SortedReplace),
                    Test::AppendTiny,
                    Test::AppendSmall,
                    Test::AppendMidSym,
                    Test::AppendMidFloat,
                ]);
                tests
            }
            Suite::Meta => vec![Test::CloseOpen, Test::Size, Test::Mmap, Test::Lock],
            Suite::Read => {
                let mut tests: Vec<Test> =
                    [IntTiny, IntSmall, IntMedium, FloatLarge, IntHuge].into_iter().map(Test::SeqRead).collect();
                tests.push(Test::ReadBinary { cached: false });
                tests
            }
            Suite::Reread => {
                let mut tests: Vec<Test> =
                    [IntSmall, IntMedium, FloatLarge, IntHuge].into_iter().map(Test::Reread).collect();
                tests.push(Test::ReadBinary { cached: true });
                tests
            }
            Suite::RandomRead { block, mmap } => {
                vec![Test::RandomRead { block, mmap, cached: false }, Test::RandomRead { block, mmap, cached: true }]
            }
            Suite::Xasc => vec![Test::DiskSort, Test::SyncTableAfterSort, Test::AddAttribute, Test::SyncAfterAttribute],
        }
    }
}

impl fmt::Display for Suite {
    /// The suite as the worker's `--suite` argument spells it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Suite::Write => f.write_str("write"),
            Suite::Meta => f.write_str("meta"),
            Suite::Read => f.write_str("read"),
            Suite::Reread => f.write_str("reread"),
            Suite::RandomRead { block, mmap } => {
                write!(f, "randomread-{}{}", block.label(), if *mmap { "-mmap" } else { "" })
            }
            Suite::Xasc => f.write_str("xasc"),
        }
    }
}

impl FromStr for Suite {
    type Err = String;

    fn from_str(text: &str) -> Result<Suite, String> {
        Suite::all().into_iter().find(|s| s.to_string() == text).ok_or_else(|| {
            let names: Vec<String> = Suite::all().iter().map(Suite::to_string).collect();
            format!("unknown suite {text:?}; expected one of: {}", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn ids_are_unique_and_suites_round_trip() {
        let tests: Vec<Test> = Suite::all().into_iter().flat_map(Suite::tests).collect();
        let ids: HashSet<String> = tests.iter().map(Test::id).collect();
        assert_eq!(ids.len(), tests.len(), "every test has its own id");
        for suite in Suite::all() {
            assert_eq!(suite.to_string().parse::<Suite>().unwrap(), suite);
        }
        assert!("nope".parse::<Suite>().unwrap_err().contains("randomread-4k-mmap"));
    }

    #[test]
    fn names_and_types_are_nanos() {
        let rr = Test::RandomRead { block: Block::SixtyFourK, mmap: true, cached: false };
        assert_eq!(rr.name(), "mmap, random read 64k");
        assert_eq!(rr.id(), ".randomread.randomread_64000-withmmap");
        assert_eq!(rr.testtype(), "read disk");
        let warm = Test::RandomRead { block: Block::FourK, mmap: false, cached: true };
        assert_eq!((warm.name().as_str(), warm.testtype()), ("random read 4k", "read mem"));
        assert_eq!(Test::AppendMidFloat.name(), "open append mid float, sync once");
        assert_eq!(Test::Replace(Vector::IntHuge, Order::Sorted).name(), "open replace sorted int huge");
        assert_eq!(Test::Replace(Vector::IntTiny, Order::Random).name(), "open replace int tiny");
        assert_eq!(Test::SeqRead(Vector::FloatLarge).testtype(), "read disk write mem");
        assert_eq!(Test::AddAttribute.testtype(), "read mem write disk");
        assert_eq!(Test::Lock.unit(), Unit::Ms);
        assert_eq!(Suite::all().len(), 11);
        assert!(!Suite::Reread.flush_before() && Suite::Xasc.flush_before());
    }
}
