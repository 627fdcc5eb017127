//! The zip benchmark end to end on a tiny TAQ day: real files, real reads.

use strata_taq::{TaqConfig, generate};

use super::*;
use crate::report::{Cell, Heat, Section};

fn tiny_tables() -> Vec<ZipTable> {
    let day = generate(&TaqConfig { quotes: 6_000, trades: 600, syms: 8, seed: 3, ..TaqConfig::default() });
    vec![
        ZipTable { name: "quote".into(), table: day.quote, parted: Some("Symbol".into()) },
        ZipTable { name: "trade".into(), table: day.trade, parted: Some("Symbol".into()) },
    ]
}

fn tiny_options(specs: &[&str]) -> ZipOptions {
    ZipOptions {
        specs: specs.iter().map(|s| s.parse().unwrap()).collect(),
        cold: ColdCache::Fadvise,
        range_count: 4,
        range_rows: 100,
        ..ZipOptions::new()
    }
}

#[test]
fn every_column_and_spec_is_measured_with_ratios_against_uncompressed() {
    let dir = tempfile::tempdir().unwrap();
    let outcome =
        run(&tiny_tables(), &tiny_options(&["zstd:1", "zstd:22", "dec+pco:4", "auto"]), dir.path(), false).unwrap();
    let results = outcome.report.table(RESULTS_TABLE).unwrap();
    // (23 + 15 columns + a total row each) x (none + 4 specs)
    assert_eq!(results.rows.len(), (24 + 16) * 5);
    let col = |name: &str| results.column_index(name).unwrap();
    let row = |table: &str, column: &str, spec: &str| {
        results
            .rows
            .iter()
            .find(|r| r[0] == Cell::from(table) && r[1] == Cell::from(column) && r[3] == Cell::from(spec))
            .unwrap_or_else(|| panic!("{table} {column} {spec}"))
    };
    let base = row("quote", "Time", "none");
    assert_eq!(base[col("write_ratio")].as_number(), Some(1.0));
    assert!(base[col("relative_size_pct")].as_number().unwrap() > 100.0, "the plain file has a header");
    let flag = row("quote", "FINRA_BBO_Indicator", "zstd:1");
    assert!(flag[col("relative_size_pct")].as_number().unwrap() < 5.0, "a constant column nearly vanishes");
    // dec cannot apply to chars: the stored spec shows what was written instead.
    assert_eq!(row("quote", "Exchange", "dec+pco:4")[col("stored_spec")], Cell::from("zstd:3"));
    assert_eq!(row("quote", "Bid_Price", "dec+pco:4")[col("stored_spec")], Cell::from("dec+pco:4"));
    let auto_price = &row("quote", "Bid_Price", "auto")[col("stored_spec")];
    assert_ne!(*auto_price, Cell::from("auto"), "auto is stored as a concrete chain");
    let total = row("trade", TABLE_ROW, "zstd:22");
    assert!(total[col("relative_size_pct")].as_number().unwrap() < 60.0, "{total:?}");
    for r in &results.rows {
        for name in ["write_ratio", "read_cold_ratio", "read_warm_ratio", "ranges_cold_ratio", "ranges_warm_ratio"] {
            let v = r[col(name)].as_number().unwrap();
            assert!(v.is_finite() && v > 0.0, "{name} in {r:?}");
        }
    }
    assert!(outcome.report.table(TARGETS_TABLE).is_some());
    let autos = outcome.report.table(AUTO_TABLE).unwrap();
    assert_eq!(autos.rows.len(), 23 + 15);
    assert!(autos.rows.iter().all(|r| matches!(&r[4], Cell::Text(why) if why.starts_with("ratio: "))));
    let queries = outcome.report.table("query time ratios").unwrap();
    assert_eq!(queries.rows.len(), 2 * 5, "the symbol slice on both tables for every spec");
    assert_eq!(outcome.report.charts().count(), 2);
    assert!(outcome.report.to_html().contains("hsl("), "heat-map colours");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "scratch copies are removed");
}

#[test]
fn small_tables_are_warned_about_and_their_time_figures_marked() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run(&tiny_tables(), &tiny_options(&["zstd:1"]), dir.path(), false).unwrap();
    let report = &outcome.report;
    let warning = report
        .sections
        .iter()
        .find_map(|s| match s {
            Section::Warning(text) => Some(text),
            _ => None,
        })
        .expect("a warning about the tiny tables");
    assert!(warning.contains("quote has 6000 rows, trade has 600 rows"), "{warning}");
    let results = report.table(RESULTS_TABLE).unwrap();
    assert!(results.appendix, "the long flat table goes to the end of the page");
    let col = |name: &str| results.column_index(name).unwrap();
    for (r, row) in results.rows.iter().enumerate() {
        assert!(results.flags.contains_key(&(r, col("read_warm_ratio"))), "{row:?}");
        assert!(!results.flags.contains_key(&(r, col("relative_size_pct"))), "sizes are right at any size");
    }
    let times = report.table("quote: write time ratio").unwrap();
    assert!(times.warnings[0].starts_with("quote has 6000 rows"), "{:?}", times.warnings);
    assert!(times.columns.iter().all(|c| c.heat == Heat::Off), "no colours on noise");
    let sizes = report.table("quote: relative size %").unwrap();
    assert!(sizes.heat_one_scale && sizes.warnings.is_empty() && sizes.columns[1].heat == Heat::LowerIsBetter);
    let queries = report.table("query time ratios").unwrap();
    assert_eq!(queries.flags.len(), 2 * queries.rows.len(), "cold and warm ratio of every row");
}

