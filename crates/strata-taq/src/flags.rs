//! Categorical columns with a target change rate: indicator and code columns whose
//! values repeat for a while, and mostly-constant flags with rare runs of other
//! values.

use crate::rng::{Rng, cumulative};

/// A categorical value that keeps its previous value for a while: each row keeps
/// the last value with probability `stay`, otherwise draws afresh from the weights.
#[derive(Clone, Debug)]
pub struct Sticky<T: Copy> {
    values: Vec<T>,
    cumulative: Vec<f64>,
    stay: f64,
}

impl<T: Copy> Sticky<T> {
    /// Values with weights, tuned so that a share `change_rate` of rows differ from
    /// the row before. A fresh draw repeats the last value with probability
    /// `sum(p^2)`, so `stay = 1 - change_rate / (1 - sum(p^2))` (0 if the weights alone
    /// change less often than asked).
    pub fn with_change_rate(choices: &[(T, f64)], change_rate: f64) -> Sticky<T> {
        let total: f64 = choices.iter().map(|c| c.1).sum();
        let collide: f64 = choices.iter().map(|c| (c.1 / total).powi(2)).sum();
        let stay = if collide >= 1.0 { 0.0 } else { (1.0 - change_rate / (1.0 - collide)).clamp(0.0, 1.0) };
        Sticky {
            values: choices.iter().map(|c| c.0).collect(),
            cumulative: cumulative(&choices.iter().map(|c| c.1).collect::<Vec<_>>()),
            stay,
        }
    }

    /// The next value after `last` (`None` at the start of a run of rows).
    pub fn next(&self, last: Option<T>, rng: &mut Rng) -> T {
        match last {
            Some(v) if rng.chance(self.stay) => v,
            _ => self.values[rng.pick(&self.cumulative)],
        }
    }
}

/// Overwrites `column` (full of its usual value) with `runs` short runs of other
/// values at random rows: mostly-constant flags such as a quote condition that is
/// regular except around halts and auctions. Runs last `mean_len` rows on average.
pub fn rare_runs<T: Copy>(column: &mut [T], others: &[T], runs: usize, mean_len: f64, rng: &mut Rng) {
    if column.is_empty() || others.is_empty() {
        return;
    }
    for _ in 0..runs {
        let start = rng.below(column.len() as u64) as usize;
        let len = rng.geometric(mean_len) as usize;
        let value = others[rng.below(others.len() as u64) as usize];
        let end = (start + len).min(column.len());
        column[start..end].fill(value);
    }
}

/// How many rare runs a column of `rows` rows gets for a reference change rate:
/// proportional, but at least `at_least` so small days still show every value.
pub fn run_count(rows: usize, change_rate: f64, at_least: usize) -> usize {
    ((rows as f64 * change_rate / 2.0).round() as usize).max(at_least.min(rows / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_series_hit_their_change_rate() {
        let mut rng = Rng::new(1);
        for rate in [0.05, 0.3, 0.55] {
            let sticky = Sticky::with_change_rate(&[(b'a', 5.0), (b'b', 3.0), (b'c', 2.0)], rate);
            let mut last = None;
            let series: Vec<u8> = (0..200_000)
                .map(|_| {
                    last = Some(sticky.next(last, &mut rng));
                    last.unwrap()
                })
                .collect();
            let changes = series.windows(2).filter(|w| w[0] != w[1]).count() as f64 / series.len() as f64;
            assert!((changes - rate).abs() < 0.01, "{rate}: {changes}");
        }
    }

    #[test]
    fn rare_runs_change_few_rows() {
        let mut rng = Rng::new(2);
        let mut column = vec![b'R'; 100_000];
        rare_runs(&mut column, b"OC", 20, 2.0, &mut rng);
        let changed = column.iter().filter(|&&c| c != b'R').count();
        assert!(changed > 0 && changed < 200, "{changed}");
        assert_eq!(run_count(1_000_000, 0.0002, 3), 100);
        assert_eq!(run_count(1000, 0.0, 3), 3);
        assert_eq!(run_count(2, 0.0, 3), 1);
    }
}
