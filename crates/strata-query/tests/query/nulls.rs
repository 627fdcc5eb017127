//! kdb+'s typed nulls through the engine, from every kind of column file: plain files
//! with a null count, compressed blocks with and without nulls, and files from before
//! null counts (version 1 plain files, index entries without a count), which must
//! read the same.

use std::path::Path;

use strata_query::Engine;
use strata_store::{Column, ColumnType, Database, Table, TableLocation, TableSpec, TableWrite};

use super::data::*;

/// Rows per table: four 4 KiB blocks of longs at lbs 12, nulls only in the third.
const ROWS: usize = 2048;

fn table() -> Table {
    let size: Vec<i64> =
        (0..ROWS as i64).map(|i| if (1024..1536).contains(&i) && i % 7 == 0 { i64::MIN } else { i }).collect();
    let span: Vec<i64> = (0..ROWS as i64).map(|i| if i == 5 { i64::MIN } else { i * 1_000 }).collect();
    let sym: Vec<&str> = (0..ROWS).map(|i| if i.is_multiple_of(100) { "" } else { ["A", "B"][i % 2] }).collect();
    Table::new(vec![
        ("sym".into(), Column::from_symbols(sym)),
        ("size".into(), Column::from_values(ColumnType::Long, size).unwrap()),
        ("span".into(), Column::from_values(ColumnType::Timespan, span).unwrap()),
    ])
    .unwrap()
}

/// What the queries below answer, computed from the table's values.
fn expected() -> (i64, i64, i64) {
    let nulls = (1024..1536).filter(|i| i % 7 == 0).count() as i64;
    let sum: i64 = (0..ROWS as i64).filter(|i| !((1024..1536).contains(i) && i % 7 == 0)).sum();
    (ROWS as i64 - nulls, sum, ROWS as i64 - 1)
}

/// Rewrites a plain column file as the first builds wrote it: version 1, no null
/// count, the header checksum over bytes 0..28.
fn make_version_1(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[8..10].copy_from_slice(&1u16.to_le_bytes());
    bytes[32..64].fill(0);
    let crc = crc32c::crc32c(&bytes[0..28]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, &bytes).unwrap();
}

/// Clears the null counts of a compressed file's index entries (flag 4, bytes
/// 21..24), as files from before counts have them, resealing index and trailer.
fn drop_block_counts(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let trailer = bytes.len() - 48;
    let index_at = u64::from_le_bytes(bytes[trailer + 16..trailer + 24].try_into().unwrap()) as usize;
    for entry in bytes[index_at..trailer].chunks_exact_mut(40) {
        entry[20] &= !4;
        entry[21..24].fill(0);
    }
    let index_crc = crc32c::crc32c(&bytes[index_at..trailer]);
    bytes[trailer + 32..trailer + 36].copy_from_slice(&index_crc.to_le_bytes());
    let trailer_crc = crc32c::crc32c(&bytes[trailer..trailer + 36]);
    bytes[trailer + 36..trailer + 40].copy_from_slice(&trailer_crc.to_le_bytes());
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn nulls_are_skipped_alike_in_new_and_old_plain_and_compressed_files() {
    let (want_count, want_sum, want_spans) = expected();
    for spec in ["none", "zstd:1@12"] {
        for old in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let how = TableWrite { spec: TableSpec::uniform(spec.parse().unwrap()), ..TableWrite::default() };
            write(dir.path(), DAY, "t", &table(), &how);
            if old {
                let db = Database::open(dir.path()).unwrap();
                let table_dir = db.table_dir(&TableLocation::Partition(DAY.parse().unwrap(), "t".into()));
                for column in ["sym", "size", "span"] {
                    let path = table_dir.join(column);
                    if spec == "none" { make_version_1(&path) } else { drop_block_counts(&path) }
                }
            }
            let engine = Engine::open(dir.path()).unwrap();
            let out = one(&engine
                .sql(
                    "SELECT count(size) AS n, sum(size) AS total, count(span) AS spans, count(sym) AS syms, \
                      min(size) AS least FROM t",
                )
                .unwrap());
            let what = format!("{spec}, old files: {old}");
            assert_eq!(ints(&out, "n"), [Some(want_count)], "{what}");
            assert_eq!(ints(&out, "total"), [Some(want_sum)], "{what}");
            assert_eq!(ints(&out, "spans"), [Some(want_spans)], "{what}");
            assert_eq!(ints(&out, "syms"), [Some(ROWS as i64 - 21)], "{what}");
            assert_eq!(ints(&out, "least"), [Some(0)], "{what}: 0N is not the minimum");
            let null_span = one(&engine.sql("SELECT span FROM t WHERE span IS NULL").unwrap());
            assert_eq!((null_span.num_rows(), null_span.column(0).null_count()), (1, 1), "{what}");
            // Only the block with nulls builds validity; its neighbours read as values.
            let third = one(&engine.sql("SELECT count(size) AS n FROM t WHERE i >= 1024 AND i < 1536").unwrap());
            assert_eq!(ints(&third, "n"), [Some(512 - 73)], "{what}");
        }
    }
}
