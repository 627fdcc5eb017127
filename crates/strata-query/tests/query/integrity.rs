//! Damaged files and engine bugs reach the user as errors, never as panics or wrong
//! rows: symbols read through an outer join group without the arrow assertion, a
//! panic inside a query is an error naming it (and the engine keeps answering),
//! a damaged sym file or `.d` fails the open, plain columns are checksummed when the
//! database asks; and a property test that damages files at random.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::DataType;
use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};
use proptest::prelude::*;
use strata_query::{Engine, EngineOptions, QueryError};
use strata_store::{Column, ColumnType, Database, DbConfig, Durability, Table, TableLocation, TableWrite};

use super::data::*;

/// Quotes (exchanges A, B, C) in a partition, and `exnames`, a splayed table naming
/// exchanges A and B only: a LEFT JOIN leaves C's quotes without a name.
fn exchange_db(rows: usize) -> (tempfile::TempDir, Quotes) {
    let dir = tempfile::tempdir().unwrap();
    let q = quotes(&mut Rng(5), rows, 4, DAY.parse().unwrap());
    write(dir.path(), DAY, "quote", &q.table(), &sorted_write("none"));
    let names = Table::new(vec![
        ("ex".into(), Column::from_values(ColumnType::Char, b"AB".to_vec()).unwrap()),
        ("name".into(), Column::from_symbols(["ARCA", "BATS"])),
    ])
    .unwrap();
    let db = Database::open(dir.path()).unwrap();
    db.write_table(&TableLocation::Splayed("exnames".into()), &names, &TableWrite::default()).unwrap();
    (dir, q)
}

#[test]
fn grouping_by_a_symbol_read_through_a_left_join_counts_the_unmatched_as_null() {
    let (dir, q) = exchange_db(3000);
    let count = |ex: u8| q.ex.iter().filter(|e| **e == ex).count() as i64;
    let want = vec![
        (Some("ARCA".to_string()), Some(count(b'A'))),
        (Some("BATS".to_string()), Some(count(b'B'))),
        (None, Some(count(b'C'))),
    ];
    let sql = "SELECT e.name, count(*) AS n FROM quote q LEFT JOIN exnames e ON q.ex = e.ex \
               GROUP BY e.name ORDER BY e.name NULLS LAST";
    // Small batches and several partitions: unmatched rows arrive as batches of their
    // own (an all-null column with an empty dictionary) before and after matched ones.
    for (threads, batch_rows) in [(1, 64), (4, 100), (2, 65_536)] {
        let engine =
            Engine::open_with(dir.path(), &EngineOptions { threads, batch_rows, ..Default::default() }).unwrap();
        let got = one(&engine.sql(sql).unwrap());
        let got: Vec<_> = texts(&got, "name").into_iter().zip(ints(&got, "n")).collect();
        assert_eq!(got, want, "threads {threads}, batch rows {batch_rows}");
    }
}

#[test]
fn a_panic_inside_a_query_is_an_error_naming_it_and_the_engine_keeps_answering() {
    let (dir, _) = exchange_db(1000);
    let engine =
        Engine::open_with(dir.path(), &EngineOptions { threads: 2, batch_rows: 100, ..Default::default() }).unwrap();
    let boom = create_udf(
        "boom",
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Volatile,
        Arc::new(|_args: &[ColumnarValue]| -> datafusion::common::Result<ColumnarValue> {
            panic!("boom: a bug in a function")
        }),
    );
    engine.session().register_udf(boom);
    // Evaluated on the engine's worker threads, inside DataFusion's tasks.
    for sql in ["SELECT boom(bsize) FROM quote", "SELECT sum(boom(bsize)) FROM quote"] {
        match engine.sql(sql) {
            Err(QueryError::Panicked { query, message }) => {
                assert_eq!(query, sql);
                assert!(message.contains("boom: a bug in a function"), "{message}");
            }
            other => panic!("{sql}: expected a panic turned error, got {other:?}"),
        }
    }
    let err = engine.sql("SELECT boom(bsize) FROM quote").unwrap_err().to_string();
    assert!(err.contains("internal error") && err.contains("query: SELECT boom(bsize) FROM quote"), "{err}");
    assert_eq!(ints(&one(&engine.sql("SELECT count(*) AS n FROM quote").unwrap()), "n"), [Some(1000)]);
}