#[test]
fn tables_from_the_threshold_up_are_not_small() {
    assert!(tables::small_table("t", SMALL_TABLE_ROWS).is_none());
    let caveat = tables::small_table("t", SMALL_TABLE_ROWS - 1).unwrap();
    assert!(caveat.to_string().starts_with("t has 99999 rows (under 100000)"));
}

#[test]
fn seed_queries_run_through_sql_on_a_copy_of_the_day_per_spec() {
    let dir = tempfile::tempdir().unwrap();
    // The query set picks rare and busy symbols, so it needs at least 20.
    let day = generate(&TaqConfig { quotes: 8_000, trades: 2_000, syms: 24, seed: 5, ..TaqConfig::default() });
    let tables = vec![ZipTable { name: "quote".into(), table: day.quote.clone(), parted: Some("Symbol".into()) }];
    let date: strata_store::Date = "2024-01-02".parse().unwrap();
    let options = ZipOptions { seed_queries: Some(SeedQueryDay { day, date }), ..tiny_options(&["zstd:1", "auto"]) };
    let outcome = run(&tables, &options, dir.path(), false).unwrap();
    let seed: Vec<_> = outcome.results.queries.iter().filter(|q| q.table == SEED_QUERIES_TABLE).collect();
    assert_eq!(seed.len(), 14 * 3, "fourteen queries on the none, zstd:1 and auto copies");
    for spec in ["none", "zstd:1", "auto"] {
        let names: Vec<&str> = seed.iter().filter(|q| q.spec == spec).map(|q| q.query.as_str()).collect();
        assert_eq!(names.len(), 14, "{spec}");
        assert!(names.iter().any(|n| n.starts_with("q01")) && names.iter().any(|n| n.starts_with("q14")), "{names:?}");
    }
    assert!(seed.iter().all(|q| q.cold > 0.0 && q.warm > 0.0));
    let table = outcome.report.table("query time ratios").unwrap();
    assert_eq!(table.rows.len(), 3 + 15 * 3, "the symbol slice on quote, the seed set and its geomean, per spec");
    let geomean = |spec: &str| {
        table.rows.iter().find(|r| r[1] == Cell::from(tables::SEED_GEOMEAN) && r[2] == Cell::from(spec)).unwrap()[3]
            .as_number()
            .unwrap()
    };
    assert_eq!(geomean("none"), 1.0);
    assert!(geomean("zstd:1").is_finite() && geomean("zstd:1") > 0.0);
    assert!(outcome.report.to_terminal().contains("seed 000's fourteen queries"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "scratch copies are removed");
}

#[test]
fn recommendations_are_table_specs_that_load_and_apply() {
    let dir = tempfile::tempdir().unwrap();
    let tables = tiny_tables();
    let outcome =
        run(&tables[..1], &tiny_options(&["lz4hc:0", "zstd:1", "zstd:22", "dec+pco:4"]), dir.path(), false).unwrap();
    let (name, rec) = &outcome.recommendations[0];
    assert_eq!(name, "quote");
    assert_eq!(rec.columns.len(), 23);
    let sym = rec.columns.iter().find(|c| c.column == "Symbol").unwrap();
    assert!(!sym.cold.is_compressed(), "the parted column stays plain");
    let price = rec.columns.iter().find(|c| c.column == "Bid_Price").unwrap();
    assert!(price.cold.is_compressed() && price.mid.is_compressed(), "{price:?}");
    for spec in [&rec.hot, &rec.mid, &rec.cold] {
        let path = dir.path().join("tier.toml");
        std::fs::write(&path, spec.to_toml()).unwrap();
        let loaded = strata_store::TableSpec::load(&path).unwrap();
        assert_eq!(&loaded, spec);
        for (column, c) in tables[0].table.iter() {
            loaded.spec_for(column, c.ty(), &strata_codec::CompressionSpec::none()).unwrap();
        }
    }
}

#[test]
fn bad_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = tiny_options(&["zstd:1"]);
    options.lbs = Some(30);
    let err = run(&tiny_tables(), &options, dir.path(), false).err().unwrap().to_string();
    assert!(err.contains("--lbs 30"), "{err}");
    assert!(run(&[], &tiny_options(&["zstd:1"]), dir.path(), false).is_err());
}
