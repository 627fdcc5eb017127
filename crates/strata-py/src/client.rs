//! `strata.connect`: a kdb+ IPC client for a Strata (or kdb+) tickerplant, RDB or
//! HDB, without PyKX's type plumbing. Query answers that are tables come back as a
//! [`QueryResult`] (Arrow); other values as Python objects. `publish` sends a
//! DataFrame to a tickerplant's `.u.upd`, each column converted to the kdb+ type the
//! tickerplant's schema gives it (asked once per table with `.strata.schema`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use arrow_array::RecordBatch;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_arrow::PyArray;
use pyo3_arrow::input::AnyRecordBatch;
use strata_ipc::arrow::{column_to_store, table_from_store, table_to_record_batch};
use strata_ipc::tls::{self, ClientTls};
use strata_ipc::{K, Table, Vector};
use strata_store::ColumnType;

use crate::error::{Error, OrRaise};
use crate::result::QueryResult;

/// Connects to a Strata or kdb+ process at `address` (`host:port`, a port on this
/// machine, or `tcps://host:port` for TLS) and logs in as `user` with `password`.
/// TLS trusts the CAs of `tls_ca` (else of `SSL_CA_CERT_FILE`, as kdb+ does).
#[pyfunction]
#[pyo3(signature = (address, user=None, password=None, tls=false, tls_ca=None, timeout=10.0))]
pub(crate) fn connect(
    py: Python<'_>,
    address: &Bound<'_, PyAny>,
    user: Option<&str>,
    password: Option<&str>,
    tls: bool,
    tls_ca: Option<PathBuf>,
    timeout: f64,
) -> PyResult<Connection> {
    let address = match address.extract::<u16>() {
        Ok(port) => format!("127.0.0.1:{port}"),
        Err(_) => address
            .extract::<String>()
            .map_err(|_| PyTypeError::new_err("address: expected 'host:port', 'tcps://host:port' or a port number"))?,
    };
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(PyValueError::new_err(format!("timeout {timeout}: expected a positive number of seconds")));
    }
    let login = match (user, password) {
        (Some(user), Some(password)) => format!("{user}:{password}"),
        (Some(user), None) => user.to_string(),
        (None, Some(_)) => return Err(PyValueError::new_err("a password needs a user")),
        (None, None) => String::new(),
    };
    let wants_tls = tls || tls::split_address(&address).1;
    py.detach(|| {
        let client = match (&tls_ca, wants_tls) {
            (Some(ca), true) => Some(ClientTls::load(ca, None).or_raise()?),
            (None, true) => Some(tls::default_client().or_raise()?),
            (_, false) => None,
        };
        let timeout = Duration::from_secs_f64(timeout);
        let inner = strata_ipc::Connection::connect_with(&address, &login, timeout, client.as_ref()).or_raise()?;
        Ok(Connection { address, inner: Mutex::new(inner), schemas: Mutex::new(HashMap::new()) })
    })
}

/// A connection to a Strata or kdb+ process. One request at a time: calls from
/// several threads wait their turn.
#[pyclass(module = "strata", name = "Connection", frozen)]
pub struct Connection {
    address: String,
    inner: Mutex<strata_ipc::Connection>,
    /// Per table, the column names and types the tickerplant's schema gives.
    schemas: Mutex<HashMap<String, Vec<(String, ColumnType)>>>,
}

impl Connection {
    /// Sends `request` synchronously, with the GIL released, and returns the answer.
    fn sync(&self, py: Python<'_>, request: &K) -> PyResult<K> {
        py.detach(|| self.inner.lock().unwrap_or_else(PoisonError::into_inner).sync(request).or_raise())
    }

