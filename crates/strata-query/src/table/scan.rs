//! The scan of a Strata table: row ranges of table pieces, spread over partitions
//! that DataFusion runs in parallel, each read batch by batch.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::{ArrayRef, Date32Array, Int64Array, RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use datafusion::arrow::compute::SortOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result as DfResult, Statistics};
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, SendableRecordBatchStream,
};
use strata_store::{ColumnType, StoreError};

use super::part::{Part, ScanCounters};
use super::ranges::RowSet;
use crate::arrow_view::{SymbolDictionary, to_array};
use crate::error::external;

/// One output column of a scan.
#[derive(Clone, Debug)]
pub enum ScanColumn {
    /// The virtual partition date.
    Date,
    /// The virtual row number within the piece (kdb+'s `i`).
    RowNumber,
    /// The virtual row number within the table, pieces counted in table order
    /// (DuckDB's `rowid`).
    TableRowNumber,
    /// A stored column and its type.
    Stored(String, ColumnType),
}

/// Everything a scan needs, decided at planning time.
#[derive(Debug)]
pub struct ScanPlan {
    /// The table's name, for plans and errors.
    pub table: String,
    /// The projected schema.
    pub schema: SchemaRef,
    /// What each projected column is.
    pub columns: Vec<ScanColumn>,
    /// The pieces to read and their rows, in table order.
    pub pieces: Vec<ScanPiece>,
    /// The symbol dictionary.
    pub symbols: SymbolDictionary,
    /// Where reads are counted.
    pub counters: Arc<ScanCounters>,
    /// Rows per batch.
    pub batch_rows: usize,
    /// Stop after this many rows.
    pub limit: Option<usize>,
    /// For a partitioned table: the partitions the date tests kept, and how many
    /// the table has (shown by `EXPLAIN`).
    pub partitions: Option<(usize, usize)>,
    /// `(symbol column, time column)` when every piece is sorted so.
    pub order: Option<(String, String)>,
    /// Whether the ordered columns may hold nulls, which the stored order puts
    /// first (the order is declared nulls first then, else nulls last).
    pub order_may_hold_nulls: bool,
    /// Whether pieces of more than one date are read (the order then starts with
    /// the date).
    pub several_dates: bool,
}

/// One piece a scan reads.
#[derive(Debug)]
pub struct ScanPiece {
    /// The piece.
    pub part: Arc<Part>,
    /// Its rows to read.
    pub rows: RowSet,
    /// The table row number of its first row: the rows of the pieces before it
    /// (0 unless the scan outputs [`ScanColumn::TableRowNumber`]).
    pub first_row: i64,
}

/// A run of rows of one piece that one partition reads.
#[derive(Clone, Debug)]
struct Work {
    part: Arc<Part>,
    first_row: i64,
    start: usize,
    end: usize,
}

/// The execution plan node of a Strata scan.
#[derive(Debug)]
pub struct StrataScanExec {
    plan: Arc<ScanPlan>,
    partitions: Vec<Vec<Work>>,
    properties: Arc<PlanProperties>,
}

