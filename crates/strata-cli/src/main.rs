//! `strata`: the command-line front of Strata. It parses arguments and wires the
//! library crates together; storage, codec and benchmark logic live in those crates.

mod commands;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser;

use commands::Command;

/// mimalloc keeps freed pages for the next query: with the system allocator every
/// query's hash tables and batches were fresh pages from the kernel, and page faults
/// took a tenth of a short query's time. DataFusion's own CLI does the same.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Strata: tick capture and time-series storage in the spirit of kdb+tick.
#[derive(Parser)]
#[command(name = "strata", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn main() -> ExitCode {
    report_panics_briefly();
    let cli = Cli::parse();
    match commands::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        // `strata sql ... | head`: the reader has what it wanted, as with `cat`.
        Err(e) if is_closed_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `error`, or an error it wraps, is a write to a pipe whose reader has
/// gone.
fn is_closed_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |e| e.source())
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// A panic is a bug. Unless `RUST_BACKTRACE` asks for the full report, it is printed
/// as one line saying where it happened (for a bug report), without the default
/// backtrace hint; the query engine turns a query's panic into an error of its own,
/// so `strata sql` then ends with `strata: error: ...` and a failure status.
fn report_panics_briefly() {
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("strata: internal error{at}: {message}");
    }));
}