    /// The columns of `table` on the tickerplant, asked once and then remembered.
    fn schema_of(&self, py: Python<'_>, table: &str) -> PyResult<Vec<(String, ColumnType)>> {
        if let Some(known) = self.schemas.lock().unwrap_or_else(PoisonError::into_inner).get(table) {
            return Ok(known.clone());
        }
        let request = K::List(vec![K::symbol(".strata.schema"), K::symbol(table)]);
        let answer = self.sync(py, &request)?;
        let K::Table(empty) = answer else {
            return Err(Error::new_err(format!(
                "{}: .strata.schema[`{table}] answered a {}, not a table",
                self.address,
                answer.describe()
            )));
        };
        let columns = empty
            .names()
            .iter()
            .zip(empty.columns())
            .map(|(name, column)| Ok((name.clone(), column_to_store(name, column).or_raise()?.ty())))
            .collect::<PyResult<Vec<_>>>()?;
        self.schemas.lock().unwrap_or_else(PoisonError::into_inner).insert(table.to_string(), columns.clone());
        Ok(columns)
    }
}

#[pymethods]
impl Connection {
    /// The address connected to.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// Sends `text` as kdb+ clients do (a char vector: `tables[]`, `.u.i`, q-sql a
    /// server supports, or SQL). A table (or keyed table) answers as a `Result`,
    /// other values as Python objects: numbers, `str` for symbols and strings,
    /// `datetime` values, lists and dicts; `None` for `(::)`. A q error raises
    /// `strata.Error`.
    fn query(&self, py: Python<'_>, text: &str) -> PyResult<Py<PyAny>> {
        let answer = self.sync(py, &K::string(text))?;
        to_python(py, answer)
    }

    /// Runs SQL on the server (`.s.e`) and returns its rows as a `Result`.
    fn sql(&self, py: Python<'_>, query: &str) -> PyResult<Py<PyAny>> {
        let answer = self.sync(py, &K::List(vec![K::symbol(".s.e"), K::string(query)]))?;
        to_python(py, answer)
    }

    /// Publishes the rows of `data` (a pyarrow Table, polars or pandas DataFrame)
    /// to table `table` of a tickerplant: `.u.upd[table; data]`, each column
    /// converted to the kdb+ type of the tickerplant's schema (text to symbols,
    /// integers to floats, ...; a value that would change is an error naming the
    /// column and row). Without a `time` column the tickerplant stamps the time of
    /// receipt. With `sync` (the default) the call returns once the tickerplant
    /// has written the rows to its journal; otherwise it only queues them. Returns the rows sent.
    #[pyo3(signature = (table, data, sync=true))]
    fn publish(&self, py: Python<'_>, table: &str, data: &Bound<'_, PyAny>, sync: bool) -> PyResult<usize> {
        let schema = self.schema_of(py, table)?;
        let reader = data.extract::<AnyRecordBatch>()?.into_reader()?;
        let arrow_schema = reader.schema();
        let batches = reader.collect::<Result<Vec<RecordBatch>, _>>().or_raise()?;
        let update = py.detach(|| update_table(table, &schema, &arrow_schema, &batches))?;
        let rows = update.len();
        let message = K::List(vec![K::symbol(".u.upd"), K::symbol(table), K::Table(update)]);
        if sync {
            self.sync(py, &message)?;
        } else {
            py.detach(|| {
                let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
                inner.send_async(&message).or_raise()?;
                inner.flush().or_raise()
            })?;
        }
        Ok(rows)
    }

    /// Closes the connection (also done when the object goes away).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            // Already closed by the peer is as good as closed.
            let _ = inner.socket().shutdown(std::net::Shutdown::Both);
        });
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _type: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!("strata.Connection({:?})", self.address)
    }
}