impl StrataScanExec {
    /// Splits the plan's rows into at most `target_partitions` partitions of about
    /// equal rows, each a contiguous stretch in table order (so each stays sorted).
    pub fn new(plan: ScanPlan, target_partitions: usize) -> StrataScanExec {
        let total: usize = plan.pieces.iter().map(|p| p.rows.len()).sum();
        let wanted = target_partitions.max(1).min(total.div_ceil(plan.batch_rows.max(1)).max(1));
        let share = total.div_ceil(wanted).max(1);
        let mut partitions: Vec<Vec<Work>> = vec![Vec::new()];
        let mut filled = 0;
        for ScanPiece { part, rows, first_row } in &plan.pieces {
            for range in rows.ranges() {
                let mut start = range.start;
                while start < range.end {
                    if filled == share {
                        partitions.push(Vec::new());
                        filled = 0;
                    }
                    let end = range.end.min(start + share - filled);
                    let work = Work { part: part.clone(), first_row: *first_row, start, end };
                    partitions.last_mut().expect("one partition").push(work);
                    filled += end - start;
                    start = end;
                }
            }
        }
        let properties = Arc::new(PlanProperties::new(
            equivalence(&plan),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        StrataScanExec { plan: Arc::new(plan), partitions, properties }
    }
}

/// The declared order, cut to the columns the scan outputs.
fn equivalence(plan: &ScanPlan) -> EquivalenceProperties {
    let mut eq = EquivalenceProperties::new(plan.schema.clone());
    let Some((sym, time)) = &plan.order else { return eq };
    let mut keys: Vec<&str> = Vec::new();
    if plan.several_dates {
        keys.push(super::DATE_COLUMN);
    }
    keys.extend([sym.as_str(), time.as_str()]);
    let ordering = |nulls_first: bool| {
        let mut sort = Vec::new();
        for key in &keys {
            let Ok(index) = plan.schema.index_of(key) else { break };
            let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(key, index));
            sort.push(PhysicalSortExpr::new(column, SortOptions { descending: false, nulls_first }));
        }
        LexOrdering::new(sort)
    };
    // Stored nulls (the empty symbol, i64::MIN) sort first. Without any, the rows
    // are also in SQL's default order (nulls last), which is then what is declared:
    // DataFusion keeps one null placement per column, and `ORDER BY sym, time`
    // asks for that one.
    eq.add_orderings(ordering(plan.order_may_hold_nulls));
    eq
}

impl StrataScanExec {
    /// The same scan in one partition that reads this one's partitions one after
    /// another. Each partition is a later stretch of the table than the one
    /// before, so for a sorted table this is the order-preserving merge of the
    /// partitions, without comparing a row (see `read_in_order`).
    pub(crate) fn in_one_partition(&self) -> StrataScanExec {
        let properties = PlanProperties::new(
            self.properties.equivalence_properties().clone(),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        StrataScanExec {
            plan: self.plan.clone(),
            partitions: vec![self.partitions.concat()],
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for StrataScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let rows: usize = self.plan.pieces.iter().map(|p| p.rows.len()).sum();
        let names: Vec<&str> = self.plan.schema.fields().iter().map(|f| f.name().as_str()).collect();
        write!(
            f,
            "StrataScanExec: table={}, pieces={}, rows={rows}, columns=[{}]",
            self.plan.table,
            self.plan.pieces.len(),
            names.join(", ")
        )?;
        if let Some((kept, all)) = self.plan.partitions {
            write!(f, ", partitions={kept}/{all}")?;
        }
        if let Some((sym, time)) = &self.plan.order {
            write!(f, ", sorted by {sym}, {time}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for StrataScanExec {
    fn name(&self) -> &str {
        "StrataScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    /// The rows the whole scan reads, exact when no LIMIT cuts it (each partition
    /// stops at the limit on its own): `count(*)` over a table, a date or a list of
    /// symbols is then answered from the index, without a batch read (DataFusion's
    /// `AggregateStatistics`). Per partition and per column: unknown.
    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let mut statistics = Statistics::new_unknown(&self.plan.schema);
        if partition.is_none() && self.plan.limit.is_none() {
            statistics.num_rows = Precision::Exact(self.plan.pieces.iter().map(|p| p.rows.len()).sum());
        }
        Ok(Arc::new(statistics))
    }

    fn execute(&self, partition: usize, _context: Arc<TaskContext>) -> DfResult<SendableRecordBatchStream> {
        let work = self.partitions.get(partition).cloned().unwrap_or_default();
        if partition == 0 {
            self.plan.counters.parts_scanned.fetch_add(self.plan.pieces.len() as u64, Ordering::Relaxed);
        }
        let batches = Batches { plan: self.plan.clone(), work, at: 0, next_row: None, left: self.plan.limit };
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.plan.schema.clone(), futures::stream::iter(batches))))
    }
}

/// The batches of one partition, read lazily.
struct Batches {
    plan: Arc<ScanPlan>,
    work: Vec<Work>,
    at: usize,
    next_row: Option<usize>,
    left: Option<usize>,
}

impl Iterator for Batches {
    type Item = DfResult<RecordBatch>;

    /// The next batch: up to `batch_rows` rows, gathered from as many consecutive
    /// ranges of one piece as it takes (a time window leaves a short range in
    /// every symbol's run; a batch per range would cost more than its rows).
    fn next(&mut self) -> Option<Self::Item> {
        let mut room = self.plan.batch_rows.max(1);
        if let Some(left) = self.left {
            room = room.min(left);
        }
        if room == 0 {
            return None;
        }
        let (part, first_row) = self.work.get(self.at).map(|w| (w.part.clone(), w.first_row))?;
        let mut ranges = Vec::new();
        while room > 0
            && let Some(work) = self.work.get(self.at)
            && Arc::ptr_eq(&work.part, &part)
        {
            let start = self.next_row.unwrap_or(work.start);
            let end = work.end.min(start + room);
            ranges.push(start..end);
            room -= end - start;
            if end == work.end {
                self.at += 1;
                self.next_row = None;
            } else {
                self.next_row = Some(end);
            }
        }
        let rows: usize = ranges.iter().map(|r| r.end - r.start).sum();
        if let Some(left) = &mut self.left {
            *left -= rows;
        }
        Some(self.read(&part, first_row, &ranges, rows))
    }
}

impl Batches {
    /// Rows `ranges` (ascending, `rows` in all) of `part`, whose row 0 is table row
    /// `first_row`, as one batch.
    fn read(&self, part: &Part, first_row: i64, ranges: &[Range<usize>], rows: usize) -> DfResult<RecordBatch> {
        let arrays = self
            .plan
            .columns
            .iter()
            .map(|column| -> DfResult<ArrayRef> {
                Ok(match column {
                    ScanColumn::Date => {
                        let day = part.date.map_or(0, |d| d.0);
                        Arc::new(Date32Array::from_value(day, rows))
                    }
                    ScanColumn::RowNumber => {
                        Arc::new(Int64Array::from_iter_values(ranges.iter().flat_map(|r| r.start as i64..r.end as i64)))
                    }
                    ScanColumn::TableRowNumber => Arc::new(Int64Array::from_iter_values(
                        ranges.iter().flat_map(|r| first_row + r.start as i64..first_row + r.end as i64),
                    )),
                    ScanColumn::Stored(name, ty) => {
                        let open = part.column(name).map_err(external)?;
                        // One range is a view of the mapping; several are copied together.
                        let values = match ranges {
                            [one] => open.read(one.start, one.end, &self.plan.counters),
                            _ => open.gather(ranges, &self.plan.counters),
                        }
                        .map_err(external)?;
                        let may_hold_nulls = ranges.iter().any(|r| open.may_hold_nulls(r.start, r.end));
                        to_array(*ty, rows, values, &self.plan.symbols, may_hold_nulls).map_err(|detail| {
                            let (first, last) = (ranges[0].start, ranges[ranges.len() - 1].end);
                            external(StoreError::Corrupt {
                                path: part.dir.join(name),
                                detail: format!("rows {first}..{last}: {detail}"),
                            })
                        })?
                    }
                })
            })
            .collect::<DfResult<Vec<_>>>()?;
        self.plan.counters.rows_scanned.fetch_add(rows as u64, Ordering::Relaxed);
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(self.plan.schema.clone(), arrays, &options)
            .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))
    }
}
