//! SQL over Strata tables through Apache DataFusion.
//!
//! - [`Engine`]: a session over a database root and in-memory tables; `sql(...)`
//!   returns Arrow record batches.
//! - [`table::StrataTable`]: the table provider for stored tables (splayed, or date
//!   partitioned with a virtual `date` column), with projection and filter pushdown
//!   and a declared `(sym, time)` order; every table has kdb+'s virtual row number
//!   `i`.
//! - [`memory::MemoryTable`]: a table of appended Arrow batches (the real-time
//!   database).
//! - [`join`]: `ASOF [LEFT] JOIN` (DuckDB's and Snowflake's forms) as a merge over
//!   inputs in `(keys, time)` order, and `WINDOW JOIN` (kdb+'s `wj1`): aggregates
//!   of the right rows within a time window around each left row.
//! - [`dialect`]: DuckDB's ways with times of day, casts, time-ranged windows and
//!   integer division, over kdb+ timespans.
//! - [`functions`]: `wavg`, `wsum`, `xbar`, `time_bucket` and q's names for
//!   median, standard deviation, correlation, first and last.

mod answer;
pub mod arrow_view;
mod batch_stream;
pub mod cancel;
mod count_rows;
pub mod dialect;
mod dictionary_groups;
mod dictionary_literals;
mod engine;
mod error;
pub mod functions;
pub mod join;
pub mod memory;
mod one_partition;
pub mod output;
mod rolling;
mod run_aggregate;
mod runs;
mod stack;
pub mod table;
mod whole_partition_windows;
mod window_top_k;

pub use cancel::Cancel;
pub use datafusion;
pub use engine::{Engine, EngineOptions};
pub use error::{QueryError, Result};
pub use memory::MemoryTable;
pub use stack::{QUERY_STACK, WORKER_STACK, on_query_stack};
pub use table::{ScanStats, StrataTable};
