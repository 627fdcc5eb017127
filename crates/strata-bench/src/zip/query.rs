//! Query shapes timed on each spec's copy of a table: the extension point for
//! query-time ratios.
//!
//! The seed 000 query set (`select ... from quote where sym=...`, `aj`, `wavg by
//! sym`, ...) runs through SQL once the query engine is wired into the benchmark:
//! each query becomes a [`QueryShape`] whose `run` executes it against the table
//! directory, and `strata bench zip` reports its cold and warm time ratios against
//! the uncompressed copy, exactly as it does for [`SymbolSlice`], the one shape that
//! needs no SQL.

use std::path::Path;

use strata_store::attribute::{AttributeIndex, index_path, read_index};
use strata_store::{Attribute, Result, SplayedTable, StoreError};

use super::measure::read_ranges;

/// One query, run against a splayed table written with some spec.
pub trait QueryShape: Send + Sync {
    /// A short name for reports.
    fn name(&self) -> String;

    /// Runs the query against the table at `table_dir` and returns the rows it
    /// produced. Timed by the caller.
    fn run(&self, table_dir: &Path) -> Result<usize>;
}

/// `select from t where sym=X` for the busiest symbol X: the parted index gives the
/// row range, and every column is read for it (seed 000's "select from quote where
/// Symbol=..." shape).
#[derive(Clone, Debug)]
pub struct SymbolSlice {
    /// The symbol column with the parted attribute.
    pub symbol_column: String,
}

impl QueryShape for SymbolSlice {
    fn name(&self) -> String {
        format!("select from t where {}=busiest", self.symbol_column)
    }

    fn run(&self, table_dir: &Path) -> Result<usize> {
        let table = SplayedTable::open(table_dir)?;
        let path = index_path(table_dir, &self.symbol_column, Attribute::Parted);
        let AttributeIndex::Parted(runs) = read_index(&path)? else {
            return Err(StoreError::Invalid(format!("{}: not a parted index", path.display())));
        };
        let (lo, hi) = runs
            .iter()
            .max_by_key(|r| r.end - r.start)
            .map(|r| (r.start as usize, r.end as usize))
            .ok_or_else(|| StoreError::Invalid(format!("{}: empty parted index", path.display())))?;
        for name in table.names() {
            read_ranges(table_dir, name, &[(lo, hi)])?;
        }
        Ok(hi - lo)
    }
}
