//! `strata compress` and `strata decompress`: re-encode stored columns in place.

use std::path::PathBuf;

use clap::Args;
use strata_codec::CompressionSpec;
use strata_store::{Durability, convert_path, stats_path};

use super::CliResult;
use crate::output::stats_table;

/// Arguments of `strata compress`.
#[derive(Args)]
pub struct CompressArgs {
    /// A column file, a table directory or a partition directory.
    path: PathBuf,
    /// The compression spec, e.g. `zstd:1`, `delta+zstd:1@17`, `pco:8`.
    #[arg(long)]
    spec: CompressionSpec,
    /// Skip fsync (faster; a power cut may lose the conversion, never the data).
    #[arg(long)]
    no_fsync: bool,
}

/// Arguments of `strata decompress`.
#[derive(Args)]
pub struct DecompressArgs {
    /// A column file, a table directory or a partition directory.
    path: PathBuf,
    /// Skip fsync.
    #[arg(long)]
    no_fsync: bool,
}

fn durability(no_fsync: bool) -> Durability {
    if no_fsync { Durability::Rename } else { Durability::Fsync }
}

/// Runs `strata compress`.
pub fn run(args: CompressArgs) -> CliResult {
    convert_path(&args.path, &args.spec, durability(args.no_fsync), &*crate::progress::on_stderr())?;
    println!("{}", stats_table(&stats_path(&args.path)?));
    Ok(())
}

/// Runs `strata decompress`.
pub fn run_decompress(args: DecompressArgs) -> CliResult {
    let progress = crate::progress::on_stderr();
    convert_path(&args.path, &CompressionSpec::none(), durability(args.no_fsync), &*progress)?;
    println!("{}", stats_table(&stats_path(&args.path)?));
    Ok(())
}
