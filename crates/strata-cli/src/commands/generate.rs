//! `strata gen taq`: one trading day of TAQ-shaped data into a database (generated,
//! or loaded from NYSE daily TAQ files), optionally also as Hive-style Parquet.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Subcommand};
use strata_codec::CompressionSpec;
use strata_store::{Database, Date, TableSpec, TableWrite};
use strata_taq::{TaqConfig, TaqDay, generate_with_progress, normalise, nyse, parquet, write_day_with_progress};

use super::CliResult;
use super::write_mode::Mode;

/// Data generators.
#[derive(Subcommand)]
pub enum GenCommand {
    /// One day of NYSE-TAQ-shaped `quote` (23 columns) and `trade` (15 columns) plus
    /// their normalised `quoteNorm` and `tradeNorm`, sorted by symbol then time with
    /// the parted attribute on the symbol.
    #[command(
        after_help = "Examples:\n  strata gen taq --db taq\n  strata gen taq --db taq --quotes 5000000 --trades 250000 --syms 2000 --parquet taq-parquet"
    )]
    Taq(TaqArgs),
}

/// Arguments of `strata gen taq`.
#[derive(Args)]
pub struct TaqArgs {
    /// Trading date, the partition written (YYYY.MM.DD).
    #[arg(long, default_value = "2022.03.31")]
    date: Date,
    /// Quote rows.
    #[arg(long, default_value_t = 1_000_000)]
    quotes: usize,
    /// Trade rows.
    #[arg(long, default_value_t = 100_000)]
    trades: usize,
    /// Instruments.
    #[arg(long, default_value_t = 1000)]
    syms: usize,
    /// Seed: the same arguments always give the same day.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// What to do when the day already holds the tables: refuse, add the rows
    /// after the stored ones, or replace them.
    #[arg(long, value_enum, default_value_t = Mode::Fail)]
    mode: Mode,
    /// Database root.
    #[arg(long)]
    db: PathBuf,
    /// Also write Hive-style Parquet here: `<table>/date=YYYY-MM-DD/part-0.parquet`,
    /// one row group per symbol.
    #[arg(long)]
    parquet: Option<PathBuf>,
    /// One compression spec for every column (e.g. `zstd:1`, `auto`).
    #[arg(long, conflicts_with = "table_spec")]
    spec: Option<CompressionSpec>,
    /// A table spec file (TOML), e.g. one written by `strata bench zip`.
    #[arg(long)]
    table_spec: Option<PathBuf>,
    /// Load quotes from this NYSE daily TAQ BBO file instead of generating them
    /// (needs --nyse-trades too).
    #[arg(long, requires = "nyse_trades")]
    nyse_quotes: Option<PathBuf>,
    /// Load trades from this NYSE daily TAQ trade file (needs --nyse-quotes too).
    #[arg(long, requires = "nyse_quotes")]
    nyse_trades: Option<PathBuf>,
}

/// Runs a generator.
pub fn run(command: GenCommand) -> CliResult {
    match command {
        GenCommand::Taq(args) => taq(args),
    }
}

fn taq(args: TaqArgs) -> CliResult {
    if args.syms == 0 {
        return Err("--syms must be at least 1".into());
    }
    let started = Instant::now();
    let progress = crate::progress::on_stderr();
    let day: TaqDay = match (&args.nyse_quotes, &args.nyse_trades) {
        (Some(quotes), Some(trades)) => nyse::load_day(quotes, trades)?,
        _ => generate_with_progress(
            &TaqConfig { date: args.date, quotes: args.quotes, trades: args.trades, syms: args.syms, seed: args.seed },
            &*progress,
        ),
    };
    let made = started.elapsed();
    let spec = match (&args.spec, &args.table_spec) {
        (Some(s), _) => TableSpec::uniform(s.clone()),
        (None, Some(path)) => TableSpec::load(path)?,
        (None, None) => TableSpec::default(),
    };
    let db = Database::open(&args.db)?;
    let how = TableWrite { spec, ..TableWrite::default() };
    write_day_with_progress(&db, args.date, &day, &how, args.mode.into(), &*progress)?;
    println!(
        "wrote {} quotes and {} trades (with quoteNorm, tradeNorm) into {} in {:.1} s ({:.1} s to {})",
        day.quote.len(),
        day.trade.len(),
        db.partition_dir(args.date).display(),
        started.elapsed().as_secs_f64(),
        made.as_secs_f64(),
        if args.nyse_quotes.is_some() { "load" } else { "generate" },
    );
    if let Some(dir) = &args.parquet {
        let (quote_norm, trade_norm) = normalise(&day);
        for (name, table, sym) in [
            ("quote", &day.quote, "Symbol"),
            ("trade", &day.trade, "Symbol"),
            ("quoteNorm", &quote_norm, "sym"),
            ("tradeNorm", &trade_norm, "sym"),
        ] {
            let path = parquet::write_hive(dir, name, args.date, table, sym, &*progress)?;
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}
