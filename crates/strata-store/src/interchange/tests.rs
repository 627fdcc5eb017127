//! CSV and Parquet round trips and the errors bad files get, on real files.

use super::*;
use crate::arrow::TYPE_METADATA_KEY;
use crate::arrow::tests::{sample_columns, sample_table};

fn types_of(table: &Table) -> Vec<(String, ColumnType)> {
    table.iter().map(|(name, column)| (name.to_string(), column.ty())).collect()
}

fn csv_file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn csv_round_trips_every_type_given_the_types() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.csv");
    let table = sample_table();
    write_csv(&table, &path).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("boolean,byte,short,int,long,"), "{text}");
    assert!(text.contains(",2024-01-02T09:30:00.123456789,"), "timestamps are ISO-8601 with ns: {text}");
    assert!(text.contains("\"hello, \"\"world\"\"\""), "quoted: {text}");
    assert_eq!(read_csv(&path, &types_of(&table)).unwrap(), table);
}

#[test]
fn csv_round_trips_common_types_by_inference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trades.csv");
    let wanted = ["boolean", "long", "float", "symbol", "timestamp", "date", "char", "string"];
    let columns = sample_columns().into_iter().filter(|(name, _)| wanted.contains(&name.as_str())).collect();
    let table = Table::new(columns).unwrap();
    write_csv(&table, &path).unwrap();
    // Only text columns other than symbols need telling.
    let overrides = [("char".to_string(), ColumnType::Char), ("string".to_string(), ColumnType::String)];
    assert_eq!(read_csv(&path, &overrides).unwrap(), table);
}

#[test]
fn csv_reads_iso_and_kdb_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let text = "time,n\n2024-01-02T09:30:00.123456789,1\n2024-01-02 09:30:00,2\n2024.01.02D09:30:00.000000000,3\n";
    let path = csv_file(&dir, "t.csv", text);
    let table = read_csv(&path, &[("time".into(), ColumnType::Timestamp)]).unwrap();
    let at_930 = 1_704_187_800_000_000_000i64;
    assert_eq!(table.column("time").unwrap().values::<i64>(), [at_930 + 123_456_789, at_930, at_930]);

    let iso_only = csv_file(&dir, "iso.csv", "time\n2024-01-02T09:30:00.5\n2024-01-02 09:30:00\n");
    let inferred = read_csv(&iso_only, &[]).unwrap();
    assert_eq!(inferred.column("time").unwrap().values::<i64>(), [at_930 + 500_000_000, at_930]);
}

#[test]
fn csv_value_errors_name_file_line_column_value_and_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = csv_file(&dir, "bad.csv", "time,size\n1,100\n2,200\n3,lots\n");
    let err = read_csv(&path, &[("size".into(), ColumnType::Long)]).unwrap_err().to_string();
    for part in ["bad.csv", "line 4", "column size", "\"lots\"", "is not a long"] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
    let path = csv_file(&dir, "when.csv", "when\n2024-01-02\n2024-01-32\n");
    let err = read_csv(&path, &[]).unwrap_err().to_string();
    assert!(err.contains("when.csv: line 3: column when: value \"2024-01-32\" is not a date"), "{err}");
    assert!(err.contains("inferred"), "says the type was inferred: {err}");

    let path = csv_file(&dir, "ragged.csv", "a,b\n1,2\n3\n");
    let err = read_csv(&path, &[]).unwrap_err().to_string();
    assert!(err.contains("ragged.csv") && err.contains("line 3"), "{err}");
    let path = csv_file(&dir, "names.csv", "my col\n1\n");
    let err = read_csv(&path, &[]).unwrap_err().to_string();
    assert!(err.contains("names.csv: line 1") && err.contains("\"my col\""), "{err}");
    let path = csv_file(&dir, "ok.csv", "a,b\n1,2\n");
    let err = read_csv(&path, &[("nope".into(), ColumnType::Long)]).unwrap_err().to_string();
    assert!(err.contains("ok.csv") && err.contains("nope") && err.contains("columns are: a, b"), "{err}");
    let err = read_csv(&dir.path().join("missing.csv"), &[]).unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }) && err.to_string().contains("missing.csv"), "{err}");
    let path = csv_file(&dir, "empty.csv", "");
    assert!(read_csv(&path, &[]).unwrap_err().to_string().contains("no header row"));
}

#[test]
fn csv_empty_fields_are_kdb_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let path = csv_file(&dir, "nulls.csv", "a,b,c,d,e,f\n1,x,2024-01-02,1.5,y,q\n,,,,,\n");
    let overrides = [("e".to_string(), ColumnType::String), ("f".to_string(), ColumnType::Char)];
    let table = read_csv(&path, &overrides).unwrap();
    assert_eq!(table.column("a").unwrap().values::<i64>(), [1, i64::MIN]);
    assert_eq!(table.column("b").unwrap().symbol(1), "");
    assert_eq!(table.column("c").unwrap().values::<i32>()[1], i32::MIN);
    assert!(table.column("d").unwrap().values::<f64>()[1].is_nan());
    assert_eq!(table.column("e").unwrap().string(1), "");
    assert_eq!(table.column("f").unwrap().values::<u8>(), b"q ");

    // A one-column table's null must not become a blank line, which readers skip.
    let lone = Table::new(vec![("x".into(), Column::from_values(ColumnType::Long, vec![1i64, i64::MIN, 2]).unwrap())])
        .unwrap();
    let path = dir.path().join("lone.csv");
    write_csv(&lone, &path).unwrap();
    assert_eq!(read_csv(&path, &[]).unwrap(), lone);
}

