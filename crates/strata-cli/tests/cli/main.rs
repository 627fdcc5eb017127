//! End-to-end tests of the `strata` binary: real files, real processes, one test
//! binary so the CLI's dependencies are linked once.

mod bench_io;
mod common;
mod integrity;
mod sql;
mod storage;
mod taq_zip;
