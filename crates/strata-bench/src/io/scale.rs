//! How much data each worker writes and reads: Nano's sizes, scaled to the run
//! (`tiny`, `small`, `full`), to the number of processes and to the machine's
//! memory and free disk.
//!
//! `full` is Nano's defaults (large 31M longs, huge 1G longs, a ~250M-row table,
//! 32 GB of random-read files per worker); `small` keeps Nano's large vector with a
//! 1 GiB huge vector and 2 GiB of random-read files; `tiny` is a smoke test of a few
//! tens of megabytes. Nano's own rule then caps the huge vector at a quarter of memory
//! shared by the processes, the sorted table at what its sort needs in memory, and
//! everything at 80% of each directory's free space (a memory file system's files
//! count against memory).

use std::fmt;
use std::str::FromStr;

use super::machine::{Machine, Root};

/// The three scales a run can be asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleName {
    /// A smoke test: tens of megabytes per worker.
    Tiny,
    /// Nano's large vector, a 1 GiB huge vector, 2 GiB of random-read files.
    Small,
    /// Nano's defaults, capped by memory and disk.
    Full,
}

impl fmt::Display for ScaleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScaleName::Tiny => "tiny",
            ScaleName::Small => "small",
            ScaleName::Full => "full",
        })
    }
}

impl FromStr for ScaleName {
    type Err = String;

    fn from_str(text: &str) -> Result<ScaleName, String> {
        match text {
            "tiny" => Ok(ScaleName::Tiny),
            "small" => Ok(ScaleName::Small),
            "full" => Ok(ScaleName::Full),
            other => Err(format!("unknown scale {other:?}; expected tiny, small or full")),
        }
    }
}

/// Nano's vector lengths (longs).
const TINY: usize = 2047;
const SMALL: usize = 63 * 1024;
const MEDIUM: usize = 4 * 127 * 1024;
const LARGE: usize = 31 * 1024 * 1024;
/// Vectors are whole MiB so the `dd` anchor writes the same bytes in 1 MiB blocks.
const MIB_LONGS: usize = 1 << 17;
/// Bytes of memory the disk sort needs per table row at its peak: the row
/// permutation (8) with either the parallel merge sort's buffer (8) or the sorted
/// copies of both columns (4 + 8), plus slack. The table itself is mapped.
const SORT_BYTES_PER_ROW: u64 = 24;

/// The sizes every worker of one run uses. Lengths count values.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// The scale asked for.
    pub name: ScaleName,
    /// Tiny long vector.
    pub tiny: usize,
    /// Small long vector (also the chunk appended to the random-read files).
    pub small: usize,
    /// Medium long vector.
    pub medium: usize,
    /// Large long, float and symbol vectors.
    pub large: usize,
    /// Huge long vector.
    pub huge: usize,
    /// Large vectors appended to each table column; the table has
    /// `large * (1 + table_chunks)` rows.
    pub table_chunks: usize,
    /// Small vectors appended to each of the four random-read files.
    pub random_chunks: usize,
    /// Bytes each worker reads per random-read pass.
    pub random_read_bytes: u64,
    /// Multiplier of Nano's repeat counts (replace and meta tests).
    pub repeats: f64,
    /// Nano's `1 + log2 processes`: some workloads shrink as processes grow.
    pub decay: f64,
}

/// Random-read files per worker, as Nano.
pub const RANDOM_FILES: usize = 4;
/// Distinct symbols, as Nano.
pub const SYMBOLS: usize = 10_000;

impl Scale {
    /// The unscaled sizes for `procs` processes.
    pub fn preset(name: ScaleName, procs: usize) -> Scale {
        let decay = 1.0 + (procs.max(1) as f64).log2();
        let per_decay = |n: f64| ((n / decay).round() as usize).max(1);
        match name {
            ScaleName::Tiny => Scale {
                name,
                tiny: TINY,
                small: SMALL,
                medium: MEDIUM,
                large: 8 * MIB_LONGS,
                huge: 32 * MIB_LONGS,
                table_chunks: 1,
                random_chunks: 16,
                random_read_bytes: 8_000_000,
                repeats: 0.02,
                decay,
            },
            ScaleName::Small => Scale {
                name,
                tiny: TINY,
                small: SMALL,
                medium: MEDIUM,
                large: LARGE,
                huge: 1024 * MIB_LONGS,
                table_chunks: 1,
                random_chunks: 1040,
                random_read_bytes: 160_000_000,
                repeats: 0.2,
                decay,
            },
            ScaleName::Full => Scale {
                name,
                tiny: TINY,
                small: SMALL,
                medium: MEDIUM,
                large: LARGE,
                huge: 8192 * MIB_LONGS,
                // Nano: a 250M-row table and 32 GB of random-read files per worker.
                table_chunks: per_decay(250e6 / LARGE as f64),
                random_chunks: per_decay(4e9 / (RANDOM_FILES * SMALL) as f64),
                random_read_bytes: 800_000_000,
                repeats: 1.0,
                decay,
            },
        }
    }

