//! `strata bench zip` (compression per column and spec, tier recommendations) and
//! `strata bench zipgrid` (zipPerf's lbs x algorithm x level grid).

use std::path::PathBuf;

use clap::Args;
use strata_bench::zip::{self, ColdCache, SeedQueryDay, ZipOptions, ZipTable};
use strata_bench::zipgrid::{self, DataShape, GridOptions, GridSource};
use strata_codec::CompressionSpec;
use strata_store::{ColumnType, Database, Date, TableLocation};
use strata_taq::{QUOTE_TABLE, TRADE_TABLE, TaqConfig, TaqDay, generate};

use super::CliResult;
use super::bench::publish;

/// Arguments of `strata bench zip`.
#[derive(Args)]
pub struct ZipArgs {
    /// Benchmark this database's table instead of built-in TAQ data.
    #[arg(long, requires = "table")]
    db: Option<PathBuf>,
    /// The table (with --db).
    #[arg(long)]
    table: Option<String>,
    /// The date partition (with --db; default: the latest holding the table, or
    /// the splayed table).
    #[arg(long)]
    partition: Option<Date>,
    /// Built-in data: quote rows.
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    /// Built-in data: trade rows (default: a tenth of --rows; 0 measures the quote
    /// table alone).
    #[arg(long)]
    trades: Option<usize>,
    /// Built-in data: instruments.
    #[arg(long, default_value_t = 1000)]
    syms: usize,
    /// Built-in data: seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Specs to compare (comma-separated); default: the 17 kdb+ configurations of
    /// KX's compression study of NYSE TAQ, Strata's chains and auto.
    #[arg(long, value_delimiter = ',')]
    specs: Vec<CompressionSpec>,
    /// Block size exponent for every spec (12..20).
    #[arg(long)]
    lbs: Option<u8>,
    /// Writes per column and spec; the fastest counts.
    #[arg(long, default_value_t = 1)]
    repeats: usize,
    /// Threads (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// How to make reads cold: `drop` (drop_caches, root only), `fadvise`, or
    /// `auto` (drop when allowed).
    #[arg(long, default_value = "auto")]
    cold: String,
    /// Cold tier: the most a recommended spec may cost to write, as a multiple of
    /// the uncompressed write.
    #[arg(long, default_value_t = 20.0)]
    cold_write_budget: f64,
    /// Scratch directory for the copies (default: the system temp directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Directory for the CSV files, the HTML page and the recommended table specs.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
    /// Also time the TAQ study's fourteen SQL queries on a database of the whole day
    /// written with each spec: the built-in day (needs trades), or with --db the
    /// quote and trade tables of the table's date partition (the study's columns).
    /// Every spec writes the day again, so this takes several times longer.
    #[arg(long)]
    seed_queries: bool,
}

/// Runs `strata bench zip`.
pub fn run_zip(args: ZipArgs) -> CliResult {
    let mut options = ZipOptions::new();
    let tables = match (&args.db, &args.table) {
        (Some(db), Some(table)) => {
            let (loaded, location) = load_table(db, table, args.partition)?;
            if args.seed_queries {
                options.seed_queries = Some(stored_day(db, &location)?);
            }
            vec![loaded]
        }
        _ => {
            let trades = args.trades.unwrap_or(args.rows / 10);
            if args.seed_queries && trades == 0 {
                return Err("--seed-queries needs trades: half of the TAQ study's queries read them".into());
            }
            let config =
                TaqConfig { quotes: args.rows, trades, syms: args.syms, seed: args.seed, ..TaqConfig::default() };
            let day = generate(&config);
            if args.seed_queries {
                options.seed_queries = Some(SeedQueryDay { day: day.clone(), date: config.date });
            }
            let mut tables = vec![ZipTable { name: "quote".into(), table: day.quote, parted: Some("Symbol".into()) }];
            if trades > 0 {
                tables.push(ZipTable { name: "trade".into(), table: day.trade, parted: Some("Symbol".into()) });
            }
            tables
        }
    };
    if !args.specs.is_empty() {
        options.specs = args.specs;
    }
    options.lbs = args.lbs;
    options.repeats = args.repeats;
    options.cold_write_budget = args.cold_write_budget;
    if let Some(threads) = args.threads {
        options.threads = threads;
    }
    options.cold = match args.cold.as_str() {
        "auto" => ColdCache::detect(),
        "drop" => ColdCache::DropCaches,
        "fadvise" => ColdCache::Fadvise,
        other => return Err(format!("--cold {other:?}: expected auto, drop or fadvise").into()),
    };
    let scratch =
        args.dir.clone().unwrap_or_else(std::env::temp_dir).join(format!("strata-zip-{}", std::process::id()));
    let outcome = zip::run(&tables, &options, &scratch, true);
    std::fs::remove_dir_all(&scratch).ok();
    let outcome = outcome?;
    publish(&outcome.report, &args.out, "zip")?;
    for (table, rec) in &outcome.recommendations {
        for (tier, spec) in [("hot", &rec.hot), ("mid", &rec.mid), ("cold", &rec.cold)] {
            let path = args.out.join(format!("{table}-{tier}.toml"));
            std::fs::write(&path, spec.to_toml()).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("wrote {} (strata import --table-spec, strata gen taq --table-spec)", path.display());
        }
    }
    Ok(())
}

