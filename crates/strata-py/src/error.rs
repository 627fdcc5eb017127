//! `strata.Error`: the Python exception for every error of the engine or the store,
//! carrying their message (which names the table, column, file or query).

use std::fmt::Display;

use pyo3::PyErr;
use pyo3::exceptions::PyException;

pyo3::create_exception!(
    strata,
    Error,
    PyException,
    "An error of the Strata engine or store: bad SQL, a missing table, a column whose type differs from the \
     table's schema, a table a write refuses. The message says which."
);

/// Turns a Strata error into a raised `strata.Error`.
pub(crate) trait OrRaise<T> {
    /// The value, or `strata.Error` with the error's message.
    fn or_raise(self) -> Result<T, PyErr>;
}

impl<T, E: Display> OrRaise<T> for Result<T, E> {
    fn or_raise(self) -> Result<T, PyErr> {
        self.map_err(|e| Error::new_err(e.to_string()))
    }
}