#[test]
fn parquet_round_trips_every_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.parquet");
    let table = sample_table();
    write_parquet(&table, &path).unwrap();
    assert_eq!(read_parquet(&path, &[]).unwrap(), table);

    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
    let symbol = builder.schema().field_with_name("symbol").unwrap().clone();
    assert!(matches!(symbol.data_type(), DataType::Dictionary(..)), "{symbol:?}");
    assert_eq!(symbol.metadata().get(TYPE_METADATA_KEY).map(String::as_str), Some("symbol"));
    let chunk = builder.metadata().row_group(0).column(0).compression();
    assert!(matches!(chunk, Compression::ZSTD(_)), "{chunk:?}");

    let as_int = read_parquet(&path, &[("minute".into(), ColumnType::Int)]).unwrap();
    assert_eq!(as_int.column("minute").unwrap().ty(), ColumnType::Int, "overrides win over metadata");
    let err = read_parquet(&path, &[("nope".into(), ColumnType::Int)]).unwrap_err().to_string();
    assert!(err.contains("all.parquet") && err.contains("nope") && err.contains("boolean, byte"), "{err}");
}

#[test]
fn parquet_directories_are_read_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let table = sample_table();
    write_parquet(&table.take(&[2]), &dir.path().join("b.parquet")).unwrap();
    write_parquet(&table.take(&[0, 1]), &dir.path().join("a.parquet")).unwrap();
    fs::write(dir.path().join("notes.txt"), "not parquet").unwrap();
    assert_eq!(read_parquet(dir.path(), &[]).unwrap(), table);

    let other = Table::new(vec![("x".into(), Column::from_symbols(["a"]))]).unwrap();
    write_parquet(&other, &dir.path().join("c.parquet")).unwrap();
    let err = read_parquet(dir.path(), &[]).unwrap_err().to_string();
    assert!(err.contains("c.parquet") && err.contains("differ") && err.contains("x:symbol"), "{err}");

    let empty = tempfile::tempdir().unwrap();
    assert!(read_parquet(empty.path(), &[]).unwrap_err().to_string().contains("no *.parquet files"));
    let junk = csv_file(&empty, "junk.parquet", "a,b\n");
    let err = read_parquet(&junk, &[]).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }) && err.to_string().contains("junk.parquet"), "{err}");
}

#[test]
fn writes_replace_the_target_whole_and_leave_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = sample_table();
    for (name, write) in [("t.csv", write_csv as fn(&Table, &Path) -> Result<()>), ("t.parquet", write_parquet)] {
        let path = dir.path().join(name);
        fs::write(&path, "old").unwrap();
        write(&table, &path).unwrap();
        assert_ne!(fs::read(&path).unwrap(), b"old");
    }
    let mut names: Vec<String> =
        fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["t.csv", "t.parquet"]);
    let err = write_csv(&table, &dir.path().join("no/such/dir.csv")).unwrap_err();
    assert!(err.to_string().contains("no/such"), "{err}");
}

#[test]
fn ragged_rows_and_bad_bytes_are_named_by_column_in_arrow_csvs_wording() {
    // arrow-csv 59's messages, from schema inference (the csv crate) and from the
    // reader past the inferred rows: a change of wording fails here, not silently.
    let names = ["time", "sym", "price"];
    let cases = [
        (
            "Encountered unequal lengths between records on CSV file. Expected 3 records, found 2 records at line 3",
            "line 3: 2 fields where the header has 3: no value for column price",
        ),
        (
            "incorrect number of fields for line 1000005, expected 3 got 1",
            "line 1000005: 1 field where the header has 3: no value for columns sym, price",
        ),
        (
            "incorrect number of fields for line 7, expected 3 got more than 3",
            "line 7: 4 fields where the header has 3: a field past the last column, price",
        ),
        ("Encountered invalid UTF-8 data for line 9 and field 2", "line 9: column sym: the text is not UTF-8"),
        (
            "Encountered UTF-8 error while reading CSV file: invalid utf-8: invalid UTF-8 in field 1 near byte index 3 at line 4",
            "line 4: column sym: the text is not UTF-8 (from byte 3 of the field)",
        ),
    ];
    for (arrow, ours) in cases {
        assert_eq!(super::csv_problem(arrow, &names).as_deref(), Some(ours), "{arrow}");
    }
    assert_eq!(super::csv_problem("something else", &names), None);
}

#[test]
fn an_unterminated_quote_is_an_error_naming_its_line_not_a_short_import() {
    let dir = tempfile::tempdir().unwrap();
    // The quote opens the last field of line 3, so the rest of the file would fold
    // into it and the import would hold 2 rows of 3 without a word.
    let path = csv_file(&dir, "q.csv", "sym,size\nA,1\nB,\"2\nC,3\n");
    let err = read_csv(&path, &[]).unwrap_err().to_string();
    assert!(err.contains("q.csv") && err.contains("line 3") && err.contains("never closed"), "{err}");
    // Closed quotes, escaped ones and a quote inside an unquoted field still read.
    let path = csv_file(&dir, "ok.csv", "sym,size\n\"A, Inc\",1\n\"B \"\"x\"\"\",2\nC\",3\n");
    assert_eq!(read_csv(&path, &[]).unwrap().len(), 3);
}
