//! An in-memory table: named columns of equal length, and `xasc`.

use rayon::slice::ParallelSliceMut;

use crate::column_data::Column;
use crate::error::{Result, StoreError};

/// Named columns of equal length, in order. Names are identifiers
/// (`[A-Za-z_][A-Za-z0-9_]*`) because they become file names.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    names: Vec<String>,
    columns: Vec<Column>,
}

/// Whether `name` can be a column or table name (it becomes a file name).
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Table {
    /// A table from `(name, column)` pairs, checking names and lengths.
    pub fn new(columns: Vec<(String, Column)>) -> Result<Table> {
        let mut names = Vec::with_capacity(columns.len());
        let mut cols = Vec::with_capacity(columns.len());
        for (name, column) in columns {
            if !is_valid_name(&name) {
                return Err(StoreError::Invalid(format!(
                    "column name {name:?} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"
                )));
            }
            if names.contains(&name) {
                return Err(StoreError::Invalid(format!("column {name} appears twice")));
            }
            if let Some(first) = cols.first().map(Column::len)
                && column.len() != first
            {
                return Err(StoreError::Invalid(format!(
                    "column {name} has {} rows, column {} has {first}",
                    column.len(),
                    names[0]
                )));
            }
            names.push(name);
            cols.push(column);
        }
        Ok(Table { names, columns: cols })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column names, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Columns, in order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// `(name, column)` pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Column)> {
        self.names.iter().map(String::as_str).zip(&self.columns)
    }

    /// The column called `name`, or an error listing the columns there are.
    pub fn column(&self, name: &str) -> Result<&Column> {
        match self.names.iter().position(|n| n == name) {
            Some(i) => Ok(&self.columns[i]),
            None => Err(StoreError::Invalid(format!("no column {name}; columns are: {}", self.names.join(", ")))),
        }
    }

    /// The rows at `indices`, in that order.
    pub fn take(&self, indices: &[usize]) -> Table {
        let columns = self.columns.iter().map(|c| c.take(indices)).collect();
        Table { names: self.names.clone(), columns }
    }

    /// The same table with column `name` replaced by `column` (same length).
    pub fn with_column(&self, name: &str, column: Column) -> Result<Table> {
        let i = self.names.iter().position(|n| n == name).ok_or_else(|| self.column(name).unwrap_err())?;
        if column.len() != self.len() {
            return Err(StoreError::Invalid(format!(
                "replacement for column {name} has {} rows, not {}",
                column.len(),
                self.len()
            )));
        }
        let mut columns = self.columns.clone();
        columns[i] = column;
        Ok(Table { names: self.names.clone(), columns })
    }

    /// The permutation that sorts rows ascending by `by` (first column most
    /// significant), stable: equal rows keep their order, like kdb+'s `xasc`.
    pub fn sort_permutation(&self, by: &[&str]) -> Result<Vec<usize>> {
        let keys: Vec<&Column> = by.iter().map(|name| self.column(name)).collect::<Result<_>>()?;
        let orders: Vec<_> = keys.iter().map(|c| c.row_order()).collect();
        let mut rows: Vec<usize> = (0..self.len()).collect();
        rows.par_sort_by(|&a, &b| {
            for order in &orders {
                let o = order(a, b);
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        Ok(rows)
    }

    /// The table sorted ascending by `by` (stable), like kdb+'s `` `sym`time xasc t ``.
    pub fn xasc(&self, by: &[&str]) -> Result<Table> {
        let rows = self.sort_permutation(by)?;
        Ok(self.take(&rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ColumnType;

    fn trades() -> Table {
        Table::new(vec![
            ("sym".into(), Column::from_symbols(["MSFT", "AAPL", "MSFT", "AAPL", "IBM"])),
            ("time".into(), Column::from_values(ColumnType::Timestamp, vec![5i64, 4, 3, 2, 1]).unwrap()),
            ("price".into(), Column::from_values(ColumnType::Float, vec![1.0f64, 2.0, 3.0, 4.0, 5.0]).unwrap()),
        ])
        .unwrap()
    }

    #[test]
    fn xasc_sorts_by_several_columns_stably() {
        let sorted = trades().xasc(&["sym", "time"]).unwrap();
        let sym = sorted.column("sym").unwrap();
        assert_eq!((0..5).map(|i| sym.symbol(i)).collect::<Vec<_>>(), ["AAPL", "AAPL", "IBM", "MSFT", "MSFT"]);
        assert_eq!(sorted.column("price").unwrap().values::<f64>(), [4.0, 2.0, 5.0, 3.0, 1.0]);
        let by_sym = trades().xasc(&["sym"]).unwrap();
        assert_eq!(by_sym.column("price").unwrap().values::<f64>(), [2.0, 4.0, 5.0, 1.0, 3.0], "stable");
    }

    #[test]
    fn bad_tables_are_refused() {
        let short = Column::from_values(ColumnType::Long, vec![1i64]).unwrap();
        let long = Column::from_values(ColumnType::Long, vec![1i64, 2]).unwrap();
        assert!(
            Table::new(vec![("a".into(), short.clone()), ("b".into(), long)]).unwrap_err().to_string().contains("rows")
        );
        assert!(Table::new(vec![("a".into(), short.clone()), ("a".into(), short.clone())]).is_err());
        assert!(Table::new(vec![("bad name".into(), short)]).is_err());
        let err = trades().xasc(&["nope"]).unwrap_err().to_string();
        assert!(err.contains("no column nope") && err.contains("sym, time, price"), "{err}");
    }
}
