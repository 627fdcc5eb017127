//! Random damage to every file of a database, read back through the real binary.
//!
//! A property test: proptest picks a file of a small database (compressed and plain
//! column files, attribute indexes, `.d`, partition records, the sym file and its
//! record) and a way to damage it (a flipped bit, an overwritten byte, a torn tail,
//! appended garbage, a zeroed range, the file removed). Then `strata sql` and `strata
//! export` run on the damaged copy, and each must either give exactly the undamaged
//! answer or fail cleanly: exit status 1 and one `strata: error:` message, never a
//! panic and never a different answer with exit status 0.
//!
//! With `verify_plain_checksums` on every byte of every file is covered by a check, so
//! the whole answer must match. With the default configuration a plain column's
//! values are not checksummed on read (by design: see `DbConfig`), so there only
//! the row counts must match.

use std::path::{Path, PathBuf};
use std::process::Output;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

use super::common::*;

/// The partition writers' lock file: empty, its contents never read.
const LOCK_FILE: &str = ".partition-write.lock";

const DAYS: [&str; 2] = ["2025.01.02", "2025.01.03"];

/// What every case queries: all columns of both partitions, and the splayed table.
const QUERIES: [&str; 3] = [
    "SELECT date, sym, count(*) AS n, sum(size) AS size, sum(price) AS price, min(time) AS t0, \
     max(time) AS t1, count(DISTINCT ex) AS exes FROM trade GROUP BY date, sym ORDER BY date, sym",
    "SELECT date, count(*) AS n FROM trade GROUP BY date ORDER BY date",
    "SELECT ex, name FROM exnames ORDER BY ex",
];

/// The undamaged database, built once per test and copied for every case.
struct Pristine {
    _dir: tempfile::TempDir,
    db: PathBuf,
    /// Files that may be damaged, relative to the database root.
    files: Vec<PathBuf>,
}

/// Two days of `trade`, sorted by sym and parted on it: the first day with plain
/// columns, the second compressed (zstd, and pco for price and size); and a splayed
/// `exnames`. With `verify_plain` the database's configuration checks plain columns'
/// checksums on read.
fn pristine(verify_plain: bool) -> Pristine {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let db_str = db.to_str().unwrap();
    for (d, day) in DAYS.iter().enumerate() {
        let mut csv = String::from("time,sym,ex,price,size\n");
        for i in 0..400 {
            let sym = ["IBM", "AAPL", "MSFT", "GOOG"][(i + d) % 4];
            let ex = ["N", "P", "X"][i % 3];
            let iso = day.replace('.', "-");
            csv.push_str(&format!(
                "{iso}T14:{:02}:{:02},{sym},{ex},{}.25,{}\n",
                i / 60,
                i % 60,
                100 + i % 7,
                100 + i % 11
            ));
        }
        let file = dir.path().join(format!("trade{d}.csv"));
        std::fs::write(&file, csv).unwrap();
        let mut args = vec![
            "import",
            file.to_str().unwrap(),
            "--db",
            db_str,
            "--table",
            "trade",
            "--partition",
            day,
            "--types",
            "time=timestamp,sym=symbol,ex=char",
            "--sort",
            "sym,time",
            "--parted",
            "sym",
        ];
        let spec = dir.path().join("spec.toml");
        if d == 1 {
            std::fs::write(&spec, "default = \"zstd:1\"\n[columns]\nprice = \"pco:8\"\nsize = \"pco:8\"\n").unwrap();
            args.extend(["--table-spec", spec.to_str().unwrap()]);
        }
        ok(&args);
    }
    let names = dir.path().join("exnames.csv");
    std::fs::write(&names, "ex,name\nN,NYSE\nP,ARCA\nX,IEX\n").unwrap();
    ok(&["import", names.to_str().unwrap(), "--db", db_str, "--table", "exnames", "--types", "ex=char,name=symbol"]);
    if verify_plain {
        let config = db.join("strata.toml");
        let mut text = std::fs::read_to_string(&config).unwrap_or_default();
        text.push_str("\n[read]\nverify_plain_checksums = true\n");
        std::fs::write(&config, text).unwrap();
    }
    let mut files = Vec::new();
    collect_files(&db, &db, &mut files);
    files.sort();
    Pristine { _dir: dir, db, files }
}

