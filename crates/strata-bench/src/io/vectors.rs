//! The data Nano writes, made the way Nano makes it, deterministically.
//!
//! Nano's long vectors are four quarters (a ramp, a constant, a permutation, small
//! random numbers) so a file system or a compressing layer sees runs, repeats and
//! noise at once; its floats follow the same plan; its symbols are distinct random
//! four-letter names. The same seed gives the same bytes on every machine.

use std::collections::HashSet;
use std::sync::Arc;

use strata_store::{Column, ColumnType};

use crate::rng::SplitMix64;

/// The seed every worker uses, as Nano's workers share q's default seed.
pub const SEED: u64 = 0x4E41_4E4F; // "NANO"

/// Nano's long vector of `n` items: `til q`, `q#42`, a permutation of `til q`,
/// `q?10`, then `-42` for the `n mod 4` rest (`q = n div 4`).
pub fn int_vector(n: usize, seed: u64) -> Vec<i64> {
    let q = n / 4;
    let mut rng = SplitMix64::new(seed);
    let mut values = Vec::with_capacity(n);
    values.extend(0..q as i64);
    values.extend(std::iter::repeat_n(42, q));
    values.extend(distinct_sample(&mut rng, q as u64, q).into_iter().map(|i| i as i64));
    values.extend((0..q).map(|_| rng.below(10) as i64));
    values.extend(std::iter::repeat_n(-42, n - 4 * q));
    values
}

/// Nano's float vector: `0.1 + til q`, `42.2`, `0.1 +` a permutation, prices with two
/// decimals below 10 010, then `-1089.3` for the rest.
pub fn float_vector(n: usize, seed: u64) -> Vec<f64> {
    let q = n / 4;
    let mut rng = SplitMix64::new(seed);
    let mut values = Vec::with_capacity(n);
    values.extend((0..q).map(|i| 0.1 + i as f64));
    values.extend(std::iter::repeat_n(42.2, q));
    values.extend(distinct_sample(&mut rng, q as u64, q).into_iter().map(|i| 0.1 + i as f64));
    values.extend((0..q).map(|_| (rng.next_f64() * 100.1 * 100.0 * 100.0).round() / 100.0));
    values.extend(std::iter::repeat_n(-1089.3, n - 4 * q));
    values
}

/// `count` distinct random four-letter symbols over `a`..`p` (q's `` neg[n]?`4 ``).
///
/// # Panics
/// If `count` exceeds the 65 536 such names.
pub fn symbol_names(count: usize, seed: u64) -> Vec<String> {
    assert!(count <= 1 << 16, "only 65536 four-letter names over a..p");
    let mut rng = SplitMix64::new(seed);
    distinct_sample(&mut rng, 1 << 16, count)
        .into_iter()
        .map(|i| (0..4).map(|k| (b'a' + ((i >> (4 * (3 - k))) & 15) as u8) as char).collect())
        .collect()
}

/// A symbol column of `n` random draws from `names` (Nano's `largeSymVec`).
pub fn symbol_column(n: usize, names: &Arc<Vec<String>>, seed: u64) -> Column {
    let mut rng = SplitMix64::new(seed);
    let keys = (0..n).map(|_| rng.below(names.len() as u64) as u32).collect();
    Column::from_symbol_keys(keys, names.clone()).expect("keys are drawn below the domain's length")
}

/// `til n` as a long column (Nano's `hugeVec`).
pub fn til(n: usize) -> Column {
    Column::from_values(ColumnType::Long, (0..n as i64).collect()).expect("longs are 8 bytes")
}

/// A long column from values.
pub fn longs(values: Vec<i64>) -> Column {
    Column::from_values(ColumnType::Long, values).expect("longs are 8 bytes")
}

/// A float column from values.
pub fn floats(values: Vec<f64>) -> Column {
    Column::from_values(ColumnType::Float, values).expect("floats are 8 bytes")
}

/// `k` distinct values of `0..population` in random order (q's `neg[k]?population`,
/// "deal"). Fewer than `k` when the population is smaller.
pub fn distinct_sample(rng: &mut SplitMix64, population: u64, k: usize) -> Vec<u64> {
    let k = k.min(population as usize);
    if k as u64 * 2 > population {
        // Dense: shuffle the whole range (Fisher-Yates) and keep the first k.
        let mut all: Vec<u64> = (0..population).collect();
        for i in 0..k {
            let j = i + rng.below(population - i as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(k);
        return all;
    }
    // Sparse: Floyd's algorithm draws k distinct values without a full range, then a
    // shuffle puts them in random order.
    let mut seen = HashSet::with_capacity(k);
    let mut picked = Vec::with_capacity(k);
    for j in population - k as u64..population {
        let t = rng.below(j + 1);
        let v = if seen.contains(&t) { j } else { t };
        seen.insert(v);
        picked.push(v);
    }
    for i in (1..picked.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        picked.swap(i, j);
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_vectors_have_nanos_four_quarters() {
        let v = int_vector(10, 1);
        assert_eq!(v.len(), 10);
        assert_eq!(&v[..2], [0, 1], "ramp");
        assert_eq!(&v[2..4], [42, 42], "constant");
        let mut perm = v[4..6].to_vec();
        perm.sort();
        assert_eq!(perm, [0, 1], "a permutation of til q");
        assert!(v[6..8].iter().all(|x| (0..10).contains(x)), "q?10");
        assert_eq!(&v[8..], [-42, -42], "the rest");
        assert_eq!(int_vector(10, 1), v, "deterministic");
        let f = float_vector(9, 2);
        assert_eq!((f[0], f[2], f[8]), (0.1, 42.2, -1089.3));
        assert!(f[6] >= 0.0 && f[6] < 10_010.0 && (f[6] * 100.0 - (f[6] * 100.0).round()).abs() < 1e-6);
    }

    #[test]
    fn samples_are_distinct_in_both_regimes() {
        let mut rng = SplitMix64::new(3);
        for (population, k) in [(10u64, 10usize), (10, 7), (1_000_000, 50), (5, 9), (0, 3)] {
            let s = distinct_sample(&mut rng, population, k);
            assert_eq!(s.len(), k.min(population as usize));
            assert!(s.iter().all(|v| *v < population.max(1)));
            assert_eq!(s.iter().collect::<HashSet<_>>().len(), s.len(), "{population} {k}");
        }
    }

    #[test]
    fn symbols_are_distinct_four_letter_names() {
        let names = Arc::new(symbol_names(1000, 5));
        assert_eq!(names.iter().collect::<HashSet<_>>().len(), 1000);
        assert!(names.iter().all(|n| n.len() == 4 && n.bytes().all(|b| (b'a'..=b'p').contains(&b))));
        let column = symbol_column(5000, &names, 6);
        assert_eq!(column.len(), 5000);
        assert_eq!(column.ty(), ColumnType::Symbol);
    }
}
