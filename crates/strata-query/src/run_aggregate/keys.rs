//! The groups of one key column, numbered as DataFusion's hash aggregate numbers
//! them, each run of equal keys looked up once rather than row by row.

use std::sync::Arc;

use arrow_array::{ArrayRef, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::compute::take;
use datafusion::common::Result;
use datafusion::logical_expr::EmitTo;
use datafusion::physical_plan::aggregates::group_values::{GroupValues, new_group_values};
use datafusion::physical_plan::aggregates::order::GroupOrdering;

/// Whether keys of `data_type` are grouped by runs: integer types (dates, times,
/// timestamps, durations and 128-bit decimals included: a symbol and a time
/// packed as one key is a `Decimal128`, see `dictionary_groups`), whose runs of
/// equal values are runs of one group. (A float's `-0.0` and `0.0` are one
/// group but not one run of bits.)
pub(super) fn groups_by_runs(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Decimal128(_, _)
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Duration(_)
    )
}

/// The groups of one key column across batches: DataFusion's own group values,
/// given one row per run of equal keys when a batch's keys come in runs.
pub(super) struct RunGroups {
    values: Box<dyn GroupValues>,
    /// The group of each run of the current batch.
    run_groups: Vec<usize>,
    /// Batches still to look up row by row without looking for runs, after a
    /// batch without them.
    unlooked: usize,
}

/// Batches whose keys are looked up row by row, without looking for runs,
/// after a batch without them: keys in no order pay for the search in one
/// batch of this many.
const UNLOOKED_AFTER_NO_RUNS: usize = 16;

impl RunGroups {
    /// The groups of keys of `data_type`, none yet.
    pub(super) fn new(data_type: &DataType) -> Result<RunGroups> {
        let schema = Arc::new(Schema::new(vec![Field::new("key", data_type.clone(), true)]));
        Ok(RunGroups { values: new_group_values(schema, &GroupOrdering::None)?, run_groups: Vec::new(), unlooked: 0 })
    }

    /// Writes into `groups` the group of each row of `keys` (a null key is a
    /// group of its own), numbering keys not seen before in order of first
    /// appearance.
    pub(super) fn intern(&mut self, keys: &ArrayRef, groups: &mut Vec<usize>) -> Result<()> {
        let rows = keys.len();
        if rows < 2 || self.unlooked > 0 {
            self.unlooked = self.unlooked.saturating_sub(1);
            return self.values.intern(std::slice::from_ref(keys), groups);
        }
        // Whether each row after the first differs from the row before (nulls
        // equal), compared in bulk.
        let changes = distinct(&keys.slice(1, rows - 1), &keys.slice(0, rows - 1))?;
        // Keys mostly changing row to row are looked up row by row.
        if (changes.true_count() + 1) * 2 > rows {
            self.unlooked = UNLOOKED_AFTER_NO_RUNS;
            return self.values.intern(std::slice::from_ref(keys), groups);
        }
        let starts: UInt32Array =
            std::iter::once(0).chain(changes.values().set_indices().map(|row| row as u32 + 1)).collect();
        self.values.intern(&[take(keys, &starts, None)?], &mut self.run_groups)?;
        groups.clear();
        groups.reserve(rows);
        let ends = starts.values().iter().skip(1).map(|&start| start as usize).chain(std::iter::once(rows));
        for ((&start, end), &group) in starts.values().iter().zip(ends).zip(&self.run_groups) {
            groups.extend(std::iter::repeat_n(group, end - start as usize));
        }
        Ok(())
    }

    /// How many groups there are.
    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    /// Bytes held.
    pub(super) fn size(&self) -> usize {
        self.values.size() + self.run_groups.capacity() * size_of::<usize>()
    }

    /// The key of every group, in group order; the groups start again from none.
    pub(super) fn take(&mut self) -> Result<ArrayRef> {
        let mut keys = self.values.emit(EmitTo::All)?;
        self.values.clear_shrink(0);
        Ok(keys.remove(0))
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Array, Int64Array, TimestampNanosecondArray};
    use arrow_schema::TimeUnit;

    use super::*;

    /// Runs, keys coming back after other keys, nulls, a second batch
    /// continuing the first's run and a batch without runs all number groups
    /// by first appearance.
    #[test]
    fn numbers_groups_by_first_appearance_across_batches() {
        let mut keys = RunGroups::new(&DataType::Int64).unwrap();
        let mut groups = Vec::new();
        let first: ArrayRef =
            Arc::new(Int64Array::from(vec![Some(7), Some(7), Some(7), None, None, Some(3), Some(3), Some(7)]));
        keys.intern(&first, &mut groups).unwrap();
        assert_eq!(groups, [0, 0, 0, 1, 1, 2, 2, 0]);
        let second: ArrayRef = Arc::new(Int64Array::from(vec![7, 1, 3, 9]));
        keys.intern(&second, &mut groups).unwrap();
        assert_eq!(groups, [0, 3, 2, 4]);
        assert_eq!(keys.len(), 5);
        let taken = keys.take().unwrap();
        let taken = taken.as_primitive::<Int64Type>();
        assert_eq!(taken.iter().collect::<Vec<_>>(), [Some(7), None, Some(3), Some(1), Some(9)]);
        // Taken means started again: the next 7 is a new group 0.
        keys.intern(&second, &mut groups).unwrap();
        assert_eq!(groups, [0, 1, 2, 3]);
        // After batches without runs (the second, twice), batches with runs
        // are still numbered right, and looked at again in time.
        assert_eq!(keys.unlooked, UNLOOKED_AFTER_NO_RUNS - 1);
        for _ in 0..=UNLOOKED_AFTER_NO_RUNS {
            keys.intern(&first, &mut groups).unwrap();
            assert_eq!(groups, [0, 0, 0, 4, 4, 2, 2, 0]);
        }
        assert_eq!(keys.unlooked, 0);
    }

    /// A timestamp key keeps its timezone; float keys are not grouped by runs.
    #[test]
    fn keys_keep_their_type() {
        let data_type = DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
        assert!(groups_by_runs(&data_type));
        let mut keys = RunGroups::new(&data_type).unwrap();
        let column: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![5, 5, 5, 6]).with_timezone("UTC"));
        let mut groups = Vec::new();
        keys.intern(&column, &mut groups).unwrap();
        assert_eq!(groups, [0, 0, 0, 1]);
        assert_eq!(keys.take().unwrap().data_type(), &data_type);
        assert!(!groups_by_runs(&DataType::Float64));
    }
}
