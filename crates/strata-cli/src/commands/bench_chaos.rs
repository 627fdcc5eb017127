//! `strata bench chaos`: arguments for the kill -9 test of the tick plane; the run
//! itself is `strata_bench::chaos`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use strata_bench::chaos::{self, ChaosOptions};

use super::CliResult;
use super::bench::publish;

/// Arguments of `strata bench chaos`.
#[derive(Args)]
pub struct ChaosArgs {
    /// Minutes the feed runs while processes are killed.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Directory for the journals, the database and the logs (default: a new
    /// temporary directory, removed after a passing run).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Seed of the random kills.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds between kills, `MIN-MAX` (uniform).
    #[arg(long, default_value = "4-14", value_parser = parse_range)]
    kill_every: (f64, f64),
    /// Seconds between forced end of days.
    #[arg(long, default_value_t = 20.0)]
    end_of_day_every: f64,
    /// Sync updates a second.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Rows per update.
    #[arg(long, default_value_t = 10)]
    rows: usize,
    /// The tickerplant's fsync policy (`none`, `ack`, or a period such as `100ms`).
    #[arg(long, default_value = "none")]
    fsync: String,
    /// Share of end of days (0-1) during which the tickerplant is killed inside `.u.end[]`.
    #[arg(long, default_value_t = 0.25)]
    kill_tickerplant_in_end_of_day: f64,
    /// Run without the reader that asks the HDB for every day's figures throughout.
    #[arg(long)]
    no_readers: bool,
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

fn parse_range(text: &str) -> Result<(f64, f64), String> {
    let (lo, hi) = text.split_once('-').ok_or_else(|| format!("{text:?}: expected MIN-MAX seconds, e.g. 4-14"))?;
    let parse = |s: &str| s.trim().parse::<f64>().map_err(|e| format!("{text:?}: {e}"));
    let (lo, hi) = (parse(lo)?, parse(hi)?);
    if !(0.0 < lo && lo <= hi) {
        return Err(format!("{text:?}: expected 0 < MIN <= MAX"));
    }
    Ok((lo, hi))
}

/// Runs `strata bench chaos`; fails (after the report) when anything acknowledged
/// was lost or anything stored wrongly.
pub fn run(args: ChaosArgs) -> CliResult {
    let temporary = args.dir.is_none();
    let dir = args.dir.unwrap_or_else(|| std::env::temp_dir().join(format!("strata-chaos-{}", std::process::id())));
    let mut options =
        ChaosOptions::new(std::env::current_exe()?, dir.clone(), Duration::from_secs_f64(args.minutes.max(0.0) * 60.0));
    options.seed = args.seed;
    options.kill_every = (Duration::from_secs_f64(args.kill_every.0), Duration::from_secs_f64(args.kill_every.1));
    options.end_of_day_every = Duration::from_secs_f64(args.end_of_day_every.max(0.1));
    options.rate = args.rate;
    options.rows = args.rows.max(1);
    options.fsync = args.fsync;
    options.kill_tickerplant_in_end_of_day = args.kill_tickerplant_in_end_of_day.clamp(0.0, 1.0);
    options.readers = !args.no_readers;
    options.progress = true;
    let outcome = chaos::run(&options)?;
    publish(&chaos::report(&options, &outcome), &args.out, "chaos")?;
    if !outcome.clean() {
        return Err(format!("chaos: the audit failed; journals, database and logs are in {}", dir.display()).into());
    }
    if temporary {
        std::fs::remove_dir_all(&dir).ok();
    }
    Ok(())
}
