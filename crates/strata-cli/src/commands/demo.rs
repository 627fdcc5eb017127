//! `strata demo`: the main job. Starts a tickerplant, an RDB and an HDB on loopback,
//! runs the feed simulator with TAQ-shaped trades and quotes, queries the RDB with
//! SQL (VWAP by sym, one-second bars with `xbar`, an as-of join of trades with the
//! prevailing quote), forces end of day, runs the same SQL on the HDB, prints counts,
//! answers, timings and per-hop latencies, and shuts everything down. `strata demo
//! storage` is the storage demo: the built-in trade table written once per
//! compression spec, then as an end-of-day partition.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use strata_bench::table_write::{self, TableWriteOptions};
use strata_codec::CompressionSpec;
use strata_ipc::arrow::table_to_store;
use strata_ipc::{Atom, Connection, K};
use strata_store::{Attribute, Database, Date, DbConfig, Durability, TableLocation, TableSpec, TableWrite};
use strata_tick::feed::{self, FeedConfig, FeedReport, FeedTable};
use strata_tick::hdb::{self, HdbConfig};
use strata_tick::rdb::{self, RdbConfig};
use strata_tick::schema::Schema;
use strata_tick::sql::QueryLimits;
use strata_tick::tickerplant::{self, TickerplantConfig};

use super::CliResult;
use super::bench::publish;
use crate::output::{human_bytes, stats_table};

/// Arguments of `strata demo`.
#[derive(Args)]
pub struct DemoArgs {
    #[command(subcommand)]
    storage: Option<DemoKind>,
    /// Directory for the journal and the HDB, recreated on every run. A directory
    /// the demo did not make is refused unless --replace is given.
    #[arg(long, default_value = "strata-demo")]
    dir: PathBuf,
    /// Delete --dir even when the demo did not make it.
    #[arg(long)]
    replace: bool,
    /// Seconds the feeds run.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Trade rows per update (quotes come four times as many).
    #[arg(long, default_value_t = 10)]
    rows: usize,
    /// Updates per 1 ms timer tick, per feed.
    #[arg(long, default_value_t = 5)]
    updates: usize,
}

/// The other demos.
#[derive(Subcommand)]
pub enum DemoKind {
    /// Write a built-in tick-shaped table with several compression specs and print
    /// what each costs on disk and to write.
    #[command(
        after_help = "Examples:\n  strata demo storage\n  strata demo storage --rows 1000000 --db /tmp/specs --replace"
    )]
    Storage(StorageArgs),
}

