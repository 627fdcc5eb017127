//! The subcommands, one module each.

mod bench;
mod bench_chaos;
mod bench_io;
mod bench_query;
mod bench_read;
mod bench_scale;
mod bench_tick;
mod bench_zip;
mod compress;
mod database_arg;
mod demo;
mod eod;
mod export;
mod generate;
mod import;
mod ls;
mod passwd;
mod sql;
mod sql_shell;
mod stats;
mod tick;
mod verify;
mod write_mode;

use clap::Subcommand;

/// Anything a subcommand can fail with; printed as `strata: error: ...`.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;

/// Every `strata` subcommand.
#[derive(Subcommand)]
pub enum Command {
    /// The main job: tickerplant, RDB and HDB on loopback fed TAQ-shaped data, SQL on
    /// both sides of end of day (`demo storage`: the compression specs demo).
    #[command(
        after_help = "Examples:\n  strata demo                        # tick plane on loopback, leaves ./strata-demo\n  strata demo --seconds 30 --dir /tmp/demo\n  strata demo storage                # the built-in trade table under each compression spec"
    )]
    Demo(demo::DemoArgs),
    /// Load a CSV or Parquet file into a table (optionally a date partition).
    #[command(
        after_help = "Examples:\n  strata import trades.csv --db hdb --table trade --partition 2025.01.02 --sort sym,time --parted sym\n  strata import quotes.parquet --db hdb --table quote --partition 2025.01.02 --spec zstd:1\n  strata import more.csv --db hdb --table trade --partition 2025.01.02 --mode append"
    )]
    Import(import::ImportArgs),
    /// Write a table out as CSV or Parquet.
    #[command(
        after_help = "Examples:\n  strata export --db hdb --table trade --partition 2025.01.02 --out trade.parquet\n  strata export --db hdb --table ref --out ref.csv"
    )]
    Export(export::ExportArgs),
    /// Re-encode a column file, a table or a partition with a compression spec.
    #[command(
        after_help = "Examples:\n  strata compress hdb/2025.01.02/quote --spec zstd:1\n  strata compress hdb/2025.01.02 --spec 'delta+zstd:1@17'"
    )]
    Compress(compress::CompressArgs),
    /// Rewrite a column file, a table or a partition uncompressed (plain, mappable).
    #[command(after_help = "Examples:\n  strata decompress hdb/2025.01.02/quote")]
    Decompress(compress::DecompressArgs),
    /// Per column: type, rows, raw bytes, stored bytes, ratio and spec.
    #[command(
        after_help = "Examples:\n  strata stats hdb/2025.01.02/trade\n  strata stats columns --db hdb --table trade --partition 2025.01.02"
    )]
    Stats(stats::StatsArgs),
    /// List a database: partitions, tables, columns and sizes.
    #[command(after_help = "Examples:\n  strata ls --db hdb")]
    Ls(ls::LsArgs),
    /// Check every file of a database against its checksums and the files it must
    /// agree with; print what is damaged, where, and what can be rebuilt.
    #[command(
        after_help = "Examples:\n  strata verify --db hdb\n  strata verify --db hdb --partition 2025.01.02 --table trade"
    )]
    Verify(verify::VerifyArgs),
    /// Tickerplant: journal every update, publish to subscribers, roll at end of day.
    #[command(after_help = "Examples:\n  strata tp --schema taq.schema --journal-dir tplogs --port 5010")]
    Tp(tick::TpArgs),
    /// Real-time database: replay the journal, subscribe, answer queries, write the
    /// day at end of day.
    #[command(after_help = "Examples:\n  strata rdb --tp 127.0.0.1:5010 --db hdb --port 5011 --hdb 127.0.0.1:5012")]
    Rdb(tick::RdbArgs),
    /// Historical database server: answer queries over a partitioned database.
    #[command(after_help = "Examples:\n  strata hdb --db hdb --port 5012")]
    Hdb(tick::HdbArgs),
    /// Write a day's partition from its tickerplant journal (what an RDB does at
    /// start for a day whose end of day never finished); safe to run again.
    #[command(after_help = "Examples:\n  strata eod --journal tplogs/taq2025.01.02 --db hdb --schema taq.schema")]
    Eod(eod::EodArgs),
    /// Chained tickerplant: republish an upstream tickerplant, no journal.
    #[command(after_help = "Examples:\n  strata ctp --tp 127.0.0.1:5010 --port 5110 --batch-ms 100")]
    Ctp(tick::CtpArgs),
    /// Feed simulator: send TAQ-shaped updates to a tickerplant on a timer.
    #[command(
        after_help = "Examples:\n  strata feed --table trade --print-schema > taq.schema\n  strata feed --tp 127.0.0.1:5010 --table quote --rows 10 --updates 1 --timer-ms 1"
    )]
    Feed(tick::FeedArgs),
    /// Set a user's password in a credentials file (an argon2id hash), read without
    /// echo from the terminal or from standard input.
    #[command(
        after_help = "Examples:\n  strata passwd users.txt alice          # asks for the password\n  echo \"$PW\" | strata passwd users.txt bob"
    )]
    Passwd(passwd::PasswdArgs),
    /// Run SQL on a database: one query (as a table, CSV, JSON or Parquet) or, with
    /// no query, an interactive shell.
    #[command(
        after_help = "Examples:\n  strata sql --db hdb \"SELECT sym, count(*), weighted_avg(price, size) AS vwap FROM trade GROUP BY sym\"\n  strata sql --db hdb \"SELECT * FROM trade WHERE date = '2025-01-02'\" --out day.parquet\n  strata sql --db hdb                 # the interactive shell"
    )]
    Sql(sql::SqlArgs),
    /// Benchmarks.
    #[command(
        after_help = "Examples:\n  strata bench codecs\n  strata bench tick --seconds 3\n  STRATA_PYTHON=~/.cache/strata/venv/bin/python strata bench query"
    )]
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Generate (or load) data: `strata gen taq` writes a TAQ-shaped trading day.
    #[command(after_help = "Examples:\n  strata gen taq --db taq --quotes 1000000 --trades 100000 --syms 1000")]
    #[command(subcommand)]
    Gen(generate::GenCommand),
}

/// Runs a parsed subcommand.
pub fn run(command: Command) -> CliResult {
    match command {
        Command::Demo(args) => demo::run(args),
        Command::Import(args) => import::run(args),
        Command::Export(args) => export::run(args),
        Command::Compress(args) => compress::run(args),
        Command::Decompress(args) => compress::run_decompress(args),
        Command::Stats(args) => stats::run(args),
        Command::Ls(args) => ls::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Tp(args) => tick::run_tp(args),
        Command::Rdb(args) => tick::run_rdb(args),
        Command::Hdb(args) => tick::run_hdb(args),
        Command::Eod(args) => eod::run(args),
        Command::Ctp(args) => tick::run_ctp(args),
        Command::Feed(args) => tick::run_feed(args),
        Command::Passwd(args) => passwd::run(args),
        Command::Sql(args) => sql::run(args),
        Command::Bench(command) => bench::run(command),
        Command::Gen(command) => generate::run(command),
    }
}
