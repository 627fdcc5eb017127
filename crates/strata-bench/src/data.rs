//! Deterministic, tick-shaped sample columns for benchmarks.
//!
//! Each generator makes `rows` values shaped like one column of a kdb+ trade table
//! (`time`, `price`, `size`, `seq`, `cond`, `sym`) and returns them as raw
//! little-endian bytes with their [`ElementKind`], which is what a codec sees. The
//! same `(rows, seed)` always gives the same bytes, so figures from two runs or two
//! machines compare like for like.

use strata_codec::{ElementKind, NumericClass};

use crate::rng::SplitMix64;

/// The seed the benchmarks use unless told otherwise.
pub const DEFAULT_SEED: u64 = 0x5354_5241_5441; // "STRATA"

/// 2025-01-02 14:30:00 UTC (the US open) in nanoseconds since the Unix epoch.
const OPEN_NS: i64 = 1_735_828_200_000_000_000;
/// A US equity trading day, 09:30 to 16:00: 6.5 hours in nanoseconds.
const DAY_NS: f64 = 6.5 * 3600.0 * 1e9;
/// Price tick: prices are whole multiples of one cent.
pub const PRICE_TICK: f64 = 0.01;
/// How many distinct symbols the `sym` column draws from.
pub const SYMBOL_COUNT: u32 = 500;
/// The letters the `cond` column draws from; the first is by far the most common.
pub const CONDITION_LETTERS: &[u8] = b"NABCFORTZ";

/// One generated column: its name, the kind of its elements and its raw bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleColumn {
    /// The column's name, as in a kdb+ trade table (`time`, `price`, ...).
    pub name: &'static str,
    /// What the values look like, for reports.
    pub description: &'static str,
    /// Width and numeric class of the elements in `bytes`.
    pub kind: ElementKind,
    /// The values, little-endian, `rows * kind.width` bytes.
    pub bytes: Vec<u8>,
}

impl SampleColumn {
    /// The number of values in the column.
    pub fn rows(&self) -> usize {
        self.bytes.len() / self.kind.width
    }
}

/// The six trade-table columns, each with `rows` values, in table order.
///
/// Each column gets its own generator stream derived from `seed`, so adding or
/// changing one column never changes the others.
pub fn trade_columns(rows: usize, seed: u64) -> Vec<SampleColumn> {
    vec![
        timestamps(rows, seed),
        prices(rows, seed),
        sizes(rows, seed),
        sequence_numbers(rows, seed),
        conditions(rows, seed),
        symbols(rows, seed),
    ]
}

/// A generator for one column, independent of the other columns' streams.
fn stream(seed: u64, column: u64) -> SplitMix64 {
    let mut mixer = SplitMix64::new(seed ^ column.wrapping_mul(0xA076_1D64_78BD_642F));
    SplitMix64::new(mixer.next_u64())
}

/// `time`: sorted nanosecond timestamps (i64) over about one trading day.
///
/// Trades come in bursts: 70% of gaps are within a burst (0 to 20 µs, with one in ten
/// an exact repeat of the previous timestamp), the rest are quiet gaps drawn from an
/// exponential distribution sized so the column spans about 6.5 hours.
pub fn timestamps(rows: usize, seed: u64) -> SampleColumn {
    const BURST_SHARE: f64 = 0.7;
    const BURST_MAX_NS: u64 = 20_000;
    let mut rng = stream(seed, 1);
    let burst_ns = rows as f64 * BURST_SHARE * (BURST_MAX_NS as f64 / 2.0) * 0.9;
    let quiet_rows = (rows as f64 * (1.0 - BURST_SHARE)).max(1.0);
    // Very long columns cannot fit a day of quiet gaps; keep gaps sub-millisecond then.
    let quiet_mean_ns = ((DAY_NS - burst_ns) / quiet_rows).max(1_000.0);
    let mut t = OPEN_NS;
    let values = (0..rows).map(|i| {
        if i > 0 {
            let gap = if rng.chance(BURST_SHARE) {
                if rng.chance(0.1) { 0 } else { 1 + rng.below(BURST_MAX_NS) }
            } else {
                rng.exponential(quiet_mean_ns) as u64
            };
            t += gap as i64;
        }
        t
    });
    SampleColumn {
        name: "time",
        description: "i64 ns timestamps, sorted, bursty sub-second gaps over one trading day",
        kind: ElementKind::new(8, NumericClass::Signed),
        bytes: values.flat_map(i64::to_le_bytes).collect(),
    }
}

