//! Runs the codec benchmark and prints the report; until `strata bench codecs` is
//! wired up, this is how to run it by hand:
//!
//! `cargo run --release -p strata-bench --example codecs -- [rows] [out-dir]`
//!
//! With an output directory, also writes `codecs.csv` (plus the summary beside it)
//! and `codecs.html` there.

use std::path::PathBuf;

use strata_bench::codecs::{CodecBenchOptions, run};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut opts = CodecBenchOptions::default();
    if let Some(rows) = args.next() {
        opts.rows = rows.parse()?;
    }
    let report = run(&opts, true)?;
    println!("{}", report.to_terminal());
    if let Some(dir) = args.next().map(PathBuf::from) {
        std::fs::create_dir_all(&dir)?;
        for path in report.write_csv(&dir.join("codecs.csv"))? {
            eprintln!("wrote {}", path.display());
        }
        report.write_html(&dir.join("codecs.html"))?;
        eprintln!("wrote {}", dir.join("codecs.html").display());
    }
    Ok(())
}
