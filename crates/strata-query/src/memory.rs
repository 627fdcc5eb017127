//! An in-memory table for data not yet on disk (the real-time database): Arrow
//! batches appended as they arrive and queried with the same SQL as stored tables.

use std::sync::{Arc, RwLock};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::catalog::memory::MemorySourceConfig;
use datafusion::common::Result as DfResult;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::expressions::Column;
use strata_store::{ColumnType, Table};

use crate::arrow_view::{StoredValues, sql_field, symbol_values, to_array};
use crate::error::{QueryError, Result};

/// A table held in memory as Arrow record batches, appended to while queries run.
/// Each query sees the batches present when it was planned.
#[derive(Debug)]
pub struct MemoryTable {
    schema: SchemaRef,
    batches: RwLock<Vec<RecordBatch>>,
    sort_order: Vec<String>,
}

impl MemoryTable {
    /// An empty table of `schema`.
    pub fn new(schema: SchemaRef) -> MemoryTable {
        MemoryTable { schema, batches: RwLock::new(Vec::new()), sort_order: Vec::new() }
    }

    /// A table holding `table`'s rows, typed as SQL sees stored tables (symbols and
    /// chars as text dictionaries). Buffers are shared, not copied.
    pub fn from_table(table: &Table) -> Result<MemoryTable> {
        let batch = table_batch(table)?;
        let memory = MemoryTable::new(batch.schema());
        memory.append(batch)?;
        Ok(memory)
    }

    /// Declares that rows ascend by `columns` (in this order) across all appends,
    /// as a tick feed's time column does; sorts and as-of joins then skip sorting.
    /// The caller keeps the promise.
    pub fn with_sort_order(mut self, columns: &[&str]) -> Result<MemoryTable> {
        for c in columns {
            self.schema.index_of(c).map_err(|_| QueryError::Invalid(format!("sort order names no column {c}")))?;
        }
        self.sort_order = columns.iter().map(|c| c.to_string()).collect();
        Ok(self)
    }

    /// The schema.
    pub fn schema_ref(&self) -> &SchemaRef {
        &self.schema
    }

    /// Appends a batch, which must have the table's column names and types.
    pub fn append(&self, batch: RecordBatch) -> Result<()> {
        let same = batch.schema().fields().len() == self.schema.fields().len()
            && batch
                .schema()
                .fields()
                .iter()
                .zip(self.schema.fields())
                .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
        if !same {
            let show = |s: &Schema| {
                s.fields().iter().map(|f| format!("{} {}", f.name(), f.data_type())).collect::<Vec<_>>().join(", ")
            };
            return Err(QueryError::Invalid(format!(
                "cannot append columns ({}) to a table of ({})",
                show(&batch.schema()),
                show(&self.schema)
            )));
        }
        let batch = batch.with_schema(self.schema.clone()).map_err(|e| QueryError::Invalid(e.to_string()))?;
        self.batches.write().expect("memory table lock").push(batch);
        Ok(())
    }

    /// Appends `table`'s rows (converted as in [`MemoryTable::from_table`]).
    pub fn append_table(&self, table: &Table) -> Result<()> {
        self.append(table_batch(table)?)
    }

    /// Drops every row (after an end-of-day write, say).
    pub fn clear(&self) {
        self.batches.write().expect("memory table lock").clear();
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.batches.read().expect("memory table lock").iter().map(RecordBatch::num_rows).sum()
    }
}

/// `table` as one record batch typed as SQL sees Strata columns.
pub fn table_batch(table: &Table) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (name, column) in table.iter() {
        let ty = column.ty();
        let values = match ty {
            ColumnType::String => StoredValues::Strings {
                offsets: column.offsets_buffer().expect("string offsets").clone(),
                data: column.values_buffer().clone(),
            },
            _ => StoredValues::Fixed(column.values_buffer().clone()),
        };
        let symbols = symbol_values(column.domain().unwrap_or(&Arc::new(Vec::new())));
        // In-memory columns keep no null counts: look for nulls in every chunk.
        let array = to_array(ty, column.len(), values, &symbols, true)
            .map_err(|e| QueryError::Invalid(format!("column {name}: {e}")))?;
        fields.push(sql_field(name, ty));
        arrays.push(array);
    }
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(table.len()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(|e| QueryError::Invalid(e.to_string()))
}

#[async_trait]
impl TableProvider for MemoryTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let batches = self.batches.read().expect("memory table lock").clone();
        // Contiguous runs of batches per partition keep each partition in order.
        let partitions = state.config().target_partitions().max(1).min(batches.len().max(1));
        let per = batches.len().div_ceil(partitions).max(1);
        let mut split: Vec<Vec<RecordBatch>> = batches.chunks(per).map(<[RecordBatch]>::to_vec).collect();
        if split.is_empty() {
            split.push(Vec::new());
        }
        let mut source =
            MemorySourceConfig::try_new(&split, self.schema.clone(), projection.cloned())?.with_limit(limit);
        if !self.sort_order.is_empty() {
            let sort = self.sort_order.iter().map(|c| {
                let index = self.schema.index_of(c).expect("checked when declared");
                PhysicalSortExpr::new_default(Arc::new(Column::new(c, index)))
            });
            source = source.try_with_sort_information(LexOrdering::new(sort).into_iter().collect())?;
        }
        Ok(datafusion::catalog::memory::DataSourceExec::from_data_source(source))
    }
}
