//! The generator's random source: xoshiro256++ with the few distributions TAQ data
//! needs. Seeded explicitly, so a seed gives the same day on every machine.

/// xoshiro256++ (Blackman and Vigna): 256 bits of state, fast, and good enough
/// statistically for synthetic market data. Not cryptographic.
///
/// ```
/// use strata_taq::rng::Rng;
/// let (mut a, mut b) = (Rng::new(5), Rng::new(5));
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose sequence is fixed by `seed` (expanded with splitmix64, as the
    /// xoshiro authors recommend, so nearby seeds give unrelated streams).
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// An independent generator for one part of the data (a column, a symbol), so
    /// changing how one part is drawn leaves the others as they were.
    pub fn fork(seed: u64, stream: u64) -> Rng {
        Rng::new(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F).rotate_left(17))
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform float in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// An exponential variate with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -(1.0 - self.uniform()).ln() * mean
    }

    /// A standard normal variate (Box-Muller; one of the pair is dropped for simplicity).
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A value whose logarithm is uniform between `ln lo` and `ln hi`: as many values
    /// in 1..10 as in 10..100, the shape of latencies and gaps inside bursts.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.uniform() * (hi.ln() - lo.ln())).exp()
    }

    /// A geometric count >= 1 with the given mean (> 1).
    pub fn geometric(&mut self, mean: f64) -> u64 {
        let p = 1.0 / mean.max(1.0 + 1e-9);
        1 + ((1.0 - self.uniform()).ln() / (1.0 - p).ln()).floor() as u64
    }

    /// An index drawn from `cumulative` (ascending cumulative weights, last = total).
    pub fn pick(&mut self, cumulative: &[f64]) -> usize {
        let total = *cumulative.last().expect("at least one weight");
        let x = self.uniform() * total;
        cumulative.partition_point(|&c| c <= x).min(cumulative.len() - 1)
    }
}

/// Cumulative sums of `weights`, for [`Rng::pick`].
pub fn cumulative(weights: &[f64]) -> Vec<f64> {
    weights
        .iter()
        .scan(0.0, |sum, w| {
            *sum += w;
            Some(*sum)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range_and_means_are_close() {
        let mut rng = Rng::new(1);
        let n = 200_000;
        let mut exp_sum = 0.0;
        let mut geo_sum = 0;
        let mut normal_sq = 0.0;
        for _ in 0..n {
            assert!(rng.below(7) < 7);
            let l = rng.log_uniform(2.0, 50.0);
            assert!((2.0..=50.0).contains(&l));
            exp_sum += rng.exponential(3.0);
            geo_sum += rng.geometric(4.0);
            normal_sq += rng.normal().powi(2);
        }
        assert!((exp_sum / n as f64 - 3.0).abs() < 0.05);
        assert!((geo_sum as f64 / n as f64 - 4.0).abs() < 0.05);
        assert!((normal_sq / n as f64 - 1.0).abs() < 0.02);
    }

    #[test]
    fn pick_follows_the_weights() {
        let mut rng = Rng::new(2);
        let cum = cumulative(&[1.0, 0.0, 3.0]);
        let mut counts = [0usize; 3];
        for _ in 0..40_000 {
            counts[rng.pick(&cum)] += 1;
        }
        assert_eq!(counts[1], 0, "zero weight is never picked");
        assert!((counts[2] as f64 / counts[0] as f64 - 3.0).abs() < 0.2, "{counts:?}");
    }

    #[test]
    fn forks_are_independent_and_deterministic() {
        let a: Vec<u64> = (0..4).map(|_| Rng::fork(9, 1).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::fork(9, 1).next_u64(), Rng::fork(9, 2).next_u64());
    }
}
