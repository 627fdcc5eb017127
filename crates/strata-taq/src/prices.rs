//! Prices on a tick grid: an efficient price that random-walks through the day, a
//! spread of whole ticks around it, and quotes that flicker when depth at the best
//! level comes and goes.

use crate::flags::Sticky;
use crate::rng::Rng;
use crate::universe::Instrument;

/// Share of quotes where the bid (or the offer) backs off the best level for a
/// moment. With the spread changes and the walk, about 46% of quotes move the bid, as
/// in the reference day.
const FLICKER: f64 = 0.02;

/// Share of quotes on which the efficient price moves; the others change only
/// sizes or venues (a large share of real quote updates).
const MOVE: f64 = 0.7;

/// One instrument's price process, in ticks.
pub struct PricePath {
    efficient: f64,
    step: f64,
    spread: Sticky<i64>,
    last_spread: Option<i64>,
}

impl PricePath {
    /// A path for `instrument` that will be sampled about `events` times in the day,
    /// scaled so the day's move matches the instrument's volatility.
    pub fn new(instrument: &Instrument, events: usize) -> PricePath {
        let ticks = instrument.open * instrument.ticks_per_dollar();
        PricePath {
            efficient: ticks,
            step: instrument.volatility * ticks / (MOVE * events.max(1) as f64).sqrt(),
            // Liquid names quote a penny wide; wider spreads are rarer and stick.
            spread: Sticky::with_change_rate(&[(1, 0.55), (2, 0.2), (3, 0.1), (4, 0.07), (5, 0.05), (8, 0.03)], 0.15),
            last_spread: None,
        }
    }

    /// Advances the walk by one event.
    pub fn advance(&mut self, rng: &mut Rng) {
        self.efficient = (self.efficient + self.step * rng.normal()).max(2.0);
    }

    /// The next (bid, ask) in ticks, bid >= 1 and ask > bid.
    pub fn quote(&mut self, rng: &mut Rng) -> (i64, i64) {
        if rng.chance(MOVE) {
            self.advance(rng);
        }
        let spread = self.spread.next(self.last_spread, rng);
        self.last_spread = Some(spread);
        let base = (self.efficient - spread as f64 / 2.0).round() as i64;
        let bid_back = if rng.chance(FLICKER) { rng.geometric(1.5) as i64 } else { 0 };
        let ask_back = if rng.chance(FLICKER) { rng.geometric(1.5) as i64 } else { 0 };
        let bid = (base - bid_back).max(1);
        (bid, (base + spread + ask_back).max(bid + 1))
    }
}

/// A price in ticks as dollars: the correctly rounded double of the decimal, so
/// `3007` cents is exactly the double nearest 30.07 (what a parser of "30.07" gives).
pub fn dollars(ticks: i64, ticks_per_dollar: f64) -> f64 {
    ticks as f64 / ticks_per_dollar
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::universe::instruments;

    #[test]
    fn quotes_stay_ordered_on_the_grid_and_near_the_open() {
        let instrument = &instruments(10, 1)[0];
        let mut path = PricePath::new(instrument, 10_000);
        let mut rng = Rng::new(3);
        let open = instrument.open * instrument.ticks_per_dollar();
        for _ in 0..10_000 {
            let (bid, ask) = path.quote(&mut rng);
            assert!(bid >= 1 && ask > bid);
            assert!(((bid as f64) - open).abs() < open * 0.5 + 20.0, "{bid} vs {open}");
        }
        assert_eq!(dollars(3007, 100.0), "30.07".parse::<f64>().unwrap());
    }
}
