//! Strata's storage: column files, tables, date partitions and the sym file.
//!
//! The layout follows kdb+'s: a database root holds the `sym` file and date
//! partitions `YYYY.MM.DD/<table>/<column>`; a table is a directory with one file per
//! column and a `.d` file for column order. A column file is either plain (a header
//! then raw values, mapped without a copy) or block-compressed (independent,
//! checksummed blocks with a min/max index), see [`column`].

mod append;
pub mod arrow;
pub mod attribute;
pub mod cast;
pub mod column;
mod column_data;
pub mod column_order;
mod config;
mod database;
mod date;
mod durable;
mod error;
pub mod fault;
pub mod import;
pub mod interchange;
mod maintenance;
pub mod nulls;
pub mod partition;
pub mod progress;
pub mod schema;
pub mod snapshot;
mod splayed;
mod sym;
mod table;
mod table_spec;
mod text_record;
mod types;
pub mod verify;

pub use append::DroppedAttribute;
pub use column_data::{Column, SymbolDomain};
pub use config::{CONFIG_FILE, DbConfig};
pub use database::{
    Database, Listing, PartitionTable, SEGMENTS_FILE, Survey, TableLocation, TableWrite, WriteMode, WriteOutcome,
};
pub use date::Date;
pub use durable::{AtomicFile, Durability, is_temp_name, sync_parent, write_atomic};
pub use error::{Result, StoreError};
pub use maintenance::{PathKind, classify, convert_path, stats_path};
pub use partition::{PARTITION_RECORD, Partition, PartitionRecord, PartitionStatus};
pub use schema::{SCHEMA_SUFFIX, SchemaMismatch, TableSchema};
pub use splayed::{COLUMN_ORDER_FILE, ColumnStats, SplayedTable, WriteOptions, string_data_path, write_splayed};
pub use sym::{RecordStatus, SymCheck, SymFile, SymRecord};
pub use table::{Table, is_valid_name};
pub use table_spec::TableSpec;
pub use types::{Attribute, ColumnType};
