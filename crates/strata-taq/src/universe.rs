//! The day's instruments: names, how active each is, where it is listed, its price
//! level and tick, and which feed channel carries it.

use crate::rng::Rng;

/// How concentrated activity is: the entropy of the per-symbol row distribution
/// divided by `log2(symbols)`. Both reference tables have about 0.81 (11.0 bits over
/// 12 127 quoted symbols, 10.9 over 11 615 traded ones).
pub const ACTIVITY_ENTROPY_SHARE: f64 = 0.81;

/// Feed channels quotes are sequenced on: the reference quote table repeats each
/// sequence number about 15.7 times (113.6 M distinct in 1.78 G rows).
pub const QUOTE_CHANNELS: usize = 16;
/// Feed channels trades are sequenced on (7.05 M distinct in 76.6 M rows: 10.9).
pub const TRADE_CHANNELS: usize = 11;

/// One instrument.
#[derive(Clone, Debug, PartialEq)]
pub struct Instrument {
    /// Ticker, e.g. `ABCD` or `ABCD.W`.
    pub name: String,
    /// Share of the day's activity (all weights sum to 1).
    pub weight: f64,
    /// Listed on Nasdaq (its quotes come from UQDF: source `N`), else CQS (`C`).
    pub nasdaq: bool,
    /// Opening price, dollars.
    pub open: f64,
    /// Price increment: a cent, or a hundredth of a cent below one dollar.
    pub tick: f64,
    /// Daily volatility as a share of the price.
    pub volatility: f64,
    /// Short-sale restriction indicator for the day (`' '`, `'0'`, `'A'`, ...).
    pub short_sale: u8,
}

impl Instrument {
    /// Ticks per dollar: 100 or 10 000.
    pub fn ticks_per_dollar(&self) -> f64 {
        (1.0 / self.tick).round()
    }
}

/// `count` instruments sorted by name, deterministic for `seed`.
///
/// Activity follows a Zipf law over a random ranking of the names, with the exponent
/// chosen so the activity entropy matches [`ACTIVITY_ENTROPY_SHARE`].
pub fn instruments(count: usize, seed: u64) -> Vec<Instrument> {
    assert!(count > 0, "at least one symbol");
    let mut rng = Rng::fork(seed, 0x5359_4d53);
    let names = names(count, &mut rng);
    let exponent = zipf_exponent(count, ACTIVITY_ENTROPY_SHARE);
    // Ranks are a random permutation, so activity is unrelated to alphabetical order.
    let mut ranks: Vec<usize> = (1..=count).collect();
    for i in (1..count).rev() {
        ranks.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let raw: Vec<f64> = ranks.iter().map(|&r| (r as f64).powf(-exponent)).collect();
    let total: f64 = raw.iter().sum();
    names
        .into_iter()
        .zip(raw)
        .map(|(name, w)| {
            let open = (25f64.ln() + 1.3 * rng.normal()).exp().clamp(0.05, 4000.0);
            let tick = if open < 1.0 { 0.0001 } else { 0.01 };
            let open = (open / tick).round().max(1.0) * tick;
            Instrument {
                name,
                weight: w / total,
                nasdaq: rng.chance(0.3),
                open,
                tick,
                volatility: 0.02 * (0.5 * rng.normal()).exp(),
                // Most symbols carry '0' (no restriction), some a blank, a few an
                // active or continued restriction: about 1 bit of entropy.
                short_sale: *pick_weighted(&mut rng, &[(b'0', 0.7), (b' ', 0.2), (b'A', 0.06), (b'C', 0.04)]),
            }
        })
        .collect()
}

fn pick_weighted<'a, T>(rng: &mut Rng, choices: &'a [(T, f64)]) -> &'a T {
    let total: f64 = choices.iter().map(|c| c.1).sum();
    let mut x = rng.uniform() * total;
    for (value, w) in choices {
        if x < *w {
            return value;
        }
        x -= w;
    }
    &choices[choices.len() - 1].0
}