/// `price`: a random walk on a one-cent grid (f64), starting at 100.00.
///
/// 60% of trades print at the previous price; the rest move one tick, and one move in
/// ten jumps two or three ticks. Prices never fall below one tick.
pub fn prices(rows: usize, seed: u64) -> SampleColumn {
    let mut rng = stream(seed, 2);
    let mut ticks: i64 = 10_000;
    let values = (0..rows).map(|i| {
        if i > 0 && !rng.chance(0.6) {
            let size = if rng.chance(0.1) { 2 + rng.below(2) as i64 } else { 1 };
            let step = if rng.chance(0.5) { size } else { -size };
            ticks = (ticks + step).max(1);
        }
        // Dividing the integer tick count (rather than adding 0.01 repeatedly) keeps
        // every value the nearest double to a whole number of cents.
        ticks as f64 / 100.0
    });
    SampleColumn {
        name: "price",
        description: "f64 random-walk prices on a 0.01 tick grid",
        kind: ElementKind::new(8, NumericClass::Float),
        bytes: values.flat_map(f64::to_le_bytes).collect(),
    }
}

/// `size`: trade sizes (i32), 85% round lots (multiples of 100) with a heavy-tailed
/// lot count (most trades are one lot), 15% odd lots of 1 to 99 shares.
pub fn sizes(rows: usize, seed: u64) -> SampleColumn {
    let mut rng = stream(seed, 3);
    let values = (0..rows).map(|_| {
        if rng.chance(0.85) {
            // Pareto with shape 1/0.6: P(1 lot) is about 2/3, capped at 500 lots.
            let lots = (rng.next_open_f64().powf(-0.6) as i32).clamp(1, 500);
            lots * 100
        } else {
            1 + rng.below(99) as i32
        }
    });
    SampleColumn {
        name: "size",
        description: "i32 trade sizes, mostly round lots of 100, skewed to small",
        kind: ElementKind::new(4, NumericClass::Signed),
        bytes: values.flat_map(i32::to_le_bytes).collect(),
    }
}

/// `seq`: feed sequence numbers (i64), non-decreasing from 1,000,000: 10% repeat
/// the previous number (several prints of one message), 2% skip 2 to 5, the rest
/// add one.
pub fn sequence_numbers(rows: usize, seed: u64) -> SampleColumn {
    let mut rng = stream(seed, 4);
    let mut seq: i64 = 1_000_000;
    let values = (0..rows).map(|i| {
        if i > 0 {
            let roll = rng.next_f64();
            seq += if roll < 0.10 {
                0
            } else if roll < 0.12 {
                2 + rng.below(4) as i64
            } else {
                1
            };
        }
        seq
    });
    SampleColumn {
        name: "seq",
        description: "i64 sequence numbers, increasing, sometimes repeating",
        kind: ElementKind::new(8, NumericClass::Signed),
        bytes: values.flat_map(i64::to_le_bytes).collect(),
    }
}

/// `cond`: one-letter trade conditions (u8 chars from [`CONDITION_LETTERS`]): 85%
/// the first letter, the rest spread over the others.
pub fn conditions(rows: usize, seed: u64) -> SampleColumn {
    let mut rng = stream(seed, 5);
    let others = &CONDITION_LETTERS[1..];
    let bytes = (0..rows)
        .map(|_| if rng.chance(0.85) { CONDITION_LETTERS[0] } else { others[rng.below(others.len() as u64) as usize] })
        .collect();
    SampleColumn {
        name: "cond",
        description: "u8 chars, a handful of letters, mostly one",
        kind: ElementKind::BYTES,
        bytes,
    }
}

