//! `strata`: the command-line front of Strata. It parses arguments and wires the
//! library crates together; storage, codec and benchmark logic live in those crates.

mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

use commands::Command;

/// Strata: tick capture and time-series storage in the spirit of kdb+tick.
#[derive(Parser)]
#[command(name = "strata", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: error: {e}");
            ExitCode::FAILURE
        }
    }
}
