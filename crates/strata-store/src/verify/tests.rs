use super::*;
use crate::database::{TableLocation, TableWrite};
use crate::durable::Durability;
use crate::table::Table;
use crate::table_spec::TableSpec;
use crate::{DbConfig, column::PlainColumn};

/// A database with one partition holding `trade` (plain), `quote` (zstd, small
/// blocks so there are several) and symbols parted in both.
fn database() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Database::open(dir.path()).unwrap();
    db.set_config(DbConfig { durability: Durability::Rename, ..DbConfig::default() }).unwrap();
    let n = 5000;
    let syms: Vec<&str> = (0..n).map(|i| ["A", "B", "C"][i * 3 / n]).collect();
    let table = Table::new(vec![
        ("sym".into(), Column::from_symbols(syms)),
        ("size".into(), Column::from_values(ColumnType::Long, (0..n as i64).collect()).unwrap()),
        ("id".into(), Column::from_strings((0..n).map(|i| format!("T{i}")))),
    ])
    .unwrap();
    let date: Date = "2025.01.02".parse().unwrap();
    for (name, spec) in [("trade", "none"), ("quote", "zstd:1@12")] {
        let how = TableWrite {
            spec: TableSpec::uniform(spec.parse().unwrap()),
            attributes: vec![("sym".into(), Attribute::Parted)],
            ..Default::default()
        };
        db.write_table(&TableLocation::Partition(date, name.into()), &table, &how).unwrap();
    }
    (dir, db)
}

fn table_dir(db: &Database, table: &str) -> PathBuf {
    db.table_dir(&TableLocation::Partition("2025.01.02".parse().unwrap(), table.into()))
}

fn flip(path: &Path, at: u64) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at as usize] ^= 0x10;
    fs::write(path, bytes).unwrap();
}

fn damaged(report: &VerifyReport) -> Vec<&Finding> {
    report.findings.iter().filter(|f| f.severity == Severity::Damaged).collect()
}

#[test]
fn an_intact_database_has_no_findings() {
    let (_dir, db) = database();
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!((report.tables, report.partitions), (2, 1));
    // sym, its record, the partition's completion record, and per table .d, 3
    // column files, id#, sym.parted.
    assert_eq!(report.files, 3 + 2 * 6);
}

#[test]
fn verifying_tells_the_bytes_of_every_table_file_column_by_column() {
    let (_dir, db) = database();
    let log = crate::progress::ProgressLog::default();
    verify_database_with_progress(&db, &VerifyScope::default(), &log).unwrap();
    let steps = log.complete_steps().unwrap();
    let table_bytes: u64 = ["trade", "quote"]
        .iter()
        .flat_map(|t| fs::read_dir(table_dir(&db, t)).unwrap())
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert!(steps[0].name.starts_with("verifying "), "{}", steps[0].name);
    assert_eq!((steps[0].total, steps[0].unit), (table_bytes, crate::progress::Unit::Bytes));
    // Three columns a table, each told when checked (.d and sym.parted at the end).
    assert!(steps[0].advances.len() >= 6, "{:?}", steps[0].advances);
}

#[test]
fn a_flipped_value_in_a_plain_column_is_found_with_its_byte_range() {
    let (_dir, db) = database();
    let path = table_dir(&db, "trade").join("size");
    flip(&path, 64 + 8 * 1234);
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let found = damaged(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, path);
    assert_eq!(found[0].place, Place::Bytes(64..64 + 8 * 5000));
    assert!(matches!(found[0].repair, Repair::Restore(_)));
    assert!(found[0].to_string().contains("cannot be rebuilt"), "{}", found[0]);
}

