//! End-to-end tests of `strata gen taq`, `strata stats columns`, `strata bench zip`
//! and `strata bench zipgrid`: the real binary, real files.

use std::path::Path;

use super::common::*;

fn csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = fields(lines.next().unwrap());
    (header, lines.map(fields).collect())
}

/// One CSV line's fields, as the reports quote them: a field holding a comma or a
/// quote is in quotes, with its quotes doubled.
fn fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => field.push(chars.next().unwrap()),
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[test]
fn gen_taq_writes_four_tables_and_stats_columns_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let parquet = dir.path().join("pq");
    let args = ["--quotes", "5000", "--trades", "500", "--syms", "20", "--seed", "4", "--date", "2022.03.31"];
    let mut gen_args = vec!["gen", "taq", "--db", db.to_str().unwrap(), "--parquet", parquet.to_str().unwrap()];
    gen_args.extend(args);
    let out = ok(&gen_args);
    assert!(out.contains("wrote 5000 quotes and 500 trades"), "{out}");
    for table in ["quote", "trade", "quoteNorm", "tradeNorm"] {
        assert!(db.join("2022.03.31").join(table).join(".d").is_file(), "{table}");
        assert!(parquet.join(table).join("date=2022-03-31").join("part-0.parquet").is_file(), "{table}");
    }
    let listing = ok(&["stats", db.join("2022.03.31/quote").to_str().unwrap()]);
    assert!(listing.contains("parted"), "strata stats PATH still works: {listing}");

    let out_dir = dir.path().join("reports");
    let stats =
        ok(&["stats", "columns", "--db", db.to_str().unwrap(), "--table", "quote", "--out", out_dir.to_str().unwrap()]);
    assert!(stats.contains("Participant_Timestamp") && stats.contains("ref_differ_share"), "{stats}");
    let (header, rows) = csv(&out_dir.join("column-stats-quote.csv"));
    assert_eq!(header[..7], ["column", "type", "rows", "raw_bytes", "unique", "differ", "entropy_bits"]);
    assert_eq!(rows.len(), 23);
    let constant = rows.iter().find(|r| r[0] == "FINRA_BBO_Indicator").unwrap();
    assert_eq!((constant[4].as_str(), constant[5].as_str()), ("1", "1"));

    // The same seed gives the same day.
    let db2 = dir.path().join("hdb2");
    let mut again = vec!["gen", "taq", "--db", db2.to_str().unwrap()];
    again.extend(args);
    ok(&again);
    for file in ["Time", "Bid_Price", "Sequence_Number"] {
        let a = std::fs::read(db.join("2022.03.31/quote").join(file)).unwrap();
        let b = std::fs::read(db2.join("2022.03.31/quote").join(file)).unwrap();
        assert!(a == b, "{file} differs between two runs with one seed");
    }
    let bad = strata(&["stats", "columns", "--db", db.to_str().unwrap(), "--table", "nosuch"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("nosuch"));
}

