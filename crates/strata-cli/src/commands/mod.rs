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

use clap::Subcommand;

/// Anything a subcommand can fail with; printed as `strata: error: ...`.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;

/// Every `strata` subcommand.
#[derive(Subcommand)]
pub enum Command {
    /// The main job: tickerplant, RDB and HDB on loopback fed TAQ-shaped data, SQL on
    /// both sides of end of day (`demo storage`: the compression specs demo).
    Demo(demo::DemoArgs),
    /// Load a CSV or Parquet file into a table (optionally a date partition).
    Import(import::ImportArgs),
    /// Write a table out as CSV or Parquet.
    Export(export::ExportArgs),
    /// Re-encode a column file, a table or a partition with a compression spec.
    Compress(compress::CompressArgs),
    /// Rewrite a column file, a table or a partition uncompressed (plain, mappable).
    Decompress(compress::DecompressArgs),
    /// Per column: type, rows, raw bytes, stored bytes, ratio and spec.
    Stats(stats::StatsArgs),
    /// List a database: partitions, tables, columns and sizes.
    Ls(ls::LsArgs),
    /// Check every file of a database against its checksums and the files it must
    /// agree with; print what is damaged, where, and what can be rebuilt.
    Verify(verify::VerifyArgs),
    /// Tickerplant: journal every update, publish to subscribers, roll at end of day.
    Tp(tick::TpArgs),
    /// Real-time database: replay the journal, subscribe, answer queries, write the
    /// day at end of day.
    Rdb(tick::RdbArgs),
    /// Historical database server: answer queries over a partitioned database.
    Hdb(tick::HdbArgs),
    /// Write a day's partition from its tickerplant journal (what an RDB does at
    /// start for a day whose end of day never finished); safe to run again.
    Eod(eod::EodArgs),
    /// Chained tickerplant: republish an upstream tickerplant, no journal.
    Ctp(tick::CtpArgs),
    /// Feed simulator: send TAQ-shaped updates to a tickerplant on a timer.
    Feed(tick::FeedArgs),
    /// Set a user's password in a credentials file (an argon2id hash), read without
    /// echo from the terminal or from standard input.
    Passwd(passwd::PasswdArgs),
    /// Run SQL on a database: one query (as a table, CSV, JSON or Parquet) or, with
    /// no query, an interactive shell.
    Sql(sql::SqlArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Generate (or load) data: `strata gen taq` writes a TAQ-shaped trading day.
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
