//! `strata demo`: the main job. Starts a tickerplant, an RDB and an HDB on loopback,
//! runs the feed simulator with TAQ-shaped trades, queries the RDB, forces end of
//! day, queries the HDB, prints counts, timings and per-hop latencies, and shuts
//! everything down. `strata demo storage` is the storage demo: the built-in trade
//! table written once per compression spec, then as an end-of-day partition.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use strata_bench::table_write::{self, TableWriteOptions};
use strata_codec::CompressionSpec;
use strata_ipc::{Atom, Connection, K};
use strata_store::{Attribute, Database, Date, DbConfig, Durability, TableLocation, TableSpec, TableWrite};
use strata_tick::feed::{self, FeedConfig};
use strata_tick::hdb::{self, HdbConfig};
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::schema::Schema;
use strata_tick::tickerplant::{self, TickerplantConfig};

use super::CliResult;
use super::bench::publish;
use crate::output::{human_bytes, stats_table};

/// Arguments of `strata demo`.
#[derive(Args)]
pub struct DemoArgs {
    #[command(subcommand)]
    storage: Option<DemoKind>,
    /// Directory for the journal and the HDB (recreated).
    #[arg(long, default_value = "strata-demo")]
    dir: PathBuf,
    /// Seconds the feed runs.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Rows per update.
    #[arg(long, default_value_t = 10)]
    rows: usize,
    /// Updates per 1 ms timer tick.
    #[arg(long, default_value_t = 5)]
    updates: usize,
}

/// The other demos.
#[derive(Subcommand)]
pub enum DemoKind {
    /// Write a built-in tick-shaped table with several compression specs and print
    /// what each costs on disk and to write.
    Storage(StorageArgs),
}