#[test]
fn every_damaged_block_of_a_compressed_column_is_listed() {
    let (_dir, db) = database();
    let path = table_dir(&db, "quote").join("size");
    let ColumnFile::Compressed(c) = ColumnFile::open(&path).unwrap() else { panic!("compressed") };
    let blocks = c.blocks().to_vec();
    assert!(blocks.len() >= 4);
    for b in [1, 3] {
        flip(&path, blocks[b].offset + 2);
    }
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let places: Vec<&Place> = damaged(&report).iter().map(|f| &f.place).collect();
    let expected: Vec<Place> = [1, 3]
        .iter()
        .map(|&b| Place::Block { index: b, bytes: blocks[b].offset..blocks[b].offset + blocks[b].stored_len as u64 })
        .collect();
    assert_eq!(places, expected.iter().collect::<Vec<_>>());
}

#[test]
fn a_damaged_attribute_index_can_be_rebuilt() {
    let (_dir, db) = database();
    let path = table_dir(&db, "trade").join("sym.parted");
    flip(&path, 30);
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let found = damaged(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, path);
    assert!(matches!(&found[0].repair, Repair::Rebuild(how) if how.contains("column sym")), "{}", found[0]);

    // An index whose checksum holds but which disagrees with the column.
    let swapped = AttributeIndex::Parted(vec![
        crate::attribute::PartedRun { value: 1, start: 0, end: 1667 },
        crate::attribute::PartedRun { value: 0, start: 1667, end: 3334 },
        crate::attribute::PartedRun { value: 2, start: 3334, end: 5000 },
    ]);
    crate::attribute::write_index(&path, &swapped, Durability::Rename).unwrap();
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    assert!(damaged(&report)[0].problem.contains("does not match column sym"), "{:#?}", report.findings);
}

#[test]
fn order_file_problems_and_a_shifted_sym_file_are_found() {
    let (_dir, db) = database();
    let trade = table_dir(&db, "trade");
    fs::write(trade.join(COLUMN_ORDER_FILE), "sym\nsize\n").unwrap();
    fs::write(table_dir(&db, "quote").join(COLUMN_ORDER_FILE), "").unwrap();
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let problems: Vec<String> = damaged(&report).iter().map(|f| f.problem.clone()).collect();
    assert_eq!(
        problems,
        [
            // quote's empty .d lists no column, so it has no rows against its record's 5000
            "0 rows, but the completion record says 5000",
            ".d lists no column (a table has at least one)",
            "column file id is not listed in .d",
            "column file size is not listed in .d",
            "column file sym is not listed in .d",
            "column file id is not listed in .d",
        ]
    );
    let sym = db.sym().path().to_path_buf();
    fs::write(&sym, "B\nC\n").unwrap();
    let report = verify_database(&db, &VerifyScope { table: Some("trade".into()), ..Default::default() }).unwrap();
    let found = damaged(&report);
    assert_eq!(found[0].path, sym);
    assert!(found[0].problem.contains("lines are missing"), "{}", found[0]);
}

#[test]
fn a_torn_plain_append_is_a_note_and_the_scope_is_checked() {
    let (_dir, db) = database();
    let path = table_dir(&db, "trade").join("size");
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(&[7; 5]);
    fs::write(&path, bytes).unwrap();
    PlainColumn::open(&path).unwrap().verify().unwrap();
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    assert!(report.is_intact());
    assert_eq!(report.findings[0].severity, Severity::Note);
    assert_eq!(report.findings[0].place, Place::Bytes(64 + 8 * 5000..64 + 8 * 5000 + 5));
    let missing = VerifyScope { partition: Some("2025.01.03".parse().unwrap()), table: None };
    assert!(verify_database(&db, &missing).unwrap_err().to_string().contains("no partition 2025.01.03"));
    let missing = VerifyScope { partition: None, table: Some("nope".into()) };
    assert!(verify_database(&db, &missing).unwrap_err().to_string().contains("no table nope"));
}

#[test]
fn a_damaged_completion_record_is_found_and_the_partition_is_not_served() {
    let (_dir, db) = database();
    let date: Date = "2025.01.02".parse().unwrap();
    let record = db.partition_dir(date).join(crate::partition::PARTITION_RECORD);
    flip(&record, 20);
    let err = db.partitions().unwrap_err().to_string();
    assert!(err.contains("partition 2025.01.02 cannot be served"), "readers are told, not served less: {err}");
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let found = damaged(&report);
    assert!(
        found.iter().any(|f| f.path == record && f.problem.contains("nothing of partition 2025.01.02")),
        "{found:#?}"
    );
    assert!(!report.is_intact());
}

