//! Strata's user-facing benchmarks, run as `strata bench ...`.
//!
//! Each benchmark is a library function returning a [`report::Report`]; the CLI only
//! parses arguments and decides whether the report goes to the terminal, CSV or HTML.
//! Sample data is generated here, deterministically from a seed, so runs on two
//! machines measure the same bytes.

pub mod chaos;
pub mod codecs;
pub mod column_stats;
pub mod data;
pub mod io;
mod process;
pub mod progress;
mod python;
pub mod query_bench;
pub mod read_bench;
pub mod recommend;
pub mod report;
pub mod rng;
pub mod scale;
pub mod table_write;
pub mod tick;
pub mod zip;
pub mod zipgrid;

pub use codecs::{CodecBenchError, CodecBenchOptions};
pub use report::Report;
