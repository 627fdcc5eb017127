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

/// The rows `lo..hi` of `values[range]` (ascending) whose value is within
/// `[min, max]`, found by binary search.
pub fn ascending_window(values: &[i64], range: Range<usize>, min: i64, max: i64) -> Range<usize> {
    let slice = &values[range.clone()];
    let lo = slice.partition_point(|v| *v < min);
    let hi = slice.partition_point(|v| *v <= max);
    range.start + lo..range.start + hi.max(lo)
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
        assert_eq!(ascending_window(&v, 0..5, 3, 5), 1..4);
        assert_eq!(ascending_window(&v, 0..5, 6, 8), 4..4);
        assert_eq!(ascending_window(&v, 5..7, i64::MIN, 3), 5..6);
        assert_eq!(ascending_window(&v, 0..5, 9, 1), 4..4, "an empty bound gives an empty window");
    }
}