/// A database table as a benchmark table, and where it was found; a sorted symbol
/// column gets the parted attribute, as the table's writer would have given it.
fn load_table(
    db: &std::path::Path,
    table: &str,
    partition: Option<Date>,
) -> Result<(ZipTable, TableLocation), Box<dyn std::error::Error>> {
    let db = Database::open_existing(db)?;
    let location = match partition {
        Some(date) => TableLocation::Partition(date, table.to_string()),
        None if db.root().join(table).is_dir() => TableLocation::Splayed(table.to_string()),
        None => {
            let dates = db.partitions()?;
            let date = dates
                .into_iter()
                .rev()
                .find(|d| db.table_dir(&TableLocation::Partition(*d, table.to_string())).is_dir())
                .ok_or_else(|| format!("{}: no table {table}", db.root().display()))?;
            TableLocation::Partition(date, table.to_string())
        }
    };
    let data = db.read_table(&location)?;
    let parted = db
        .open_table(&location)?
        .stats()?
        .into_iter()
        .find(|s| s.ty == ColumnType::Symbol && s.attribute == strata_store::Attribute::Parted)
        .map(|s| s.name);
    Ok((ZipTable { name: table.to_string(), table: data, parted }, location))
}

/// The TAQ day stored in the date partition of `location`, for the seed queries.
fn stored_day(db: &std::path::Path, location: &TableLocation) -> Result<SeedQueryDay, Box<dyn std::error::Error>> {
    let TableLocation::Partition(date, _) = location else {
        return Err(format!(
            "--seed-queries: {} in {} is splayed, not in a date partition; the queries read a day",
            location.table(),
            db.display()
        )
        .into());
    };
    let database = Database::open(db)?;
    let read = |name: &str| {
        let at = TableLocation::Partition(*date, name.to_string());
        if !database.table_dir(&at).is_dir() {
            return Err(format!(
                "--seed-queries: {} has no {name} table in partition {date}; the queries read quote and trade",
                db.display()
            ));
        }
        database.read_table(&at).map_err(|e| e.to_string())
    };
    let day = TaqDay::from_tables(read(QUOTE_TABLE)?, read(TRADE_TABLE)?)
        .map_err(|e| format!("--seed-queries: {}, partition {date}: {e}", db.display()))?;
    Ok(SeedQueryDay { day, date: *date })
}

/// Arguments of `strata bench zipgrid`.
#[derive(Args)]
pub struct ZipgridArgs {
    /// Data shape: random (longs), sorted, contiguous, booleans, symbols.
    #[arg(long, default_value = "random")]
    shape: String,
    /// Values of the shape.
    #[arg(long, default_value_t = 1_000_000)]
    n: usize,
    /// Seed for the shape.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Measure a column of a database instead (with --table and --column).
    #[arg(long, requires_all = ["table", "column"])]
    db: Option<PathBuf>,
    /// The table (with --db).
    #[arg(long)]
    table: Option<String>,
    /// The column (with --db).
    #[arg(long)]
    column: Option<String>,
    /// The date partition (with --db).
    #[arg(long)]
    partition: Option<Date>,
    /// Repeats per configuration (writes are averaged, as zipPerf does).
    #[arg(long, default_value_t = 1)]
    k: usize,
    /// Block size exponents (comma-separated; default 12..20).
    #[arg(long, value_delimiter = ',')]
    lbs: Vec<u8>,
    /// Algorithms (comma-separated numbers 0..6; default all, 6 = pco).
    #[arg(long, value_delimiter = ',')]
    algs: Vec<u8>,
    /// Constraint filters on the results, e.g. `writeTime<0.3,compFactor>2`.
    #[arg(long = "where")]
    filter: Option<String>,
    /// Reload and summarise a results CSV saved by an earlier run instead of measuring.
    #[arg(long)]
    load: Option<PathBuf>,
    /// Scratch directory (default: the system temp directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// Runs `strata bench zipgrid`.
pub fn run_zipgrid(args: ZipgridArgs) -> CliResult {
    let filters = match &args.filter {
        Some(text) => zipgrid::parse_filters(text)?,
        None => Vec::new(),
    };
    let rows = match &args.load {
        Some(path) => zipgrid::load_csv(path)?,
        None => {
            let source = match (&args.db, &args.table, &args.column) {
                (Some(db), Some(table), Some(column)) => {
                    let (loaded, _) = load_table(db, table, args.partition)?;
                    GridSource::column(column, loaded.table.column(column)?)
                }
                _ => GridSource::shape(args.shape.parse::<DataShape>()?, args.n, args.seed),
            };
            let mut options = GridOptions::new();
            options.repeats = args.k;
            if !args.lbs.is_empty() {
                options.lbs = args.lbs.clone();
            }
            if !args.algs.is_empty() {
                options.algorithms = args.algs.clone();
            }
            let scratch = args
                .dir
                .clone()
                .unwrap_or_else(std::env::temp_dir)
                .join(format!("strata-zipgrid-{}", std::process::id()));
            let rows = zipgrid::run(&source, &options, &scratch, true);
            std::fs::remove_dir_all(&scratch).ok();
            rows?
        }
    };
    let report = zipgrid::report(&rows, &filters);
    publish(&report, &args.out, "zipgrid")
}