/// Every regular file under `dir` but the configuration (which a user edits, and
/// whose settings decide what is checked).
fn collect_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(root, &path, out);
        } else if path.file_name() != Some("strata.toml".as_ref()) {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// A copy of directory `from` at `to`, as `cp -a` makes it.
fn copy_dir(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap();
    assert!(status.success(), "cp -a {} {}", from.display(), to.display());
}

/// One way a file gets damaged. Offsets and lengths are fractions of the file's size
/// (in 1/65536), so one case means the same place in a file of any length.
#[derive(Clone, Debug)]
enum Damage {
    FlipBit { at: u16, bit: u8 },
    Overwrite { at: u16, byte: u8 },
    TornTail { keep: u16 },
    Garbage { bytes: Vec<u8> },
    Zeroed { at: u16, len: u8 },
    Removed,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => (any::<u16>(), 0u8..8).prop_map(|(at, bit)| Damage::FlipBit { at, bit }),
        2 => (any::<u16>(), any::<u8>()).prop_map(|(at, byte)| Damage::Overwrite { at, byte }),
        2 => any::<u16>().prop_map(|keep| Damage::TornTail { keep }),
        1 => prop::collection::vec(any::<u8>(), 1..64).prop_map(|bytes| Damage::Garbage { bytes }),
        1 => (any::<u16>(), 1u8..=255).prop_map(|(at, len)| Damage::Zeroed { at, len }),
        1 => Just(Damage::Removed),
    ]
}

fn place(fraction: u16, len: usize) -> usize {
    (len * fraction as usize) >> 16
}

/// Applies `damage` to `path`; false when it would leave the file as it was (an empty
/// file has no byte to flip), so the case is not counted.
fn apply(path: &Path, damage: &Damage) -> bool {
    let mut bytes = std::fs::read(path).unwrap();
    let before = bytes.clone();
    match damage {
        Damage::FlipBit { at, bit } if !bytes.is_empty() => {
            let i = place(*at, bytes.len());
            bytes[i] ^= 1 << bit;
        }
        Damage::Overwrite { at, byte } if !bytes.is_empty() => {
            let i = place(*at, bytes.len());
            bytes[i] = *byte;
        }
        Damage::TornTail { keep } => bytes.truncate(place(*keep, bytes.len())),
        Damage::Garbage { bytes: extra } => bytes.extend_from_slice(extra),
        Damage::Zeroed { at, len } if !bytes.is_empty() => {
            let start = place(*at, bytes.len());
            let end = (start + *len as usize).min(bytes.len());
            bytes[start..end].fill(0);
        }
        Damage::Removed => {
            std::fs::remove_file(path).unwrap();
            return true;
        }
        _ => return false,
    }
    if bytes == before {
        return false;
    }
    std::fs::write(path, bytes).unwrap();
    true
}

/// What a reader saw: standard output on success, or the error.
#[derive(Debug, PartialEq)]
enum Seen {
    Answer(String),
    Refused(String),
}

/// Runs `strata ARGS` and classifies the outcome; a panic, a crash or an error
/// without the `strata: error:` form fails the case.
fn run(args: &[&str]) -> Result<Seen, TestCaseError> {
    let out: Output = strata(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    prop_assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "strata {args:?} panicked:\n{err}");
    match out.status.code() {
        Some(0) => Ok(Seen::Answer(String::from_utf8_lossy(&out.stdout).into_owned())),
        Some(1) => {
            prop_assert!(err.starts_with("strata: error: "), "strata {args:?}: unclear error:\n{err}");
            Ok(Seen::Refused(err))
        }
        status => Err(TestCaseError::fail(format!("strata {args:?} ended with {status:?}:\n{err}"))),
    }
}