    /// The sizes for `procs` processes spread round-robin over `roots`, capped by
    /// memory and free space. Returns the scale and a note per cap applied.
    pub fn plan(name: ScaleName, procs: usize, machine: &Machine, roots: &[Root]) -> (Scale, Vec<String>) {
        let procs = procs.max(1);
        let mut scale = Scale::preset(name, procs);
        let mut notes = Vec::new();
        // Nano's rule: the huge vector takes at most a quarter of memory per process.
        let huge_cap = round_mib(machine.mem_total / 32 / procs as u64);
        if scale.huge > huge_cap {
            notes.push(format!("huge capped from {} to {} longs by memory", scale.huge, huge_cap));
            scale.huge = huge_cap;
        }
        let sort_budget = machine.mem_available / 2 / procs as u64;
        let before = scale.table_rows();
        while scale.table_rows() as u64 * SORT_BYTES_PER_ROW > sort_budget && scale.table_chunks > 1 {
            scale.table_chunks -= 1;
        }
        while scale.table_rows() as u64 * SORT_BYTES_PER_ROW > sort_budget && scale.large > 8 * MIB_LONGS {
            scale.large /= 2;
        }
        if scale.table_rows() != before {
            notes.push(format!("sorted table capped from {before} to {} rows by memory", scale.table_rows()));
        }
        for (i, root) in roots.iter().enumerate() {
            let workers = (i..procs).step_by(roots.len()).count() as u64;
            if workers == 0 {
                continue;
            }
            let mut space = root.free_bytes;
            if root.in_memory() {
                space = space.min(machine.mem_available / 2);
            }
            let budget = space / 10 * 8;
            let before = scale.clone();
            while workers * scale.disk_bytes() > budget {
                // Random-read files go first (they only need to outgrow the cache), then
                // the sorted table, and the huge vector (the sequential test) last.
                if scale.random_chunks > 16 {
                    scale.random_chunks = (scale.random_chunks / 2).max(16);
                } else if scale.table_chunks > 1 {
                    scale.table_chunks -= 1;
                } else if scale.large > 8 * MIB_LONGS {
                    scale.large /= 2;
                } else if scale.huge > 8 * MIB_LONGS {
                    scale.huge = round_mib(scale.huge as u64 / 2);
                } else {
                    notes.push(format!("{}: may run out of space even at the smallest sizes", root.path.display()));
                    break;
                }
            }
            if scale != before {
                notes.push(format!(
                    "{}: sizes capped to fit {} worker(s) in 80% of {:.1} GB{}",
                    root.path.display(),
                    workers,
                    space as f64 / 1e9,
                    if root.in_memory() { " (half the available memory)" } else { " free" }
                ));
            }
        }
        (scale, notes)
    }

    /// Rows of the table the disk-sort test sorts.
    pub fn table_rows(&self) -> usize {
        self.large * (1 + self.table_chunks)
    }

    /// Longs in each random-read file.
    pub fn random_file_len(&self) -> usize {
        self.small * self.random_chunks
    }

    /// Times a replace test rewrites a file: Nano's 20 000 (tiny), 2 000 (small) and
    /// 500 (medium), scaled; once for large and huge.
    pub fn replace_repeats(&self, nano: usize) -> usize {
        ((nano as f64 * self.repeats / self.decay).round() as usize).max(1)
    }

    /// Operations per meta test: Nano's 50 000, scaled.
    pub fn meta_repeats(&self) -> usize {
        ((50_000.0 * self.repeats).round() as usize).max(1)
    }

    /// Bytes one worker keeps on disk at its peak (files, table staging, the temporary
    /// copy a replace writes).
    pub fn disk_bytes(&self) -> u64 {
        let longs = self.tiny + self.small * 66 + self.medium + self.large + 2 * self.huge;
        let table = 2 * 12 * self.table_rows();
        (8 * longs + table + 8 * RANDOM_FILES * self.random_file_len()) as u64
    }

    /// One line saying what each worker writes, for the report.
    pub fn describe(&self) -> String {
        format!(
            "scale {}: per worker, vectors tiny {} / small {} / medium {} / large {} / huge {} longs \
             ({:.2} GB), sorted table {} rows, random-read files {} x {:.1} MB, {:.0} MB read per \
             random pass, repeat counts x{}, decay {:.2}; about {:.2} GB on disk",
            self.name,
            self.tiny,
            self.small,
            self.medium,
            self.large,
            self.huge,
            self.huge as f64 * 8.0 / 1e9,
            self.table_rows(),
            RANDOM_FILES,
            self.random_file_len() as f64 * 8.0 / 1e6,
            self.random_read_bytes as f64 / 1e6,
            self.repeats,
            self.decay,
            self.disk_bytes() as f64 / 1e9
        )
    }
}

fn round_mib(longs: u64) -> usize {
    ((longs as usize) / MIB_LONGS * MIB_LONGS).max(MIB_LONGS)
}

impl fmt::Display for Scale {
    /// The scale as the worker's `--sizes` argument: `key=value` pairs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "name={},tiny={},small={},medium={},large={},huge={},table_chunks={},random_chunks={},\
             random_read_bytes={},repeats={},decay={}",
            self.name,
            self.tiny,
            self.small,
            self.medium,
            self.large,
            self.huge,
            self.table_chunks,
            self.random_chunks,
            self.random_read_bytes,
            self.repeats,
            self.decay
        )
    }
}