#[test]
fn a_damaged_sym_file_fails_the_open_and_an_unrecorded_empty_one_does_not_panic() {
    let (dir, _) = exchange_db(1000);
    let sym = dir.path().join("sym");
    let text = std::fs::read_to_string(&sym).unwrap();
    std::fs::write(&sym, text.split_once('\n').unwrap().1).unwrap();
    let err = Engine::open(dir.path()).err().expect("a shifted sym file is refused").to_string();
    assert!(err.contains(&sym.display().to_string()) && err.contains("lines are missing"), "{err}");
    // A sym file from before records (no sym.crc) is trusted; emptied, its keys
    // point nowhere: an error naming the parted index, not a panic.
    std::fs::remove_file(dir.path().join("sym.crc")).unwrap();
    std::fs::write(&sym, "").unwrap();
    let engine = Engine::open(dir.path()).unwrap();
    let err = engine.sql("SELECT sym, count(*) FROM quote GROUP BY sym").unwrap_err();
    assert!(!matches!(err, QueryError::Panicked { .. }), "{err}");
    assert!(err.to_string().contains("outside the sym list of 0 symbols"), "{err}");
}

#[test]
fn an_order_file_that_lost_a_column_or_every_column_fails_every_query_of_its_partition() {
    let (dir, _) = exchange_db(100);
    let table = dir.path().join(DAY).join("quote");
    let order = table.join(".d");
    for (text, expected) in [("sym\ntime\nex\nbid\nbsize\n", "column file seq is not listed"), ("", "lists no column")]
    {
        std::fs::write(&order, text).unwrap();
        // A partition is opened when a query first keeps it, not with the
        // database: the damage fails that query, whatever columns it reads.
        let engine = Engine::open(dir.path()).unwrap();
        for sql in ["SELECT count(*) FROM quote", "SELECT max(bid) FROM quote WHERE date = '2024-01-02'"] {
            let err = engine.sql(sql).unwrap_err().to_string();
            assert!(err.contains(&table.display().to_string()) && err.contains(expected), "{sql}: {err}");
        }
        let db = Database::open(dir.path()).unwrap();
        let err =
            db.read_table(&TableLocation::Partition(DAY.parse().unwrap(), "quote".into())).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }
}

#[test]
fn plain_columns_are_checksummed_on_open_unless_the_database_opts_out() {
    let (dir, _) = exchange_db(1000);
    let path = dir.path().join(DAY).join("quote").join("bsize");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[64 + 8 * 500] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let sql = "SELECT sum(bsize) FROM quote";
    // On by default: one flipped byte is an error naming the file, not a wrong sum.
    let err = Engine::open(dir.path()).and_then(|e| e.sql(sql)).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()) && err.contains("checksum"), "{err}");
    let mut db = Database::open(dir.path()).unwrap();
    db.set_config(DbConfig { verify_plain_checksums: false, ..db.config().clone() }).unwrap();
    assert!(Engine::open(dir.path()).unwrap().sql(sql).is_ok(), "opted out: the header alone is checked");
}

/// The files a damaged copy may have one of: column files (plain and compressed,
/// string data), the sym file and its record, `.d`.
const TARGETS: [&str; 9] = [
    "sym",
    "sym.crc",
    "2024.01.02/trade/.d",
    "2024.01.02/trade/size",
    "2024.01.02/trade/price",
    "2024.01.02/trade/sym",
    "2024.01.02/trade/id",
    "2024.01.02/trade/id#",
    "2024.01.02/trade/cond",
];

