//! In-memory tables that grow by appending updates: the RDB's tables and a batching
//! tickerplant's buffers.

use std::collections::HashSet;

use strata_ipc::{K, Table, Vector};

use crate::schema::TableSchema;

/// A table held in memory, one growable column per schema column.
#[derive(Clone, Debug)]
pub struct MemTable {
    schema: TableSchema,
    columns: Vec<K>,
    rows: usize,
}

impl MemTable {
    /// An empty table of `schema`.
    pub fn new(schema: TableSchema) -> MemTable {
        let columns = schema.kinds.iter().map(|k| k.empty()).collect();
        MemTable { schema, columns, rows: 0 }
    }

    /// The schema.
    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Appends whole columns (already checked against the schema by
    /// [`TableSchema::normalize`]).
    pub fn append(&mut self, columns: Vec<K>, rows: usize) {
        debug_assert_eq!(columns.len(), self.columns.len());
        for (held, new) in self.columns.iter_mut().zip(columns) {
            match (held, new) {
                (K::Vector(held, _), K::Vector(new, _)) => {
                    let grew = held.extend_from(&new);
                    debug_assert!(grew, "normalize checked the column types");
                }
                (K::List(held), K::List(new)) => held.extend(new),
                // q's untyped empty list adds nothing.
                (_, K::List(new)) if new.is_empty() => {}
                (held, new) => unreachable!("normalize let a {} into a {} column", new.describe(), held.describe()),
            }
        }
        self.rows += rows;
    }

    /// The rows held, as a q table (a copy).
    pub fn to_table(&self) -> Table {
        Table::new(self.schema.columns.iter().cloned().zip(self.columns.iter().cloned()).collect())
            .expect("columns grow together")
    }

    /// Takes the rows out as a q table, leaving the table empty.
    pub fn take(&mut self) -> Table {
        let empty = self.schema.kinds.iter().map(|k| k.empty()).collect();
        let columns = std::mem::replace(&mut self.columns, empty);
        self.rows = 0;
        Table::new(self.schema.columns.iter().cloned().zip(columns).collect()).expect("columns grow together")
    }
}

/// The rows of `columns` whose `sym` (column 1) is in `syms`, or `None` when no row
/// is (kdb+tick's `sel`: nothing is sent then).
pub fn select_syms(columns: &[K], syms: &HashSet<String>) -> Option<Vec<K>> {
    let K::Vector(Vector::Symbol(sym), _) = &columns[1] else { return None };
    let rows: Vec<usize> = (0..sym.len()).filter(|&r| syms.contains(&sym[r])).collect();
    if rows.is_empty() {
        return None;
    }
    if rows.len() == sym.len() {
        return Some(columns.to_vec());
    }
    Some(
        columns
            .iter()
            .map(|c| match c {
                K::Vector(v, _) => K::vector(v.take(&rows)),
                K::List(items) => K::List(rows.iter().map(|&r| items[r].clone()).collect()),
                other => other.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;

    #[test]
    fn appends_and_filters_by_sym() {
        let schema = Schema::parse("s", "t time:n sym:s note:string\n").unwrap();
        let mut t = MemTable::new(schema.tables[0].clone());
        let cols = vec![
            K::vector(Vector::Timespan(vec![1, 2, 3])),
            K::symbols(["A", "B", "A"]),
            K::List(vec![K::string("x"), K::string("y"), K::string("z")]),
        ];
        t.append(cols.clone(), 3);
        t.append(cols.clone(), 3);
        assert_eq!(t.len(), 6);
        let only_a = select_syms(&cols, &HashSet::from(["A".to_string()])).unwrap();
        assert_eq!(only_a[0], K::vector(Vector::Timespan(vec![1, 3])));
        assert_eq!(only_a[2], K::List(vec![K::string("x"), K::string("z")]));
        assert!(select_syms(&cols, &HashSet::from(["C".to_string()])).is_none());
        let taken = t.take();
        assert_eq!(taken.len(), 6);
        assert!(t.is_empty());
        assert_eq!(t.to_table().len(), 0);
    }
}