/// Distinct ticker-like names, sorted: mostly three and four letters, some with a
/// `.W` (warrant) or `.U` (unit) suffix.
fn names(count: usize, rng: &mut Rng) -> Vec<String> {
    let mut seen = std::collections::HashSet::with_capacity(count);
    let mut names = Vec::with_capacity(count);
    let mut attempts = 0u64;
    while names.len() < count {
        attempts += 1;
        // Long names once short ones run out (26^4 is plenty for any real universe).
        let len = match rng.below(100) + attempts / (count as u64 * 50 + 1000) {
            0..=1 => 1,
            2..=7 => 2,
            8..=37 => 3,
            38..=91 => 4,
            _ => 5,
        };
        let mut name: String = (0..len).map(|_| (b'A' + rng.below(26) as u8) as char).collect();
        if rng.chance(0.03) {
            name.push_str(if rng.chance(0.5) { ".W" } else { ".U" });
        }
        if seen.insert(name.clone()) {
            names.push(name);
        }
    }
    names.sort();
    names
}

/// The Zipf exponent `s` for which weights `r^-s` over `count` ranks have entropy
/// `share * log2(count)` (bisection; entropy falls as `s` grows).
pub fn zipf_exponent(count: usize, share: f64) -> f64 {
    if count < 2 {
        return 1.0;
    }
    let target = share * (count as f64).log2();
    let (mut lo, mut hi) = (0.0f64, 4.0f64);
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if zipf_entropy(count, mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

fn zipf_entropy(count: usize, s: f64) -> f64 {
    let weights: Vec<f64> = (1..=count).map(|r| (r as f64).powf(-s)).collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).filter(|p| *p > 0.0).map(|p| -p * p.log2()).sum()
}

/// Splits `total` rows over the instruments in proportion to their weights
/// (largest remainder), giving each at least `min_each` while rows last.
pub fn allocate(weights: &[f64], total: usize, min_each: usize) -> Vec<usize> {
    let n = weights.len();
    let floor = min_each.min(total / n.max(1));
    let spare = total - floor * n;
    let exact: Vec<f64> = weights.iter().map(|w| w * spare as f64).collect();
    let mut counts: Vec<usize> = exact.iter().map(|e| e.floor() as usize + floor).collect();
    let mut left = total - counts.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for i in order.into_iter().cycle() {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    counts
}

/// The feed channel of each instrument: contiguous alphabetical ranges carrying
/// about equal shares of the activity, as the SIPs balance symbols over their
/// multicast channels.
pub fn channels_by_activity(weights: &[f64], channels: usize) -> Vec<u8> {
    let total: f64 = weights.iter().sum();
    let mut before = 0.0;
    weights
        .iter()
        .map(|w| {
            let channel = ((before / total.max(f64::MIN_POSITIVE)) * channels as f64) as usize;
            before += w;
            channel.min(channels - 1) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_distinct_and_weights_sum_to_one() {
        let universe = instruments(500, 3);
        assert_eq!(universe.len(), 500);
        assert!(universe.windows(2).all(|w| w[0].name < w[1].name));
        let total: f64 = universe.iter().map(|i| i.weight).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert_eq!(instruments(500, 3), universe, "deterministic");
    }

    #[test]
    fn the_zipf_exponent_hits_the_entropy_share() {
        for count in [50, 1000, 12_127] {
            let s = zipf_exponent(count, ACTIVITY_ENTROPY_SHARE);
            let share = zipf_entropy(count, s) / (count as f64).log2();
            assert!((share - ACTIVITY_ENTROPY_SHARE).abs() < 1e-6, "{count}: {share}");
        }
    }

    #[test]
    fn allocation_is_exact_and_respects_the_minimum() {
        let counts = allocate(&[0.7, 0.2, 0.1, 0.0], 1003, 1);
        assert_eq!(counts.iter().sum::<usize>(), 1003);
        assert!(counts.iter().all(|&c| c >= 1));
        assert!(counts[0] > counts[1] && counts[1] > counts[2]);
        assert_eq!(allocate(&[0.5, 0.5], 1, 1).iter().sum::<usize>(), 1, "too few rows for the minimum");
        let channels = channels_by_activity(&[0.5, 0.25, 0.125, 0.125], 4);
        assert_eq!(channels, [0, 2, 3, 3]);
    }
}
