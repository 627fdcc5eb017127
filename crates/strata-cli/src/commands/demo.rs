//! `strata demo`: the main job on built-in data. Writes the built-in trade table into
//! a database once per compression spec, then the way an end-of-day write would
//! (sorted by sym then time, parted on sym, type-aware spec), and prints what each
//! costs on disk and to write, plus the parallel-write speed-up.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use strata_bench::table_write::{self, TableWriteOptions};
use strata_codec::CompressionSpec;
use strata_store::{Attribute, Database, Date, DbConfig, Durability, TableLocation, TableSpec, TableWrite};

use super::CliResult;
use super::bench::publish;
use crate::output::{human_bytes, stats_table};

/// Arguments of `strata demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Database root to (re)create.
    #[arg(long, default_value = "strata-demo")]
    db: PathBuf,
    /// Rows in the built-in trade table.
    #[arg(long, default_value_t = 2_000_000)]
    rows: usize,
    /// Directory for the reports.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// The specs the demo compares, kdb+'s recommendations first.
const DEMO_SPECS: [&str; 6] = ["none", "qipc", "gzip:5", "lz4hc:5", "zstd:1", "snappy"];

/// Runs `strata demo`.
pub fn run(args: DemoArgs) -> CliResult {
    if args.db.exists() {
        std::fs::remove_dir_all(&args.db)?;
    }
    let mut db = Database::open(&args.db)?;
    db.set_config(DbConfig { default_spec: CompressionSpec::none(), durability: Durability::Fsync })?;
    let table = table_write::trade_table(args.rows, strata_bench::data::DEFAULT_SEED);
    println!("built-in trade table: {} rows, columns {}", table.len(), table.names().join(" "));

    let mut summary = comfy_table::Table::new();
    summary.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    summary.set_header(["table", "spec", "stored", "ratio", "write s (fsync)"]);
    let mut specs: Vec<(String, TableSpec)> =
        DEMO_SPECS.iter().map(|s| (s.to_string(), TableSpec::uniform(s.parse().expect("valid")))).collect();
    specs.push(("typed".into(), table_write::typed_spec()));
    for (label, spec) in &specs {
        let name = format!("trade_{}", label.replace([':', '+', '@'], "_"));
        let location = TableLocation::Splayed(name.clone());
        let start = Instant::now();
        db.write_table(&location, &table, &TableWrite { spec: spec.clone(), ..Default::default() })?;
        let seconds = start.elapsed().as_secs_f64();
        let stats = db.open_table(&location)?.stats()?;
        let raw: u64 = stats.iter().map(|s| s.raw_bytes).sum();
        let stored: u64 = stats.iter().map(|s| s.stored_bytes).sum();
        summary.add_row(vec![
            name,
            label.clone(),
            human_bytes(stored),
            format!("{:.2}", raw as f64 / stored as f64),
            format!("{seconds:.3}"),
        ]);
    }
    println!("{summary}");

    // The end-of-day shape: a date partition sorted by sym then time, parted on sym.
    let date: Date = "2025.01.02".parse()?;
    let location = TableLocation::Partition(date, "trade".into());
    let eod = TableWrite {
        spec: table_write::typed_spec(),
        sort_by: vec!["sym".into(), "time".into()],
        attributes: vec![("sym".into(), Attribute::Parted)],
    };
    let start = Instant::now();
    db.write_table(&location, &table, &eod)?;
    println!(
        "\npartition {date}/trade (sorted by sym,time; parted on sym; typed spec) written in {:.3} s:",
        start.elapsed().as_secs_f64()
    );
    println!("{}", stats_table(&db.open_table(&location)?.stats()?));
    let back = db.read_table(&location)?;
    println!("read back {} rows; sym file holds {} symbols", back.len(), db.symbols()?.len());

    let mut options = TableWriteOptions::new(args.rows);
    options.repeats = 2;
    let scratch = args.db.join(".bench");
    std::fs::create_dir_all(&scratch)?;
    let report = table_write::run(&options, &scratch)?;
    std::fs::remove_dir_all(&scratch)?;
    publish(&report, &args.out, "demo-table-write")?;
    println!("database left in {}; try: strata ls {}", args.db.display(), args.db.display());
    Ok(())
}
