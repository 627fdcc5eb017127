//! Row ranges: which rows of one stored table piece a scan must read, narrowed by
//! each filter the storage can answer.

use std::ops::Range;

/// Ascending, disjoint, non-empty row ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSet(Vec<Range<usize>>);

impl RowSet {
    /// Every row of a piece of `rows` rows.
    pub fn all(rows: usize) -> RowSet {
        RowSet::from_ranges(std::iter::once(0..rows).collect())
    }

    /// The union of `ranges` (any order, overlaps allowed).
    pub fn from_ranges(mut ranges: Vec<Range<usize>>) -> RowSet {
        ranges.retain(|r| r.start < r.end);
        ranges.sort_by_key(|r| r.start);
        let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match out.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => out.push(r),
            }
        }
        RowSet(out)
    }

    /// The ranges.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.0
    }

    /// Rows in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|r| r.end - r.start).sum()
    }

    /// Whether no row is left.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rows in both sets.
    pub fn intersect(&self, other: &RowSet) -> RowSet {
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        let mut out = Vec::new();
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            let (start, end) = (x.start.max(y.start), x.end.min(y.end));
            if start < end {
                out.push(start..end);
            }
            if x.end <= y.end {
                a.next();
            } else {
                b.next();
            }
        }
        RowSet(out)
    }

    /// Each range cut where it crosses a boundary of `pieces` (ascending, disjoint),
    /// keeping only the parts inside some piece, so every result lies in one piece.
    pub fn split_by(&self, pieces: &[Range<usize>]) -> Vec<Range<usize>> {
        self.intersect(&RowSet(pieces.to_vec())).0
    }
}

/// An `i64` column with every [`SAMPLE_STRIDE`]th value copied out, so a binary
/// search reads the small sample first and the column itself only within one
/// stride. A time window over every symbol's run of a large column makes thousands
/// of searches per query, and each probe of the column alone lands on another page
/// (a TLB and cache miss each); the sample stays in cache.
pub struct SampledColumn<'a> {
    /// The column.
    pub values: &'a [i64],
    /// `values[0]`, `values[SAMPLE_STRIDE]`, ...: see [`SampledColumn::sample`].
    pub samples: &'a [i64],
}

/// Rows between two samples of a [`SampledColumn`] (512 bytes of column).
pub const SAMPLE_STRIDE: usize = 64;

impl SampledColumn<'_> {
    /// The samples of `values`.
    pub fn sample(values: &[i64]) -> Vec<i64> {
        values.iter().step_by(SAMPLE_STRIDE).copied().collect()
    }

    /// The rows `lo..hi` of `range` (ascending there) whose value is within
    /// `[min, max]`.
    pub fn window(&self, range: Range<usize>, min: i64, max: i64) -> Range<usize> {
        let lo = self.partition_point(range.clone(), |v| v < min);
        let hi = self.partition_point(range, |v| v <= max);
        lo..hi.max(lo)
    }

    /// The first row of `range` for which `below` is false (`below` true for a
    /// prefix of the range, as for `slice::partition_point`).
    fn partition_point(&self, range: Range<usize>, below: impl Fn(i64) -> bool) -> usize {
        // The samples taken inside the range: rows first * STRIDE, ..., < end.
        let first = range.start.div_ceil(SAMPLE_STRIDE);
        let last = range.end.div_ceil(SAMPLE_STRIDE).max(first);
        let passed = self.samples[first..last].partition_point(|v| below(*v));
        // The answer lies after the last sample still below and at or before the
        // first sample that is not.
        let from = if passed == 0 { range.start } else { (first + passed - 1) * SAMPLE_STRIDE + 1 };
        let to = if first + passed < last { (first + passed) * SAMPLE_STRIDE } else { range.end };
        from + self.values[from..to].partition_point(|v| below(*v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_intersections_and_splits() {
        let a = RowSet::from_ranges(vec![5..9, 0..2, 1..3, 9..9]);
        assert_eq!(a.ranges(), [0..3, 5..9]);
        let b = RowSet::from_ranges(vec![2..6, 8..20]);
        assert_eq!(a.intersect(&b).ranges(), [2..3, 5..6, 8..9]);
        assert_eq!(a.intersect(&RowSet::from_ranges(vec![])).len(), 0);
        assert_eq!(RowSet::all(10).split_by(&[0..4, 4..7, 9..10]), vec![0..4, 4..7, 9..10]);
        assert_eq!(a.len(), 7);
    }

    #[test]
    fn binary_search_windows() {
        let v = [1, 3, 3, 5, 9, 2, 4];
        let samples = SampledColumn::sample(&v);
        let column = SampledColumn { values: &v, samples: &samples };
        assert_eq!(column.window(0..5, 3, 5), 1..4);
        assert_eq!(column.window(0..5, 6, 8), 4..4);
        assert_eq!(column.window(5..7, i64::MIN, 3), 5..6);
        assert_eq!(column.window(0..5, 9, 1), 4..4, "an empty bound gives an empty window");
    }

    /// Windows of runs that start and end anywhere relative to the samples agree
    /// with a plain binary search of the run.
    #[test]
    fn sampled_search_agrees_with_plain_search() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        let mut values = Vec::new();
        let mut runs = Vec::new();
        while values.len() < 20 * SAMPLE_STRIDE {
            let len = (next() % (3 * SAMPLE_STRIDE as u64)) as usize;
            let start = values.len();
            let mut v = (next() % 50) as i64;
            for _ in 0..len {
                v += (next() % 3) as i64;
                values.push(v);
            }
            runs.push(start..values.len());
        }
        let samples = SampledColumn::sample(&values);
        let column = SampledColumn { values: &values, samples: &samples };
        for run in runs {
            for _ in 0..20 {
                let (a, b) = ((next() % 400) as i64 - 20, (next() % 400) as i64 - 20);
                let slice = &values[run.clone()];
                let lo = run.start + slice.partition_point(|v| *v < a);
                let hi = (run.start + slice.partition_point(|v| *v <= b)).max(lo);
                assert_eq!(column.window(run.clone(), a, b), lo..hi, "run {run:?}, [{a}, {b}]");
            }
        }
    }
}
