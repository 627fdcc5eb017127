//! A query's result: Arrow record batches held in Rust and handed to Python through
//! the Arrow PyCapsule interface (`__arrow_c_stream__`), so pyarrow, polars and
//! DuckDB read the buffers in place instead of copying them.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StructArray};
use arrow_schema::{ArrowError, Field, SchemaRef};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_arrow::PySchema;
use pyo3_arrow::error::PyArrowResult;
use pyo3_arrow::ffi::{ArrayIterator, to_stream_pycapsule};

/// The rows of a query, in Arrow form. Symbol columns are dictionary-encoded
/// (categoricals in polars and pandas), timestamps are nanoseconds without a zone.
#[pyclass(module = "strata", name = "Result", frozen)]
pub struct QueryResult {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl QueryResult {
    /// A result of `batches`, all of `schema`.
    pub(crate) fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> QueryResult {
        QueryResult { schema, batches }
    }
}

#[pymethods]
impl QueryResult {
    /// The Arrow C stream of the result (the Arrow PyCapsule interface), for
    /// `pyarrow.table(result)`, `polars.DataFrame(result)` or
    /// `duckdb.sql("FROM result")`. The buffers are shared, not copied; a
    /// `requested_schema` the types can be cast to is honoured.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyArrowResult<Bound<'py, PyCapsule>> {
        let rows = self
            .batches
            .clone()
            .into_iter()
            .map(|batch| Ok::<ArrayRef, ArrowError>(Arc::new(StructArray::from(batch))));
        let field =
            Field::new_struct("", self.schema.fields().clone(), false).with_metadata(self.schema.metadata().clone());
        to_stream_pycapsule(py, Box::new(ArrayIterator::new(rows, Arc::new(field))), requested_schema)
    }

    /// The result as a `pyarrow.Table` (no copy).
    fn arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("pyarrow")?.call_method1("table", (slf,))
    }

    /// The result as a `polars.DataFrame` (polars takes the Arrow buffers).
    fn pl<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("polars")?.call_method1("DataFrame", (slf,))
    }

    /// The result as a `pandas.DataFrame` (through pyarrow's `to_pandas`).
    fn df<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::arrow(slf)?.call_method0("to_pandas")
    }

    /// The result's record batches, as a list of `pyarrow.RecordBatch` (no copy).
    fn fetch_batches<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::arrow(slf)?.call_method0("to_batches")
    }

    /// The result's schema, as a `pyarrow.Schema`.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(self.schema.clone()).into_pyarrow(py)
    }

    /// Rows in the result.
    fn __len__(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    fn __repr__(&self) -> String {
        let columns: Vec<String> =
            self.schema.fields().iter().map(|f| format!("{}: {}", f.name(), f.data_type())).collect();
        format!("strata.Result({} rows; {})", self.__len__(), columns.join(", "))
    }
}
