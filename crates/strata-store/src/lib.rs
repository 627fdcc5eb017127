//! Strata's storage: column files, tables, date partitions and the sym file.
//!
//! The layout follows kdb+'s: a database root holds the `sym` file and date
//! partitions `YYYY.MM.DD/<table>/<column>`; a table is a directory with one file per
//! column and a `.d` file for column order. A column file is either plain (a header
//! then raw values, mapped without a copy) or block-compressed (independent,
//! checksummed blocks with a min/max index), see [`column`].

pub mod column;
mod column_data;
mod durable;
mod error;
mod types;

pub use column_data::{Column, SymbolDomain};
pub use durable::{AtomicFile, Durability, is_temp_name, sync_parent, write_atomic};
pub use error::{Result, StoreError};
pub use types::{Attribute, ColumnType};