/// Arguments of `strata demo storage`.
#[derive(Args)]
pub struct StorageArgs {
    /// Database root to (re)create.
    #[arg(long, default_value = "strata-demo-storage")]
    db: PathBuf,
    /// Rows in the built-in trade table.
    #[arg(long, default_value_t = 2_000_000)]
    rows: usize,
    /// Directory for the reports.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// Runs `strata demo` or `strata demo storage`.
pub fn run(args: DemoArgs) -> CliResult {
    match args.storage {
        Some(DemoKind::Storage(storage)) => run_storage(storage),
        None => run_tick(&args),
    }
}

/// The demo's schema: seed 001's trade table.
const DEMO_SCHEMA: &str = "trade time:timespan sym:symbol price:float size:int cond:char\n";

fn run_tick(args: &DemoArgs) -> CliResult {
    if args.dir.exists() {
        std::fs::remove_dir_all(&args.dir)?;
    }
    let (journal, db) = (args.dir.join("journal"), args.dir.join("hdb"));
    std::fs::create_dir_all(&journal)?;
    // End of day compresses with the type-aware spec the storage benchmark favours.
    let spec = args.dir.join("trade.toml");
    std::fs::write(&spec, table_write::typed_spec().to_toml())?;
    let mut config = TickerplantConfig::new(Schema::parse("sym", DEMO_SCHEMA)?, Some(journal));
    config.listen = "127.0.0.1:0".into();
    config.hop_times = true;
    let tp = tickerplant::start(config)?;
    let hdb = hdb::start(HdbConfig { db: db.clone(), listen: "127.0.0.1:0".into(), credentials: None })?;
    let rdb = rdb::start(RdbConfig {
        tp: tp.addr.to_string(),
        user_password: String::new(),
        db: db.clone(),
        listen: Some("127.0.0.1:0".into()),
        credentials: None,
        hdbs: vec![hdb.addr.to_string()],
        table_spec: Some(spec),
    })?;
    let rdb_addr = rdb.addr.expect("the demo RDB listens").to_string();
    println!("tickerplant {}, RDB {rdb_addr}, HDB {} on loopback; data in {}", tp.addr, hdb.addr, args.dir.display());

    let feed = FeedConfig {
        tp: tp.addr.to_string(),
        user_password: String::new(),
        table: "trade".into(),
        rows: args.rows.max(1),
        updates: args.updates,
        timer: Duration::from_millis(1),
        extra_columns: 0,
        duration: Some(Duration::from_secs_f64(args.seconds)),
        max_updates: None,
        sync: false,
        seed: 1,
        stamp_time: true,
    };
    println!("feed: {} rows per update, {} updates per 1 ms tick, for {} s ...", feed.rows, feed.updates, args.seconds);
    let sent = feed::run(&feed, |_| {})?;
    println!(
        "feed sent {} updates, {} rows in {:.2} s ({:.0} rows/s)",
        sent.updates,
        sent.rows,
        sent.seconds,
        sent.rows as f64 / sent.seconds.max(1e-9)
    );

    let mut tp_conn = Connection::connect(&tp.addr.to_string(), "")?;
    let mut rdb_conn = Connection::connect(&rdb_addr, "")?;
    let mut hdb_conn = Connection::connect(&hdb.addr.to_string(), "")?;
    let expected = sent.rows as i64;
    wait_until("the RDB to hold every row", || long(&mut rdb_conn, "count trade").is_ok_and(|n| n == expected))?;
    let mut timings = comfy_table::Table::new();
    timings.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    timings.set_header(["process", "query", "answer", "ms"]);
    for query in ["count trade", "select from trade"] {
        timed(&mut timings, "RDB", &mut rdb_conn, query)?;
    }

    let started = Instant::now();
    tp_conn.sync(&K::string(".u.end[]"))?;
    wait_until("the HDB to load the day", || long(&mut hdb_conn, "count trade").is_ok_and(|n| n == expected))?;
    println!("end of day: RDB wrote the partition and the HDB reloaded it in {:.3} s", started.elapsed().as_secs_f64());
    for query in ["count trade", "select from trade"] {
        timed(&mut timings, "HDB", &mut hdb_conn, query)?;
    }
    timed(&mut timings, "RDB", &mut rdb_conn, "count trade")?;
    println!("{timings}");

    let store = Database::open(&db)?;
    for date in store.partitions()? {
        println!("partition {date}/trade on disk (sorted by sym then time, parted on sym, type-aware spec):");
        println!("{}", stats_table(&store.open_table(&TableLocation::Partition(date, "trade".into()))?.stats()?));
    }
    print_counters("tickerplant", &mut tp_conn)?;
    print_counters("RDB", &mut rdb_conn)?;

    drop((tp_conn, rdb_conn, hdb_conn));
    tp.stop()?;
    rdb.join()?;
    println!("stopped the tickerplant; the RDB followed. Journal and HDB left in {}", args.dir.display());
    Ok(())
}

/// The long answer to `query`.
fn long(conn: &mut Connection, query: &str) -> Result<i64, Box<dyn std::error::Error>> {
    match conn.sync(&K::string(query))? {
        K::Atom(Atom::Long(n)) => Ok(n),
        other => Err(format!("{query}: expected a long, got a {}", other.describe()).into()),
    }
}

/// Polls `ready` every 10 ms, giving up after 60 s.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) -> CliResult {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        if Instant::now() > deadline {
            return Err(format!("gave up waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn timed(table: &mut comfy_table::Table, process: &str, conn: &mut Connection, query: &str) -> CliResult {
    let started = Instant::now();
    let answer = conn.sync(&K::string(query))?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let shown = match &answer {
        K::Atom(Atom::Long(n)) => n.to_string(),
        K::Table(t) => format!("{} rows x {} columns", t.len(), t.names().len()),
        other => other.to_string(),
    };
    table.add_row(vec![process.to_string(), query.to_string(), shown, format!("{ms:.2}")]);
    Ok(())
}

fn print_counters(process: &str, conn: &mut Connection) -> CliResult {
    let K::Dict { keys, values, .. } = conn.sync(&K::string(".strata.counters[]"))? else {
        return Err("counters are not a dictionary".into());
    };
    let (Some(names), K::List(values)) = (keys.as_symbols(), *values) else {
        return Err("counters are not symbols to values".into());
    };
    let shown: Vec<String> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| match v {
            K::Atom(Atom::Long(x)) => format!("{n}={x}"),
            K::Atom(Atom::Float(x)) => format!("{n}={x:.1}"),
            other => format!("{n}={other}"),
        })
        .collect();
    println!("{process} counters: {}", shown.join(" "));
    Ok(())
}

/// The specs the storage demo compares, kdb+'s recommendations first.
const DEMO_SPECS: [&str; 6] = ["none", "qipc", "gzip:5", "lz4hc:5", "zstd:1", "snappy"];

fn run_storage(args: StorageArgs) -> CliResult {
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
