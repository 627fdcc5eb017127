//! Python arguments read into Strata's types: dates (a `datetime.date`, or text as
//! `2024.01.02` or `2024-01-02`), the dates of a read, a write's mode and its
//! column types.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDate, PyString, PyTuple};
use strata_store::{ColumnType, Date, WriteMode};

use crate::error::OrRaise;
use crate::select::Dates;

/// A date from a `datetime.date` (a `datetime` gives its date) or its text.
pub(crate) fn date(value: &Bound<'_, PyAny>) -> PyResult<Date> {
    if let Ok(text) = value.cast::<PyString>() {
        return text.to_str()?.parse::<Date>().or_raise();
    }
    if value.is_instance_of::<PyDate>() {
        let (year, month, day): (i32, u32, u32) =
            (value.getattr("year")?.extract()?, value.getattr("month")?.extract()?, value.getattr("day")?.extract()?);
        return Date::from_ymd(year, month, day)
            .ok_or_else(|| PyValueError::new_err(format!("{year:04}-{month:02}-{day:02} is outside Strata's dates")));
    }
    Err(PyTypeError::new_err(format!(
        "expected a date (datetime.date or 'YYYY.MM.DD' text), got {}",
        value.get_type().name()?
    )))
}

/// The dates of a read: one date, a `(first, last)` tuple (both included), or a
/// list (any iterable) of dates.
pub(crate) fn dates(value: &Bound<'_, PyAny>) -> PyResult<Dates> {
    if let Ok(pair) = value.cast::<PyTuple>() {
        if pair.len() != 2 {
            return Err(PyValueError::new_err(format!(
                "dates as a tuple is a range (first, last); got {} items (give a list for several dates)",
                pair.len()
            )));
        }
        return Ok(Dates::Range(date(&pair.get_item(0)?)?, date(&pair.get_item(1)?)?));
    }
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyDate>() {
        return Ok(Dates::List(vec![date(value)?]));
    }
    let list = value.try_iter()?.map(|item| date(&item?)).collect::<PyResult<Vec<Date>>>()?;
    Ok(Dates::List(list))
}

/// A write's mode: `"fail"` (refuse a table that is there), `"append"` or `"replace"`.
pub(crate) fn write_mode(mode: &str) -> PyResult<WriteMode> {
    match mode {
        "fail" => Ok(WriteMode::Fail),
        "append" => Ok(WriteMode::Append),
        "replace" => Ok(WriteMode::Replace),
        other => Err(PyValueError::new_err(format!("mode {other:?}: expected \"fail\", \"append\" or \"replace\""))),
    }
}

/// A write's column types, `{"column": "kdb+ type name"}`, sorted by column so the
/// order never depends on the dict's.
pub(crate) fn column_types(types: std::collections::HashMap<String, String>) -> PyResult<Vec<(String, ColumnType)>> {
    let mut overrides = types
        .into_iter()
        .map(|(column, name)| {
            let ty = ColumnType::from_name(name.trim()).ok_or_else(|| {
                let names: Vec<&str> = ColumnType::ALL.iter().map(|t| t.name()).collect();
                PyValueError::new_err(format!(
                    "types: unknown type {name:?} for column {column}; types are {}",
                    names.join(", ")
                ))
            })?;
            Ok((column, ty))
        })
        .collect::<PyResult<Vec<_>>>()?;
    overrides.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(overrides)
}