#[test]
fn bench_zip_reports_every_column_and_spec_and_writes_loadable_tier_specs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let printed = ok(&[
        "bench",
        "zip",
        "--rows",
        "4000",
        "--syms",
        "10",
        "--specs",
        "zstd:1,zstd:22,auto",
        "--cold",
        "fadvise",
        "--out",
        out.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(printed.contains("auto vs zstd") && printed.contains("posix_fadvise"), "{printed}");
    let (header, rows) = csv(&out.join("zip.csv"));
    for name in [
        "table",
        "column",
        "spec",
        "stored_spec",
        "relative_size_pct",
        "write_ratio",
        "write_fsync_ratio",
        "read_cold_ratio",
        "read_warm_ratio",
        "ranges_cold_ratio",
        "ranges_warm_ratio",
    ] {
        assert!(header.iter().any(|h| h == name), "{name} in {header:?}");
    }
    // (quote 23 + trade 15 columns, plus a total row each) x (none + 3 specs)
    assert_eq!(rows.len(), (24 + 16) * 4);
    assert!(out.join("zip.html").is_file());
    let html = std::fs::read_to_string(out.join("zip.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("hsl("), "chart and heat map");
    assert!(out.join("zip-quote-relative-size.csv").is_file());

    // The cold tier's table spec loads and is accepted by a real write.
    let spec = out.join("quote-cold.toml");
    assert!(std::fs::read_to_string(&spec).unwrap().contains("[columns]"));
    let db = dir.path().join("hdb");
    let written = ok(&[
        "gen",
        "taq",
        "--quotes",
        "3000",
        "--trades",
        "300",
        "--syms",
        "5",
        "--db",
        db.to_str().unwrap(),
        "--table-spec",
        spec.to_str().unwrap(),
    ]);
    assert!(written.contains("wrote 3000 quotes"), "{written}");
    let stats = ok(&["stats", db.join("2022.03.31/quote").to_str().unwrap()]);
    assert!(stats.contains("zstd") || stats.contains("pco"), "{stats}");
}

#[test]
fn bench_zip_times_the_seed_queries_per_spec_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let (scratch, out_dir) = (dir.path().to_str().unwrap(), out.to_str().unwrap());
    let args = ["bench", "zip", "--rows", "6000", "--syms", "24", "--specs", "zstd:1", "--cold", "fadvise"];
    ok(&[&args[..], &["--seed-queries", "--out", out_dir, "--dir", scratch]].concat());
    let (header, rows) = csv(&out.join("zip-query-time-ratios.csv"));
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let seed: Vec<_> = rows.iter().filter(|r| r[at("table")] == "taq").collect();
    assert_eq!(seed.len(), 15 * 2, "fourteen queries and their geomean, uncompressed and zstd:1");
    assert!(seed.iter().any(|r| r[at("query")] == "geomean of the seed queries" && r[at("spec")] == "zstd:1"));
    assert!(seed.iter().any(|r| r[at("query")] == "q05 aj trades of someSyms"), "{seed:?}");
    assert!(seed.iter().any(|r| r[at("query")] == "q03 count, avg mid by sym"), "a quoted name: {seed:?}");
    assert!(seed.iter().all(|r| r.len() == header.len()), "every row as wide as the header");
    let refused =
        fails(&[&args[..], &["--trades", "0", "--seed-queries", "--out", out_dir, "--dir", scratch]].concat());
    assert!(refused.contains("--seed-queries needs trades"), "{refused}");
}

#[test]
fn bench_zip_times_the_seed_queries_on_a_stored_day() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let (db_arg, scratch) = (db.to_str().unwrap(), dir.path().to_str().unwrap());
    ok(&["gen", "taq", "--db", db_arg, "--quotes", "6000", "--trades", "600", "--syms", "24", "--date", "2022.03.31"]);
    let out = dir.path().join("reports");
    let args = ["bench", "zip", "--db", db_arg, "--table", "trade", "--specs", "lz4hc:5", "--cold", "fadvise"];
    ok(&[&args[..], &["--seed-queries", "--out", out.to_str().unwrap(), "--dir", scratch]].concat());
    let (header, rows) = csv(&out.join("zip-query-time-ratios.csv"));
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let seed: Vec<_> = rows.iter().filter(|r| r[at("table")] == "taq").collect();
    assert_eq!(seed.len(), 15 * 2, "fourteen queries and their geomean, uncompressed and lz4hc:5");
    assert!(seed.iter().any(|r| r[at("query")] == "q05 aj trades of someSyms" && r[at("spec")] == "lz4hc:5"));

    // A partition without trades cannot answer them. (Removing a recorded table
    // alone makes the whole partition unserved, so the record goes too: the
    // partition is then served as one written before records existed.)
    std::fs::remove_dir_all(db.join("2022.03.31/trade")).unwrap();
    std::fs::remove_file(db.join("2022.03.31/.partition")).unwrap();
    let quote_args = ["bench", "zip", "--db", db_arg, "--table", "quote", "--specs", "lz4hc:5", "--seed-queries"];
    let refused = fails(&[&quote_args[..], &["--out", out.to_str().unwrap(), "--dir", scratch]].concat());
    assert!(refused.contains("has no trade table in partition 2022.03.31"), "{refused}");
}

#[test]
fn bench_zipgrid_runs_a_small_grid_filters_and_reloads_its_csv() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    ok(&[
        "bench",
        "zipgrid",
        "--shape",
        "sorted",
        "--n",
        "5000",
        "--lbs",
        "12,17",
        "--algs",
        "0,3,5",
        "--where",
        "compFactor>2",
        "--out",
        out.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let (header, rows) = csv(&out.join("zipgrid.csv"));
    assert_eq!(
        header,
        ["lbs", "alg", "lvl", "dataType", "dataCount", "compFactor", "writeTime", "readTime", "testTime"]
    );
    assert_eq!(rows.len(), 1 + 2 * (1 + 30));
    assert!(out.join("zipgrid-where-compfactor-2.csv").is_file());
    let reloaded = ok(&[
        "bench",
        "zipgrid",
        "--load",
        out.join("zipgrid.csv").to_str().unwrap(),
        "--out",
        dir.path().join("again").to_str().unwrap(),
    ]);
    assert!(reloaded.contains("best by compFactor"), "{reloaded}");
    let bad = strata(&["bench", "zipgrid", "--shape", "zigzag", "--n", "10"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("contiguous"));
}

#[test]
fn gen_taq_again_refuses_the_day_unless_told_to_replace_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hdb");
    let gen_args = ["gen", "taq", "--db", db.to_str().unwrap(), "--quotes", "3000", "--trades", "300", "--syms", "10"];
    ok(&gen_args);
    let count = || ok(&["sql", "--db", db.to_str().unwrap(), "SELECT count(*) AS n FROM quote", "--format", "csv"]);
    assert_eq!(count(), "n\n3000\n");
    let refused = fails(&gen_args);
    assert!(refused.contains("already holds table quote (3000 rows)"), "{refused}");
    ok(&[&gen_args[..], &["--mode", "replace"]].concat());
    assert_eq!(count(), "n\n3000\n", "the day replaced, not held twice");
    ok(&[&gen_args[..], &["--mode", "append"]].concat());
    assert_eq!(count(), "n\n6000\n", "appending adds the rows, as asked");
}