impl FromStr for Scale {
    type Err = String;

    fn from_str(text: &str) -> Result<Scale, String> {
        let mut scale = Scale::preset(ScaleName::Tiny, 1);
        for pair in text.split(',') {
            let (key, value) = pair.split_once('=').ok_or_else(|| format!("sizes: {pair:?} is not key=value"))?;
            let bad = |e: &dyn fmt::Display| format!("sizes: {key}={value:?}: {e}");
            let count = || value.parse::<usize>().map_err(|e| bad(&e));
            match key {
                "name" => scale.name = value.parse().map_err(|e: String| bad(&e))?,
                "tiny" => scale.tiny = count()?,
                "small" => scale.small = count()?,
                "medium" => scale.medium = count()?,
                "large" => scale.large = count()?,
                "huge" => scale.huge = count()?,
                "table_chunks" => scale.table_chunks = count()?,
                "random_chunks" => scale.random_chunks = count()?,
                "random_read_bytes" => scale.random_read_bytes = count()? as u64,
                "repeats" => scale.repeats = value.parse().map_err(|e| bad(&e))?,
                "decay" => scale.decay = value.parse().map_err(|e| bad(&e))?,
                _ => return Err(format!("sizes: unknown key {key:?}")),
            }
        }
        if [scale.tiny, scale.small, scale.medium, scale.large, scale.huge, scale.random_chunks].contains(&0) {
            return Err(format!("sizes: every length must be positive in {text:?}"));
        }
        Ok(scale)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn machine(gb: u64) -> Machine {
        Machine { host: "h".into(), os: "l64", mem_total: gb << 30, mem_available: gb << 30, cores: 2 }
    }

    fn root(free_gb: u64, fs_type: &str) -> Root {
        Root {
            path: PathBuf::from("/r"),
            fs_type: fs_type.into(),
            source: "s".into(),
            device: None,
            free_bytes: free_gb << 30,
        }
    }

    #[test]
    fn sizes_round_trip_through_the_worker_argument() {
        let (scale, _) = Scale::plan(ScaleName::Small, 4, &machine(64), &[root(500, "xfs")]);
        assert_eq!(scale.to_string().parse::<Scale>().unwrap(), scale);
        assert!("tiny=0".parse::<Scale>().unwrap_err().contains("positive"));
        assert!("bogus=1".parse::<Scale>().unwrap_err().contains("unknown key"));
        assert!("tiny".parse::<Scale>().unwrap_err().contains("key=value"));
    }

    #[test]
    fn full_follows_nano_and_its_decay() {
        let one = Scale::preset(ScaleName::Full, 1);
        assert_eq!((one.large, one.huge, one.table_chunks), (32_505_856, 1 << 30, 8));
        let random_longs = (one.random_chunks * RANDOM_FILES * one.small) as i64;
        assert!((random_longs - 4_000_000_000).abs() < (RANDOM_FILES * SMALL) as i64, "Nano's 4e9 longs");
        let four = Scale::preset(ScaleName::Full, 4);
        assert_eq!(four.decay, 3.0);
        assert_eq!((four.table_chunks, four.replace_repeats(20_000), four.meta_repeats()), (3, 6667, 50_000));
    }

    #[test]
    fn memory_and_disk_cap_the_big_files() {
        let (scale, notes) = Scale::plan(ScaleName::Full, 2, &machine(16), &[root(40, "ext4")]);
        assert_eq!(scale.huge, (16 << 30) / 32 / 2, "Nano's quarter of memory per process");
        assert!(scale.table_rows() as u64 * SORT_BYTES_PER_ROW <= (16 << 30) / 4);
        assert!(2 * scale.disk_bytes() <= (40 << 30) / 10 * 8, "{}", scale.describe());
        assert!(
            notes[0].starts_with("huge capped") && notes[1].contains("sizes capped to fit 2 worker(s)"),
            "{notes:?}"
        );
        let (sort, notes) = Scale::plan(ScaleName::Full, 1, &machine(4), &[root(400, "xfs")]);
        assert_eq!(sort.table_chunks, 1, "the sort fits half the available memory");
        assert!(sort.table_rows() as u64 * SORT_BYTES_PER_ROW <= (4 << 30) / 2);
        assert!(notes.iter().any(|n| n.starts_with("sorted table capped")), "{notes:?}");
        let (shm, notes) = Scale::plan(ScaleName::Small, 1, &machine(4), &[root(400, "tmpfs")]);
        assert!(shm.disk_bytes() <= (2 << 30) / 10 * 8, "a memory file system is bounded by memory");
        assert!(notes.iter().any(|n| n.contains("memory")), "{notes:?}");
        let (tiny, notes) = Scale::plan(ScaleName::Tiny, 2, &machine(16), &[root(40, "ext4")]);
        assert_eq!(tiny, Scale::preset(ScaleName::Tiny, 2));
        assert!(notes.is_empty() && tiny.describe().contains("scale tiny"));
    }
}
