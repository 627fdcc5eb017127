//! `strata.open` and `Database`: a database opened in process, its tables and
//! partitions, SQL over it, and writes of Arrow data into it through
//! `strata_store::import` (the rules of `strata import`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use arrow_schema::{Field, Schema};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDate, PyDict, PyList};
use pyo3_arrow::PySchema;
use pyo3_arrow::input::AnyRecordBatch;
use strata_codec::CompressionSpec;
use strata_query::Engine;
use strata_store::arrow::TYPE_METADATA_KEY;
use strata_store::import::{ImportOptions, ImportReport, ImportSource, import};
use strata_store::progress::NoProgress;
use strata_store::{Attribute, Database, TableLocation, TableSpec, TableWrite};

use crate::args;
use crate::error::OrRaise;
use crate::result::QueryResult;
use crate::select::{quote_identifier, table_query};

/// Opens the database at `path` (a directory; created when `create` is true and it
/// is missing). Tables written later by other processes appear after `reload()`.
#[pyfunction]
#[pyo3(signature = (path, create=true))]
pub(crate) fn open(py: Python<'_>, path: PathBuf, create: bool) -> PyResult<PyDatabase> {
    py.detach(|| {
        let store = if create { Database::open(&path) } else { Database::open_existing(&path) }.or_raise()?;
        let engine = Engine::open(&path).or_raise()?;
        Ok(PyDatabase { path, store, engine: RwLock::new(engine) })
    })
}

/// A Strata database opened in this process: SQL over its tables, and writes.
/// Queries run with the GIL released, so Python threads may query at once.
#[pyclass(module = "strata", name = "Database", frozen)]
pub struct PyDatabase {
    path: PathBuf,
    store: Database,
    /// Written to only by `reload` (new tables and partitions).
    engine: RwLock<Engine>,
}

impl PyDatabase {
    /// Runs `sql` with the GIL released.
    fn run(&self, py: Python<'_>, sql: &str) -> PyResult<QueryResult> {
        py.detach(|| {
            let engine = self.engine.read().unwrap_or_else(PoisonError::into_inner);
            let (schema, batches) = engine.sql_with_schema(sql).or_raise()?;
            Ok(QueryResult::new(schema, batches))
        })
    }
}

#[pymethods]
impl PyDatabase {
    /// The database's root directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Names of the tables SQL sees (partitioned and splayed), sorted.
    fn tables(&self) -> Vec<String> {
        self.engine.read().unwrap_or_else(PoisonError::into_inner).table_names()
    }