/// Everything a user reads from the database: the queries' answers and both days
/// exported as CSV. With `counts_only`, just the row counts.
fn read_all(db: &Path, scratch: &Path, counts_only: bool) -> Result<Vec<Seen>, TestCaseError> {
    let db_str = db.to_str().unwrap();
    let mut seen = Vec::new();
    let queries: &[&str] = if counts_only { &QUERIES[1..2] } else { &QUERIES };
    for query in queries {
        seen.push(run(&["sql", "--db", db_str, query, "--format", "csv"])?);
    }
    if !counts_only {
        for day in DAYS {
            let out = scratch.join(format!("{day}.csv"));
            let out_str = out.to_str().unwrap();
            let export =
                ["export", "--db", db_str, "--table", "trade", "--partition", day, "--format", "csv", "--out", out_str];
            seen.push(match run(&export)? {
                Seen::Answer(_) => Seen::Answer(std::fs::read_to_string(&out).unwrap()),
                refused => refused,
            });
        }
    }
    Ok(seen)
}

/// The property: for any file and any damage, every read gives the undamaged answer
/// or a clean error.
fn damaged_reads_answer_right_or_fail_cleanly(verify_plain: bool, cases: u32) {
    let pristine = pristine(verify_plain);
    let scratch = tempfile::tempdir().unwrap();
    let counts_only = !verify_plain;
    let expected = read_all(&pristine.db, scratch.path(), counts_only).unwrap();
    assert!(expected.iter().all(|s| matches!(s, Seen::Answer(_))), "the undamaged database reads: {expected:?}");

    let config = Config {
        cases,
        max_shrink_iters: 32,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    };
    let files = pristine.files.clone();
    proptest!(config, |(file in prop::sample::select(files), damage in damage())| {
        let case = tempfile::tempdir().unwrap();
        let db = case.path().join("hdb");
        copy_dir(&pristine.db, &db);
        prop_assume!(apply(&db.join(&file), &damage));
        let seen = read_all(&db, case.path(), counts_only)?;
        // `strata verify` finds what a reader refused, and any flipped bit in a
        // binary file or the sym file (a `.d` that lost its last newline, say,
        // reads as before and is not damage).
        let refused = seen.iter().any(|s| matches!(s, Seen::Refused(_)));
        let name = file.file_name().unwrap().to_string_lossy();
        let flipped = matches!(damage, Damage::FlipBit { .. }) && name != LOCK_FILE && name != ".d";
        if refused || flipped {
            // Damage, or a note for what a crash or an older version can leave (a
            // missing record, an interrupted append's tail), naming the file.
            let verify = run(&["verify", "--db", db.to_str().unwrap()])?;
            let noted = matches!(&verify, Seen::Answer(report) if report.contains(&db.join(&file).display().to_string()));
            prop_assert!(
                matches!(verify, Seen::Refused(_)) || noted,
                "strata verify found nothing wrong after {} was damaged by {:?}: {:?}", file.display(), damage, verify
            );
        }
        for (seen, expected) in seen.iter().zip(&expected) {
            if matches!(seen, Seen::Answer(_)) {
                prop_assert_eq!(
                    seen, expected,
                    "{} damaged by {:?} gave a different answer with exit status 0", file.display(), damage
                );
            }
        }
    });
}

#[test]
fn damage_to_any_file_gives_the_right_answer_or_a_clean_error_when_plain_columns_are_verified() {
    damaged_reads_answer_right_or_fail_cleanly(true, 128);
}

#[test]
fn damage_to_any_file_never_changes_a_row_count_silently_by_default() {
    damaged_reads_answer_right_or_fail_cleanly(false, 64);
}