/// Arguments of `strata demo storage`.
#[derive(Args)]
pub struct StorageArgs {
    /// Database root, recreated on every run. A directory the demo did not make is
    /// refused unless --replace is given.
    #[arg(long, default_value = "strata-demo-storage")]
    db: PathBuf,
    /// Delete --db even when the demo did not make it.
    #[arg(long)]
    replace: bool,
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

/// The demo's SQL on the RDB (today so far): VWAP by sym, one-second bars of the
/// busiest sym, and trades joined with the quote prevailing when each happened
/// (the spread, and how far from the mid each trade paid).
const RDB_QUERIES: [(&str, &str); 3] = [
    (
        "VWAP by sym",
        "SELECT sym, wavg(size, price) AS vwap, sum(size) AS volume, count(*) AS trades FROM trade \
         GROUP BY sym ORDER BY volume DESC LIMIT 5",
    ),
    (
        "1 s bars with xbar",
        "SELECT xbar(INTERVAL '1 second', time) AS bar, first(price ORDER BY time) AS open, max(price) AS high, \
         min(price) AS low, last(price ORDER BY time) AS close, sum(size) AS volume FROM trade \
         WHERE sym = (SELECT sym FROM trade GROUP BY sym ORDER BY count(*) DESC LIMIT 1) \
         GROUP BY bar ORDER BY bar LIMIT 5",
    ),
    (
        "as-of join",
        "SELECT t.sym, count(*) AS trades, avg(q.ask - q.bid) AS spread, avg(abs(t.price - (q.bid + q.ask) / 2)) AS paid \
         FROM trade t ASOF JOIN quote q ON t.sym = q.sym AND t.time >= q.time \
         GROUP BY t.sym ORDER BY trades DESC LIMIT 5",
    ),
];

/// The same questions on the HDB, for one date (`{date}`, as `YYYY-MM-DD`).
const HDB_QUERIES: [(&str, &str); 3] = [
    (
        "VWAP by sym",
        "SELECT date, sym, wavg(size, price) AS vwap, sum(size) AS volume, count(*) AS trades FROM trade \
         WHERE date = '{date}' GROUP BY date, sym ORDER BY volume DESC LIMIT 5",
    ),
    (
        "1 s bars with xbar",
        "SELECT xbar(INTERVAL '1 second', time) AS bar, first(price ORDER BY time) AS open, max(price) AS high, \
         min(price) AS low, last(price ORDER BY time) AS close, sum(size) AS volume FROM trade \
         WHERE date = '{date}' \
         AND sym = (SELECT sym FROM trade WHERE date = '{date}' GROUP BY sym ORDER BY count(*) DESC LIMIT 1) \
         GROUP BY bar ORDER BY bar LIMIT 5",
    ),
    (
        "as-of join",
        "SELECT t.sym, count(*) AS trades, avg(q.ask - q.bid) AS spread, avg(abs(t.price - (q.bid + q.ask) / 2)) AS paid \
         FROM (SELECT * FROM trade WHERE date = '{date}') t \
         ASOF JOIN (SELECT * FROM quote WHERE date = '{date}') q ON t.sym = q.sym AND t.time >= q.time \
         GROUP BY t.sym ORDER BY trades DESC LIMIT 5",
    ),
];

/// The file a demo leaves in the directory it makes, so that the next run knows
/// the directory is its own to delete.
const DEMO_MARK: &str = ".strata-demo";

/// Makes `dir` anew: deletes it first when an earlier demo made it (or `replace`
/// says so), refuses a directory with anything else in it, and marks it as the
/// demo's.
fn fresh_demo_dir(dir: &Path, flag: &str, replace: bool) -> CliResult {
    if dir.exists() {
        let ours = dir.join(DEMO_MARK).is_file();
        let empty = dir.is_dir() && std::fs::read_dir(dir)?.next().is_none();
        if !(ours || empty || replace) {
            return Err(format!(
                "{}: exists and was not made by strata demo; give another {flag}, or --replace to delete it",
                dir.display()
            )
            .into());
        }
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(DEMO_MARK), "made by strata demo: deleted by its next run\n")?;
    Ok(())
}

fn run_tick(args: &DemoArgs) -> CliResult {
    fresh_demo_dir(&args.dir, "--dir", args.replace)?;
    let (journal, db) = (args.dir.join("journal"), args.dir.join("hdb"));
    std::fs::create_dir_all(&journal)?;
    // End of day compresses with the type-aware spec the storage benchmark favours.
    let spec = args.dir.join("taq.toml");
    std::fs::write(&spec, table_write::typed_spec().to_toml())?;
    let schema = format!("{}\n{}\n", FeedTable::Trade.schema_line(0), FeedTable::Quote.schema_line(0));
    let mut config = TickerplantConfig::new(Schema::parse("taq", &schema)?, Some(journal));
    config.listen = "127.0.0.1:0".into();
    config.hop_times = true;
    let tp = tickerplant::start(config)?;
    let hdb = hdb::start(HdbConfig {
        db: db.clone(),
        listen: "127.0.0.1:0".into(),
        credentials: None,
        tls: None,
        queries: QueryLimits::default(),
    })?;
    let rdb = rdb::start(RdbConfig {
        tp: tp.addr.to_string(),
        user_password: String::new(),
        db: db.clone(),
        listen: Some("127.0.0.1:0".into()),
        credentials: None,
        tls: None,
        hdbs: vec![hdb.addr.to_string()],
        table_spec: Some(spec),
        queries: QueryLimits::default(),
    })?;
    let rdb_addr = rdb.addr.expect("the demo RDB listens").to_string();
    println!("tickerplant {}, RDB {rdb_addr}, HDB {} on loopback; data in {}", tp.addr, hdb.addr, args.dir.display());
    println!("tables: {}", schema.trim().replace('\n', "; "));

    let feeds: Vec<(FeedTable, usize)> =
        vec![(FeedTable::Trade, args.rows.max(1)), (FeedTable::Quote, 4 * args.rows.max(1))];
    for (table, rows) in &feeds {
        println!(
            "{} feed: {rows} TAQ rows per update, {} updates per 1 ms tick, for {} s ...",
            table.name(),
            args.updates,
            args.seconds
        );
    }
    let sent = std::thread::scope(|scope| {
        let running: Vec<_> = feeds
            .iter()
            .map(|&(table, rows)| {
                let config = FeedConfig {
                    rows,
                    updates: args.updates,
                    duration: Some(Duration::from_secs_f64(args.seconds)),
                    stamp_time: true,
                    ..FeedConfig::new(tp.addr.to_string(), table)
                };
                scope.spawn(move || feed::run(&config, |_| {}))
            })
            .collect();
        running.into_iter().map(|r| r.join().expect("a feed thread")).collect::<Result<Vec<FeedReport>, _>>()
    })?;
    for ((table, _), report) in feeds.iter().zip(&sent) {
        println!(
            "{} feed sent {} updates, {} rows in {:.2} s ({:.0} rows/s)",
            table.name(),
            report.updates,
            report.rows,
            report.seconds,
            report.rows as f64 / report.seconds.max(1e-9)
        );
    }

    let mut tp_conn = Connection::connect(&tp.addr.to_string(), "")?;
    let mut rdb_conn = Connection::connect(&rdb_addr, "")?;
    let mut hdb_conn = Connection::connect(&hdb.addr.to_string(), "")?;
    let (trades, quotes) = (sent[0].rows as i64, sent[1].rows as i64);
    wait_until("the RDB to hold every row", || {
        long(&mut rdb_conn, "count trade").is_ok_and(|n| n == trades)
            && long(&mut rdb_conn, "count quote").is_ok_and(|n| n == quotes)
    })?;
    let mut timings = comfy_table::Table::new();
    timings.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    timings.set_header(["process", "query", "answer", "ms"]);
    for q in ["count trade", "count quote", "select from trade"] {
        timed(&mut timings, "RDB", &mut rdb_conn, q)?;
    }
    for (name, sql) in RDB_QUERIES {
        sql_shown(&mut timings, "RDB", &mut rdb_conn, name, sql)?;
    }

    let K::Atom(Atom::Date(kdb_date)) = tp_conn.sync(&K::string(".u.d"))? else {
        return Err("the tickerplant's .u.d is not a date".into());
    };
    let date = Date(kdb_date + strata_ipc::value::EPOCH_OFFSET_DAYS);
    let started = Instant::now();
    tp_conn.sync(&K::string(".u.end[]"))?;
    wait_until("the HDB to load the day", || {
        long(&mut hdb_conn, "count trade").is_ok_and(|n| n == trades)
            && long(&mut hdb_conn, "count quote").is_ok_and(|n| n == quotes)
    })?;
    println!(
        "end of day {date}: RDB wrote the partition and the HDB reloaded it in {:.3} s",
        started.elapsed().as_secs_f64()
    );
    for q in ["count trade", "count quote", "select from trade"] {
        timed(&mut timings, "HDB", &mut hdb_conn, q)?;
    }
    let day = date.to_string().replace('.', "-");
    for (name, template) in HDB_QUERIES {
        sql_shown(&mut timings, "HDB", &mut hdb_conn, name, &template.replace("{date}", &day))?;
    }
    timed(&mut timings, "RDB", &mut rdb_conn, "count trade")?;
    println!("{timings}");

    let store = Database::open(&db)?;
    for table in ["trade", "quote"] {
        println!("partition {date}/{table} on disk (sorted by sym then time, parted on sym, type-aware spec):");
        println!("{}", stats_table(&store.open_table(&TableLocation::Partition(date, table.into()))?.stats()?));
    }
    print_counters("tickerplant", &mut tp_conn)?;
    print_counters("RDB", &mut rdb_conn)?;

    drop((tp_conn, rdb_conn, hdb_conn));
    tp.stop()?;
    rdb.stop()?;
    println!("stopped the tickerplant and the RDB. Journal and HDB left in {}", args.dir.display());
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

/// Runs a SQL statement, times it, and prints its answer (a q table) under `name`.
fn sql_shown(table: &mut comfy_table::Table, process: &str, conn: &mut Connection, name: &str, sql: &str) -> CliResult {
    let started = Instant::now();
    let answer = conn.sync(&K::string(sql))?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let K::Table(rows) = answer else {
        return Err(format!("{name}: expected a table, got a {}", answer.describe()).into());
    };
    table.add_row(vec![
        process.to_string(),
        format!("SQL: {name}"),
        format!("{} rows x {} columns", rows.len(), rows.names().len()),
        format!("{ms:.2}"),
    ]);
    let store = table_to_store(&rows)?;
    let mut shown = comfy_table::Table::new();
    shown.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    shown.set_header(store.names().to_vec());
    for row in 0..store.len() {
        shown.add_row(store.columns().iter().map(|c| c.text(row)).collect::<Vec<_>>());
    }
    println!("{process} {name}:\n  {}\n{shown}", sql.split_whitespace().collect::<Vec<_>>().join(" "));
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
    fresh_demo_dir(&args.db, "--db", args.replace)?;
    let mut db = Database::open(&args.db)?;
    db.set_config(DbConfig {
        default_spec: CompressionSpec::none(),
        durability: Durability::Fsync,
        ..DbConfig::default()
    })?;
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
    println!("database left in {}; try: strata ls --db {}", args.db.display(), args.db.display());
    Ok(())
}