/// A database whose `trade` mixes plain (`size`, `id`) and compressed columns, with
/// plain checksums on.
fn pristine() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Database::open(dir.path()).unwrap();
    db.set_config(DbConfig { durability: Durability::Rename, verify_plain_checksums: true, ..DbConfig::default() })
        .unwrap();
    let n = 2000;
    let mut rng = Rng(3);
    let table = Table::new(vec![
        ("sym".into(), Column::from_symbols((0..n).map(|_| format!("S{}", rng.below(5))))),
        ("size".into(), Column::from_values(ColumnType::Long, (0..n as i64).map(|i| i * 7 % 300).collect()).unwrap()),
        (
            "price".into(),
            Column::from_values(ColumnType::Float, (0..n).map(|i| 10.0 + i as f64 / 8.0).collect()).unwrap(),
        ),
        ("id".into(), Column::from_strings((0..n).map(|i| format!("T{i}")))),
        ("cond".into(), Column::from_values(ColumnType::Char, (0..n).map(|i| b"NFR"[i % 3]).collect()).unwrap()),
    ])
    .unwrap();
    let spec =
        strata_store::TableSpec::parse("default = \"zstd:1@12\"\n[columns]\nsize = \"none\"\nid = \"none\"\n").unwrap();
    let how = TableWrite {
        spec,
        sort_by: vec!["sym".into()],
        attributes: vec![("sym".into(), strata_store::Attribute::Parted)],
    };
    db.write_table(&TableLocation::Partition(DAY.parse().unwrap(), "trade".into()), &table, &how).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

const QUERY: &str = "SELECT * FROM trade ORDER BY i";

/// What the engine answers, and what a table read (as `strata export` does) gives.
fn answers(root: &Path) -> (Result<RecordBatch, QueryError>, strata_store::Result<Table>) {
    let engine = Engine::open_with(root, &EngineOptions { threads: 1, ..Default::default() });
    let sql = engine.and_then(|e| e.sql(QUERY)).map(|batches| one(&batches));
    let db = Database::open(root).unwrap();
    let read = db.read_table(&TableLocation::Partition(DAY.parse().unwrap(), "trade".into()));
    (sql, read)
}

/// Damage to one file: flip a bit, or cut the file short.
#[derive(Clone, Debug)]
enum Damage {
    Flip { at: f64, bit: u8 },
    Truncate { at: f64 },
}

fn damage(path: &PathBuf, how: &Damage) {
    let mut bytes = std::fs::read(path).unwrap();
    match *how {
        Damage::Flip { at, bit } if !bytes.is_empty() => {
            let i = ((bytes.len() as f64 * at) as usize).min(bytes.len() - 1);
            bytes[i] ^= 1 << bit;
        }
        Damage::Flip { .. } => {}
        Damage::Truncate { at } => bytes.truncate((bytes.len() as f64 * at) as usize),
    }
    std::fs::write(path, bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever byte is flipped and wherever a file is cut: a clear error naming a
    /// file, or exactly the rows of the undamaged table. Never a panic (one inside
    /// the engine would come back as `Panicked`), never a wrong row.
    #[test]
    fn damaged_files_give_an_error_or_the_right_rows(
        target in 0..TARGETS.len(),
        how in prop_oneof![
            (0.0..1.0f64, 0..8u8).prop_map(|(at, bit)| Damage::Flip { at, bit }),
            (0.0..1.0f64).prop_map(|at| Damage::Truncate { at }),
        ],
    ) {
        let good = pristine();
        let (want_sql, want_read) = answers(good.path());
        let (want_sql, want_read) = (want_sql.unwrap(), want_read.unwrap());
        let copy = tempfile::tempdir().unwrap();
        copy_dir(good.path(), copy.path());
        damage(&copy.path().join(TARGETS[target]), &how);
        let (sql, read) = answers(copy.path());
        match sql {
            Ok(batch) => prop_assert_eq!(batch, want_sql.clone(), "{} {:?}: wrong rows", TARGETS[target], how),
            Err(QueryError::Panicked { message, .. }) => prop_assert!(false, "{} {:?}: panicked: {message}", TARGETS[target], how),
            Err(e) => {
                let text = e.to_string();
                prop_assert!(text.contains(copy.path().to_str().unwrap()), "{} {:?}: names no file: {text}", TARGETS[target], how);
            }
        }
        match read {
            Ok(table) => prop_assert_eq!(table, want_read, "{} {:?}: wrong rows read", TARGETS[target], how),
            Err(e) => {
                let text = e.to_string();
                prop_assert!(text.contains(copy.path().to_str().unwrap()), "{} {:?}: names no file: {text}", TARGETS[target], how);
            }
        }
    }
}