    /// The date partitions, oldest first, as `datetime.date`s; with `table`, only
    /// those that hold it.
    #[pyo3(signature = (table=None))]
    fn partitions<'py>(&self, py: Python<'py>, table: Option<&str>) -> PyResult<Bound<'py, PyList>> {
        let dates = py.detach(|| {
            let all = self.store.partitions().or_raise()?;
            let Some(table) = table else { return Ok(all) };
            let mut holding = Vec::new();
            for date in all {
                if self.store.tables(Some(date)).or_raise()?.iter().any(|t| t == table) {
                    holding.push(date);
                }
            }
            PyResult::Ok(holding)
        })?;
        let dates = dates
            .into_iter()
            .map(|d| {
                let (y, m, day) = d.ymd();
                PyDate::new(py, y, m as u8, day as u8)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, dates)
    }

    /// The columns of `table` as SQL sees them, as a `pyarrow.Schema` (partitioned
    /// tables have the virtual `date` column). The stored columns of a partitioned
    /// table carry their kdb+ type in the field metadata `strata.type`.
    fn schema<'py>(&self, py: Python<'py>, table: &str) -> PyResult<Bound<'py, PyAny>> {
        let sql = format!("SELECT * FROM {}", quote_identifier(table));
        let schema = py.detach(|| {
            let schema = self.engine.read().unwrap_or_else(PoisonError::into_inner).schema_of(&sql).or_raise()?;
            let Some(stored) = self.store.table_schema(table).or_raise()? else { return Ok(schema) };
            let fields: Vec<Field> = schema
                .fields()
                .iter()
                .map(|field| match stored.type_of(field.name()) {
                    Some(ty) => field
                        .as_ref()
                        .clone()
                        .with_metadata(HashMap::from([(TYPE_METADATA_KEY.to_string(), ty.name().to_string())])),
                    None => field.as_ref().clone(),
                })
                .collect();
            PyResult::Ok(Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
        })?;
        PySchema::new(schema).into_pyarrow(py)
    }

    /// Runs one SQL statement (DuckDB-like SQL with kdb+'s time-series functions and
    /// ASOF/WINDOW JOIN) and returns its rows. Raises `strata.Error` with the
    /// engine's message when the statement fails.
    fn sql(&self, py: Python<'_>, query: &str) -> PyResult<QueryResult> {
        self.run(py, query)
    }

    /// Reads `table` without writing SQL: `dates` is one date, a list of dates or a
    /// `(first, last)` tuple (both included); `columns` the columns to keep (all
    /// when None); `where` a SQL condition. Names are quoted, so any name works.
    #[pyo3(signature = (name, dates=None, columns=None, r#where=None))]
    fn table(
        &self,
        py: Python<'_>,
        name: &str,
        dates: Option<&Bound<'_, PyAny>>,
        columns: Option<Vec<String>>,
        r#where: Option<&str>,
    ) -> PyResult<QueryResult> {
        let dates = dates.map(args::dates).transpose()?;
        self.run(py, &table_query(name, dates.as_ref(), columns.as_deref(), r#where))
    }

    /// Writes `data` (anything with `__arrow_c_stream__` or `__arrow_c_array__`: a
    /// pyarrow Table, a polars or pandas DataFrame) as table `table` of partition
    /// `partition` (a date; None writes a splayed table at the root), under the
    /// rules of `strata import`: the table's schema must match (`cast=True`
    /// converts columns when no value changes), nulls become kdb+ nulls, and the
    /// write is atomic. `mode`: "fail" refuses a table that is there, "append" adds
    /// the rows, "replace" replaces it. `sort` sorts by these columns first, `parted`
    /// sets the parted attribute on a column, `spec` compresses every column (e.g.
    /// "zstd:1"), `types` gives columns a stored type other than their Arrow type's
    /// own (`{"ex": "char", "id": "guid"}`: kdb+'s type names, as `strata import
    /// --types`). Returns what the write did: rows written, rows before and after.
    #[pyo3(signature = (table, data, partition=None, mode="fail", sort=None, parted=None, spec=None, cast=false, types=None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, each optional.
    fn write<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        data: &Bound<'py, PyAny>,
        partition: Option<&Bound<'py, PyAny>>,
        mode: &str,
        sort: Option<Vec<String>>,
        parted: Option<String>,
        spec: Option<&str>,
        cast: bool,
        types: Option<HashMap<String, String>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let location = match partition {
            Some(date) => TableLocation::Partition(args::date(date)?, table.to_string()),
            None => TableLocation::Splayed(table.to_string()),
        };
        let spec = match spec {
            Some(text) => TableSpec::uniform(text.parse::<CompressionSpec>().or_raise()?),
            None => TableSpec::default(),
        };
        let how = TableWrite {
            spec,
            sort_by: sort.unwrap_or_default(),
            attributes: parted.into_iter().map(|c| (c, Attribute::Parted)).collect(),
        };
        let overrides = args::column_types(types.unwrap_or_default())?;
        let options = ImportOptions { overrides, how, mode: args::write_mode(mode)?, cast };
        let label = source_label(data)?;
        if !data.hasattr("__arrow_c_stream__")? && !data.hasattr("__arrow_c_array__")? {
            return Err(PyTypeError::new_err(format!(
                "cannot write a {label} to table {table}: expected Arrow data (a pyarrow Table, a polars or pandas \
                 DataFrame: anything with __arrow_c_stream__ or __arrow_c_array__)"
            )));
        }
        let reader = data.extract::<AnyRecordBatch>()?.into_reader()?;
        let schema = reader.schema();
        let batches = reader.collect::<Result<Vec<_>, _>>().or_raise()?;
        let report = py.detach(|| {
            let source = ImportSource::Arrow { label: &label, schema: &schema, batches: &batches };
            let report = import(&self.store, source, &location, &options, &NoProgress).or_raise()?;
            self.engine.write().unwrap_or_else(PoisonError::into_inner).reload().or_raise()?;
            PyResult::Ok(report)
        })?;
        write_report(py, &report)
    }

    /// Re-reads the database: tables and partitions written since it was opened.
    fn reload(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.engine.write().unwrap_or_else(PoisonError::into_inner).reload().or_raise())
    }

    fn __repr__(&self) -> String {
        format!("strata.Database({:?})", self.path.display().to_string())
    }
}

/// What `data` is, for errors: its package and type, e.g. `polars.DataFrame`.
fn source_label(data: &Bound<'_, PyAny>) -> PyResult<String> {
    let ty = data.get_type();
    let module: String = ty.module()?.extract()?;
    let package = module.split('.').next().unwrap_or(&module);
    Ok(format!("{package}.{}", ty.name()?))
}

/// An import's report as a dict: `rows` written, `rows_before` (None when the
/// table was not there), `rows_after`, `cast` (column, from, to) and `dropped`
/// attributes (column, reason).
fn write_report<'py>(py: Python<'py>, report: &ImportReport) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("rows", report.rows)?;
    dict.set_item("rows_before", report.outcome.rows_before)?;
    dict.set_item("rows_after", report.outcome.rows_after)?;
    let cast: Vec<(&str, &str, &str)> =
        report.cast.iter().map(|(column, from, to)| (column.as_str(), from.name(), to.name())).collect();
    dict.set_item("cast", cast)?;
    let dropped: Vec<(&str, &str)> =
        report.outcome.dropped.iter().map(|d| (d.column.as_str(), d.reason.as_str())).collect();
    dict.set_item("dropped", dropped)?;
    Ok(dict)
}