#[test]
fn a_row_count_that_differs_from_the_completion_record_is_found() {
    let (_dir, db) = database();
    let date: Date = "2025.01.02".parse().unwrap();
    let dir = db.partition_dir(date);
    let mut record = crate::partition::PartitionRecord::read(&dir).unwrap().unwrap();
    record.tables.iter_mut().find(|(t, _)| t == "trade").unwrap().1 = 4999;
    record.write(&dir, Durability::Rename).unwrap();
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let found = damaged(&report);
    assert!(
        found.iter().any(
            |f| f.path == dir.join("trade") && f.problem.contains("5000 rows, but the completion record says 4999")
        ),
        "{found:#?}"
    );
}

#[test]
fn a_splayed_table_that_lost_its_order_file_is_found_but_segments_are_not_tables() {
    let (dir, db) = database();
    let splayed = TableLocation::Splayed("names".into());
    let table = Table::new(vec![("name".into(), Column::from_symbols(["A", "B"]))]).unwrap();
    db.write_table(&splayed, &table, &TableWrite::default()).unwrap();
    fs::remove_file(db.table_dir(&splayed).join(COLUMN_ORDER_FILE)).unwrap();
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let found = damaged(&report);
    assert!(found.iter().any(|f| f.path == db.table_dir(&splayed).join(COLUMN_ORDER_FILE)), "{found:#?}");

    // A par.txt segment at the root is a directory named like a table, and not one.
    fs::remove_dir_all(db.table_dir(&splayed)).unwrap();
    fs::write(dir.path().join(crate::database::SEGMENTS_FILE), "seg0\n").unwrap();
    fs::create_dir(dir.path().join("seg0")).unwrap();
    let db = Database::open(dir.path()).unwrap();
    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    assert!(damaged(&report).iter().all(|f| !f.path.starts_with(dir.path().join("seg0"))), "{:#?}", report.findings);
}

#[test]
fn a_null_count_that_differs_from_the_values_is_found_in_both_kinds() {
    let (_dir, db) = database();
    // A plain file whose header, checksum intact, claims a null among values with none
    // (readers would look for it; one claiming none would hide real nulls).
    let plain = table_dir(&db, "trade").join("size");
    let mut bytes = fs::read(&plain).unwrap();
    bytes[32..40].copy_from_slice(&1u64.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[0..28]), &bytes[32..64]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    fs::write(&plain, &bytes).unwrap();
    // A compressed block's entry claiming 3 nulls, index and trailer checksums intact.
    let packed = table_dir(&db, "quote").join("size");
    let mut bytes = fs::read(&packed).unwrap();
    let trailer = bytes.len() - 48;
    let index_at = u64::from_le_bytes(bytes[trailer + 16..trailer + 24].try_into().unwrap()) as usize;
    bytes[index_at + 40 + 21] = 3;
    let index_crc = crc32c::crc32c(&bytes[index_at..trailer]);
    bytes[trailer + 32..trailer + 36].copy_from_slice(&index_crc.to_le_bytes());
    let trailer_crc = crc32c::crc32c(&bytes[trailer..trailer + 36]);
    bytes[trailer + 36..trailer + 40].copy_from_slice(&trailer_crc.to_le_bytes());
    fs::write(&packed, &bytes).unwrap();

    let report = verify_database(&db, &VerifyScope::default()).unwrap();
    let found = damaged(&report);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().all(|f| f.problem.contains("recorded null count") && matches!(f.repair, Repair::Rebuild(_))));
    assert!(found.iter().any(|f| f.path == plain && f.problem.contains("is 1, the values hold 0")));
    assert!(found.iter().any(|f| f.path == packed && matches!(f.place, Place::Block { index: 1, .. })));
}
