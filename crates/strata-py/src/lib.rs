//! The Python package `strata`: open a Strata database in process, run SQL whose
//! results reach pyarrow, polars, pandas and DuckDB through the Arrow PyCapsule
//! interface without a copy, and write DataFrames into partitions under the same
//! rules as `strata import`.
//!
//! - [`database`]: `strata.open` and the `Database` object (listing, SQL, writes).
//! - [`result`]: a query's result and its hand-over to Python's data frame libraries.
//! - [`select`]: the SQL that `Database.table` builds, identifiers quoted.
//! - [`client`]: `strata.connect`, a kdb+ IPC client: queries into Arrow, DataFrames
//!   published to a tickerplant.
//! - [`args`]: Python arguments (dates, write modes) read into Strata's types.
//! - [`error`]: `strata.Error`, the exception every engine or store error becomes.
//!
//! The module is built by maturin (`pip install ./crates/strata-py`) or, for the
//! test suite, by the workspace build (see `scripts/test-all`).

mod args;
mod client;
mod database;
mod error;
mod result;
mod select;

use pyo3::prelude::*;

/// The extension module `strata._native`; `strata/__init__.py` re-exports it.
#[pymodule]
#[pyo3(name = "_native")]
fn strata_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<error::Error>())?;
    m.add_class::<database::PyDatabase>()?;
    m.add_class::<result::QueryResult>()?;
    m.add_class::<client::Connection>()?;
    m.add_function(wrap_pyfunction!(client::connect, m)?)?;
    m.add_function(wrap_pyfunction!(database::open, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
