//! `strata bench io`: KX Nano's storage benchmark through Strata's storage calls
//! (`strata bench io DIR...`), the side-by-side comparison of result files
//! (`strata bench io compare A.psv B.psv ...`), and the hidden worker process the
//! controller starts once per worker and suite.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use strata_bench::io::flush::FlushMode;
use strata_bench::io::scale::{Scale, ScaleName};
use strata_bench::io::worker::{WorkerConfig, serve};
use strata_bench::io::{IoBenchOptions, IoPlan, WorkerCommand, catalogue::Suite, compare};

use super::CliResult;
use super::bench::publish;

/// Arguments of `strata bench io`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct IoArgs {
    #[command(subcommand)]
    command: Option<IoCommand>,
    /// Directories to test; worker i writes under the (i mod n)-th, as Nano's
    /// `partitions` file. Each should be on the file system being measured.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Worker-process counts, comma-separated; each is a full run (Nano's `-p`).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    procs: Vec<usize>,
    /// Threads per worker for Strata's parallel work (Nano's `-s`); default: every core.
    #[arg(long)]
    threads: Option<usize>,
    /// Data sizes: tiny (a smoke test), small (1 GiB sequential files), full (Nano's
    /// defaults); all capped by memory and free space.
    #[arg(long, default_value = "small")]
    scale: ScaleName,
    /// Emptying the page cache between suites: auto (drop it when root, else advise
    /// each file away), drop, fadvise or none.
    #[arg(long, default_value = "auto")]
    flush: FlushMode,
    /// Skip the `dd` anchor on each directory.
    #[arg(long)]
    no_anchor: bool,
    /// Leave the test data in the directories (Nano's `--noclean`).
    #[arg(long)]
    keep: bool,
    /// Directory for results: a `io-<mmdd_HHMMSS>` directory is made in it.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

#[derive(Subcommand)]
enum IoCommand {
    /// Put result sets (throughput PSVs or result directories) side by side with
    /// ratio columns, geometric means and maxima, split as the KX file-system study.
    #[command(
        after_help = "Examples:\n  strata bench io compare strata-reports/io-1127_040000 strata-reports/io-1127_043000\n  strata bench io compare nvme/throughput_total.psv nfs/throughput_total.psv"
    )]
    Compare(CompareArgs),
    /// One worker process (started by `strata bench io`, not by hand).
    #[command(hide = true)]
    Worker(WorkerArgs),
}

/// Arguments of `strata bench io compare`.
#[derive(Args)]
struct CompareArgs {
    /// Throughput files (`throughput_total.psv`, `HOST-throughput.psv`, Nano's own)
    /// or result directories; the first is the baseline of the ratios.
    #[arg(required = true, num_args = 2.., value_name = "PSV")]
    files: Vec<PathBuf>,
    /// Column labels, comma-separated (default: the directory or file names).
    #[arg(long, value_delimiter = ',')]
    labels: Vec<String>,
    /// Directory for the CSV files and the HTML page.
    #[arg(long, default_value = "strata-reports")]
    out: PathBuf,
}

/// Arguments of the hidden worker.
#[derive(Args)]
struct WorkerArgs {
    #[arg(long)]
    suite: Suite,
    #[arg(long)]
    dir: PathBuf,
    #[arg(long)]
    threads: usize,
    #[arg(long)]
    sizes: Scale,
}

/// Runs `strata bench io`.
pub fn run(args: IoArgs) -> CliResult {
    match args.command {
        Some(IoCommand::Compare(compare)) => {
            let sets = compare::load(&compare.files, &compare.labels)?;
            publish(&compare::report(&sets), &compare.out, "io-compare")
        }
        Some(IoCommand::Worker(worker)) => {
            let config =
                WorkerConfig { suite: worker.suite, dir: worker.dir, scale: worker.sizes, threads: worker.threads };
            Ok(serve(&config, std::io::stdin().lock(), std::io::stdout().lock())?)
        }
        None => {
            let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let plan = IoPlan::new(IoBenchOptions {
                roots: args.dirs,
                procs: args.procs,
                threads,
                scale: args.scale,
                flush: args.flush,
                anchor: !args.no_anchor,
                keep: args.keep,
            })?;
            eprint!("{}", plan.describe());
            let worker = WorkerCommand {
                program: std::env::current_exe()?,
                args: ["bench", "io", "worker"].map(Into::into).to_vec(),
            };
            let run = plan.run(&worker, true)?;
            let dir = args.out.join(format!("io-{}", plan.stamp()));
            let written = run.write_results(&dir)?;
            publish(&run.report(), &dir, "io")?;
            for path in written {
                println!("wrote {}", path.display());
            }
            Ok(())
        }
    }
}
