//! End-to-end tests of the `strata` binary: real files, real processes, one test
//! binary so the CLI's dependencies are linked once.

mod auth;
mod bench_io;
mod bench_scale;
mod chaos;
mod common;
mod damage;
mod eod;
mod help;
mod integrity;
mod progress;
mod schema;
mod sql;
mod storage;
mod taq_zip;
