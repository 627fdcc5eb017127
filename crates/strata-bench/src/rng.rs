//! A tiny seeded PRNG (splitmix64), so benchmark data is the same on every machine.

/// The splitmix64 generator: 64 bits of state, one add and a mix per draw.
///
/// Not cryptographic; chosen because it is a few lines, has no dependencies and
/// gives the same sequence for the same seed everywhere, which keeps benchmark data
/// (and so the figures) comparable across runs and machines.
///
/// ```
/// use strata_bench::rng::SplitMix64;
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!((0.0..1.0).contains(&a.next_f64()));
/// ```
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in `[0, 1)`, from the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform float in `(0, 1]`: safe to take the logarithm of.
    pub fn next_open_f64(&mut self) -> f64 {
        1.0 - self.next_f64()
    }

    /// A uniform integer in `0..n`. `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no values to draw from");
        // Multiply-shift: bias is at most n / 2^64, negligible for benchmark data.
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// An exponentially distributed float with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -self.next_open_f64().ln() * mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_splitmix64_sequence() {
        // First outputs for seed 0 from the reference C implementation.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn ranges_hold() {
        let mut rng = SplitMix64::new(42);
        for _ in 0..10_000 {
            assert!(rng.below(5) < 5);
            let open = rng.next_open_f64();
            assert!(open > 0.0 && open <= 1.0);
            assert!(rng.exponential(3.0) >= 0.0);
        }
        assert_eq!(SplitMix64::new(1).below(1), 0);
    }
}
