//! `strata bench tick`: arguments for the tickerplant profiling of KX's white paper; the
//! benchmark itself is `strata_bench::tick`.

use clap::Args;
use strata_bench::tick::{self, TickBenchOptions};

use super::CliResult;
use super::bench::publish;

/// Arguments of `strata bench tick`.
#[derive(Args)]
pub struct TickArgs {
    /// Seconds the feed runs in each scenario.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Directory for the journals (default: a temporary directory).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: std::path::PathBuf,
    /// Run only the groups whose title contains this text (e.g. `throughput`,
    /// `subscribers`); repeatable.
    #[arg(long = "group")]
    groups: Vec<String>,
}

/// Runs `strata bench tick`.
pub fn run(args: TickArgs) -> CliResult {
    let mut options = TickBenchOptions::new(args.seconds);
    if !args.groups.is_empty() {
        let titles: std::collections::BTreeSet<&str> = options.scenarios.iter().map(|s| s.group).collect();
        let titles = titles.into_iter().collect::<Vec<_>>().join("; ");
        options.scenarios.retain(|s| args.groups.iter().any(|g| s.group.contains(g.as_str())));
        if options.scenarios.is_empty() {
            return Err(format!("--group matches no scenario group; groups: {titles}").into());
        }
    }
    let base = args.dir.unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("strata-bench-tick-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let total = options.scenarios.len();
    let mut done = 0;
    let report = tick::run(&options, &dir, |s| {
        done += 1;
        eprintln!(
            "[{done}/{total}] {}: r={} u={} t={}ms ex={} subs={}",
            s.group, s.rows, s.updates, s.timer_ms, s.extra, s.subscribers
        );
    })?;
    std::fs::remove_dir_all(&dir).ok();
    publish(&report, &args.out, "tick")
}