/// `sym`: symbol indices (u32) below [`SYMBOL_COUNT`], drawn with Zipf (s = 1) skew
/// and then grouped into one run per symbol in index order, as in a table parted
/// by `sym`. Popularity is shuffled over the indices, so the biggest run is not
/// always first.
pub fn symbols(rows: usize, seed: u64) -> SampleColumn {
    let mut rng = stream(seed, 6);
    let n = SYMBOL_COUNT as usize;
    // Zipf weights 1/rank, as a cumulative table for inverse-transform sampling.
    let mut cumulative = Vec::with_capacity(n);
    let mut total = 0.0;
    for rank in 1..=n {
        total += 1.0 / rank as f64;
        cumulative.push(total);
    }
    // A Fisher-Yates permutation decides which index gets which popularity rank.
    let mut index_of_rank: Vec<u32> = (0..SYMBOL_COUNT).collect();
    for i in (1..n).rev() {
        index_of_rank.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut counts = vec![0usize; n];
    for _ in 0..rows {
        let u = rng.next_f64() * total;
        let rank = cumulative.partition_point(|c| *c <= u).min(n - 1);
        counts[index_of_rank[rank] as usize] += 1;
    }
    let bytes = counts
        .iter()
        .enumerate()
        .flat_map(|(index, count)| std::iter::repeat_n(index as u32, *count))
        .flat_map(u32::to_le_bytes)
        .collect();
    SampleColumn {
        name: "sym",
        description: "u32 symbol indices, Zipf-skewed over 500 symbols, parted (one run per symbol)",
        kind: ElementKind::new(4, NumericClass::Unsigned),
        bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i64s(column: &SampleColumn) -> Vec<i64> {
        column.bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn f64s(column: &SampleColumn) -> Vec<f64> {
        column.bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn i32s(column: &SampleColumn) -> Vec<i32> {
        column.bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    const ROWS: usize = 50_000;

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = trade_columns(ROWS, 9);
        assert_eq!(a, trade_columns(ROWS, 9));
        let b = trade_columns(ROWS, 10);
        for (x, y) in a.iter().zip(&b) {
            assert_ne!(x.bytes, y.bytes, "{}", x.name);
        }
    }

    #[test]
    fn every_column_has_the_rows_asked_for() {
        for rows in [0, 1, 2, 1000] {
            for column in trade_columns(rows, DEFAULT_SEED) {
                assert_eq!(column.rows(), rows, "{}", column.name);
                assert_eq!(column.bytes.len(), rows * column.kind.width);
            }
        }
    }

    #[test]
    fn timestamps_are_sorted_bursty_and_span_about_a_day() {
        let t = i64s(&timestamps(ROWS, DEFAULT_SEED));
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(t[0], OPEN_NS);
        let span = (t[ROWS - 1] - t[0]) as f64;
        assert!((0.8 * DAY_NS..1.2 * DAY_NS).contains(&span), "span {span}");
        let gaps: Vec<i64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let repeats = gaps.iter().filter(|g| **g == 0).count();
        let sub_20us = gaps.iter().filter(|g| **g <= 20_000).count();
        assert!(repeats > ROWS / 50, "some exact repeats: {repeats}");
        assert!(sub_20us > ROWS / 2, "mostly bursts: {sub_20us}");
        assert!(gaps.iter().any(|g| *g > 100_000_000), "some quiet gaps");
    }

    #[test]
    fn prices_stay_on_the_cent_grid() {
        let p = f64s(&prices(ROWS, DEFAULT_SEED));
        assert_eq!(p[0].to_bits(), 100.0f64.to_bits());
        for price in &p {
            assert!(*price >= PRICE_TICK);
            assert_eq!(*price, (*price * 100.0).round() / 100.0, "{price}");
        }
        let unchanged = p.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(unchanged > ROWS / 2 && unchanged < ROWS * 7 / 10);
    }

    #[test]
    fn sizes_are_mostly_round_lots_and_skewed() {
        let s = i32s(&sizes(ROWS, DEFAULT_SEED));
        assert!(s.iter().all(|v| (1..=50_000).contains(v)));
        let round = s.iter().filter(|v| *v % 100 == 0).count();
        let one_lot = s.iter().filter(|v| **v == 100).count();
        assert!(round > ROWS * 8 / 10, "round lots {round}");
        assert!(one_lot > round / 2, "one lot dominates: {one_lot}");
        assert!(s.iter().any(|v| *v >= 1000));
    }

    #[test]
    fn sequence_numbers_increase_with_repeats() {
        let q = i64s(&sequence_numbers(ROWS, DEFAULT_SEED));
        assert_eq!(q[0], 1_000_000);
        let steps: Vec<i64> = q.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(steps.iter().all(|s| (0..=5).contains(s)));
        assert!(steps.iter().filter(|s| **s == 0).count() > ROWS / 20);
        assert!(steps.iter().filter(|s| **s == 1).count() > ROWS / 2);
    }

    #[test]
    fn conditions_are_mostly_one_letter() {
        let c = conditions(ROWS, DEFAULT_SEED);
        assert_eq!(c.kind, ElementKind::BYTES);
        assert!(c.bytes.iter().all(|b| CONDITION_LETTERS.contains(b)));
        let n = c.bytes.iter().filter(|b| **b == b'N').count();
        assert!(n > ROWS * 8 / 10 && n < ROWS * 9 / 10, "{n}");
        assert!(c.bytes.contains(&b'Z'));
    }

    #[test]
    fn symbols_are_parted_and_skewed() {
        let s = symbols(ROWS, DEFAULT_SEED);
        let v: Vec<u32> = s.bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        assert!(v.windows(2).all(|w| w[0] <= w[1]), "one run per symbol");
        assert!(v.iter().all(|x| *x < SYMBOL_COUNT));
        let mut counts = vec![0usize; SYMBOL_COUNT as usize];
        for x in &v {
            counts[*x as usize] += 1;
        }
        let present = counts.iter().filter(|c| **c > 0).count();
        counts.sort_unstable();
        let top = counts[counts.len() - 1];
        let median = counts[counts.len() / 2];
        assert!(present > 400, "most symbols trade: {present}");
        assert!(top > 20 * median.max(1), "Zipf skew: top {top}, median {median}");
    }
}