/// The rows of `batches` as the q table `.u.upd` takes for `table`: the schema's
/// columns in its order (without `time` when the data has none), each converted to
/// the schema's type.
fn update_table(
    table: &str,
    schema: &[(String, ColumnType)],
    arrow_schema: &arrow_schema::SchemaRef,
    batches: &[RecordBatch],
) -> PyResult<Table> {
    let given: Vec<&str> = arrow_schema.fields().iter().map(|f| f.name().as_str()).collect();
    let wanted: Vec<&(String, ColumnType)> = schema
        .iter()
        .enumerate()
        .filter(|(i, (name, _))| *i > 0 || given.contains(&name.as_str()))
        .map(|(_, c)| c)
        .collect();
    let names: Vec<&str> = wanted.iter().map(|(name, _)| name.as_str()).collect();
    if given.len() != wanted.len() || given.iter().any(|g| !names.contains(g)) {
        let all: Vec<&str> = schema.iter().map(|(name, _)| name.as_str()).collect();
        return Err(Error::new_err(format!(
            "publish to {table}: the data's columns ({}) are not the table's ({}), which may leave out {}",
            given.join(" "),
            all.join(" "),
            all.first().copied().unwrap_or("time")
        )));
    }
    let overrides: Vec<(String, ColumnType)> = wanted.iter().map(|&c| c.clone()).collect();
    let converted = strata_store::arrow::table_from_record_batches(arrow_schema, batches, &overrides)
        .map_err(|e| Error::new_err(format!("publish to {table}: {e}")))?;
    let columns =
        names.iter().map(|name| (name.to_string(), converted.column(name).expect("checked above").clone())).collect();
    let ordered = strata_store::Table::new(columns).or_raise()?;
    Ok(table_from_store(&ordered))
}

/// A q value as Python sees it (see [`Connection::query`]).
fn to_python(py: Python<'_>, value: K) -> PyResult<Py<PyAny>> {
    Ok(match value {
        K::Table(table) => table_result(py, &table)?,
        K::Dict { keys, values, .. } => match (*keys, *values) {
            (K::Table(keys), K::Table(values)) => {
                let (mut names, mut columns) = keys.into_parts();
                let (value_names, value_columns) = values.into_parts();
                names.extend(value_names);
                columns.extend(value_columns);
                table_result(py, &Table::from_parts(names, columns, false).or_raise()?)?
            }
            (keys, values) => {
                let (keys, values) = (to_python(py, keys)?, to_python(py, values)?);
                let dict = PyDict::new(py);
                for (key, value) in keys.bind(py).try_iter()?.zip(values.bind(py).try_iter()?) {
                    dict.set_item(key?, value?)?;
                }
                dict.into_any().unbind()
            }
        },
        K::Atom(atom) => {
            let list = vector_to_python(py, K::vector(atom.enlist()))?;
            list.bind(py).get_item(0)?.unbind()
        }
        vector @ K::Vector(..) => vector_to_python(py, vector)?,
        K::List(items) => {
            let strings = items.iter().all(|item| matches!(item, K::Vector(Vector::Char(_), _)));
            if strings && !items.is_empty() {
                vector_to_python(py, K::List(items))?
            } else {
                let items = items.into_iter().map(|item| to_python(py, item)).collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)?.into_any().unbind()
            }
        }
        K::Lambda { body, .. } => body.into_pyobject(py)?.into_any().unbind(),
        K::Identity => py.None(),
        K::Error(message) => return Err(Error::new_err(message)),
    })
}

/// A q table as a `Result`.
fn table_result(py: Python<'_>, table: &Table) -> PyResult<Py<PyAny>> {
    let batch = table_to_record_batch(table).or_raise()?;
    Ok(QueryResult::new(batch.schema(), vec![batch]).into_pyobject(py)?.into_any().unbind())
}

/// A q vector (or list of strings) as a Python list, through its Arrow form so the
/// values convert as they do in query results (symbols to `str`, temporals to
/// `datetime` values, nulls to `None`).
fn vector_to_python(py: Python<'_>, vector: K) -> PyResult<Py<PyAny>> {
    let column = column_to_store("value", &vector).or_raise()?;
    let array = strata_store::arrow::column_to_arrow(&column);
    let array = PyArray::from_array_ref(array);
    Ok(array.to_pyarrow(py)?.call_method0("to_pylist")?.unbind())
}
