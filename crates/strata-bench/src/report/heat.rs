//! Heat-map shades for table cells: where a value sits between its metric's worst
//! and best (the hue, red to green) and how far apart worst and best are (the
//! strength: pale for a small spread, none within noise).
//!
//! A scale covers one metric over a whole table: each heat-map column over all its
//! rows, or every heat-map cell at once for a table of one metric
//! ([`Table::heat_one_scale`]). Scaling within small groups made a 0.07%
//! difference look as red against green as a tenfold one.

use std::collections::HashMap;

use super::{Heat, Table};

/// Relative spread below which a scale's values are taken as equal: worst and
/// best within 1% of each other is measurement noise, not a result, so no colour.
pub const NOISE: f64 = 0.01;
/// Best over worst at which colours reach full strength; smaller spreads are paler.
const FULL_SPREAD: f64 = 2.0;
/// Hue steps from red (0) to green ([`HUE_STEPS`]): finer than the eye needs.
pub const HUE_STEPS: u8 = 12;
/// Strength levels (1..=[`STRENGTHS`]); 0 is never produced (no colour instead).
pub const STRENGTHS: u8 = 4;

/// A cell's heat-map colour, quantised so a page needs one CSS rule per shade
/// used rather than one inline style per cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shade {
    /// 0 (worst, red) ..= [`HUE_STEPS`] (best, green).
    pub hue: u8,
    /// 1 (pale: worst and best differ by a few percent) ..= [`STRENGTHS`] (full:
    /// they differ by [`FULL_SPREAD`] times or more).
    pub strength: u8,
}

impl Shade {
    /// The CSS class naming this shade.
    pub fn class(self) -> String {
        format!("h{}s{}", self.hue, self.strength)
    }

    /// The CSS colour: the hue from red to green, more saturated and darker as the
    /// strength grows.
    pub fn css(self) -> String {
        let hue = 120 * u32::from(self.hue) / u32::from(HUE_STEPS);
        let strength = f64::from(self.strength) / f64::from(STRENGTHS);
        format!("hsl({hue},{:.0}%,{:.0}%)", 75.0 * strength, 93.0 - 11.0 * strength)
    }
}

/// Shades of the heat-map cells of `table`, keyed by (row, column). Cells that
/// are not finite numbers, and flagged cells, are neither shaded nor part of a
/// scale.
pub fn shades(table: &Table) -> HashMap<(usize, usize), Shade> {
    let heat_columns: Vec<usize> = (0..table.columns.len()).filter(|c| table.columns[*c].heat != Heat::Off).collect();
    let cells = |columns: &[usize]| -> Vec<((usize, usize), f64)> {
        let mut cells = Vec::new();
        for r in 0..table.rows.len() {
            for &c in columns {
                if let Some(v) = table.rows[r][c].as_number()
                    && v.is_finite()
                    && !table.flags.contains_key(&(r, c))
                {
                    cells.push(((r, c), v));
                }
            }
        }
        cells
    };
    let scales: Vec<Vec<((usize, usize), f64)>> = if table.heat_one_scale {
        vec![cells(&heat_columns)]
    } else {
        heat_columns.iter().map(|c| cells(std::slice::from_ref(c))).collect()
    };
    scales.iter().flat_map(|values| scale(values, |(_, c)| table.columns[c].heat)).collect()
}

/// Shades for `(key, value)` pairs on one scale between their extremes
/// (logarithmic when all are positive); none when fewer than two values or when
/// the extremes are within [`NOISE`] of each other.
fn scale<K: Copy>(values: &[(K, f64)], heat: impl Fn(K) -> Heat) -> Vec<(K, Shade)> {
    let lo = values.iter().map(|(_, v)| *v).fold(f64::INFINITY, f64::min);
    let hi = values.iter().map(|(_, v)| *v).fold(f64::NEG_INFINITY, f64::max);
    let magnitude = hi.abs().max(lo.abs());
    if values.len() < 2 || hi - lo <= NOISE * magnitude {
        return Vec::new();
    }
    let log = lo > 0.0;
    let scaled = |v: f64| if log { v.ln() } else { v };
    // How far apart best and worst are, 0..=1: the ratio on a log scale, the
    // spread relative to the largest magnitude on a linear one.
    let spread =
        if log { (hi / lo).ln() / FULL_SPREAD.ln() } else { (hi - lo) / magnitude / (1.0 - 1.0 / FULL_SPREAD) };
    let strength = (spread.min(1.0) * f64::from(STRENGTHS)).ceil().clamp(1.0, f64::from(STRENGTHS)) as u8;
    let (lo, hi) = (scaled(lo), scaled(hi));
    values
        .iter()
        .map(|&(key, v)| {
            let mut t = (scaled(v) - lo) / (hi - lo);
            if heat(key) == Heat::LowerIsBetter {
                t = 1.0 - t;
            }
            (key, Shade { hue: (t * f64::from(HUE_STEPS)).round() as u8, strength })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::codecs_by_column;
    use crate::report::{Caveat, Cell, Column};

    const BEST: u8 = HUE_STEPS;
    const FULL: u8 = STRENGTHS;

    fn codecs() -> Table {
        codecs_by_column("codecs")
    }

    #[test]
    fn heat_runs_from_red_worst_to_green_best_per_column_over_all_rows() {
        let s = shades(&codecs());
        assert_eq!(s[&(3, 2)], Shade { hue: BEST, strength: FULL }, "best ratio of the whole table");
        assert_eq!(s[&(0, 2)], Shade { hue: 0, strength: FULL }, "worst ratio");
        assert_eq!(s[&(1, 3)].hue, 0, "slowest is worst");
        assert_eq!((s[&(2, 3)].hue, s[&(3, 3)].hue), (BEST, BEST), "fastest, across the 'column' groups");
        assert!(!s.contains_key(&(0, 1)), "text is not coloured");
    }

    #[test]
    fn near_equal_values_in_different_groups_are_not_red_and_green() {
        // The case: 1113.4 red beside a green 1114.2 when each group of a
        // table had its own scale. Over the whole column the spread is 0.07%: noise.
        let mut t = Table::new("q", vec![Column::text("query"), Column::number("ms", 1).lower_is_better()]);
        for (query, ms) in [("a", 1113.4), ("a", 1113.9), ("b", 1114.2), ("b", 1113.6)] {
            t.push_row(vec![query.into(), ms.into()]);
        }
        assert!(shades(&t).is_empty());
        // A few percent apart: coloured, but only at the palest strength.
        t.push_row(vec!["c".into(), 1150.0.into()]);
        let s = shades(&t);
        assert!(s.values().all(|shade| shade.strength == 1), "{s:?}");
        assert_eq!(s[&(4, 1)].hue, 0);
    }

    #[test]
    fn a_table_of_one_metric_has_one_scale() {
        let mut t = Table::new(
            "m",
            vec![
                Column::text("column"),
                Column::number("gzip", 1).lower_is_better(),
                Column::number("zstd", 1).lower_is_better(),
            ],
        )
        .with_one_heat_scale();
        t.push_row(vec!["Time".into(), 40.0.into(), 30.0.into()]);
        t.push_row(vec!["Sym".into(), 1.0.into(), 1.0.into()]);
        let s = shades(&t);
        assert_eq!((s[&(1, 1)].hue, s[&(1, 2)].hue), (BEST, BEST), "1 is best of the whole matrix");
        assert_eq!(s[&(0, 1)].hue, 0, "40 is worst");
        assert!(s[&(0, 2)].hue > 0 && s[&(0, 2)].hue < 3, "30 is near the worst on a log scale");
        // Column by column instead, Sym's equal values would say nothing.
        t.heat_one_scale = false;
        let s = shades(&t);
        assert_eq!((s[&(0, 2)].hue, s[&(1, 2)].hue), (0, BEST));
    }

    #[test]
    fn flagged_empty_and_text_cells_are_left_out_of_the_scale() {
        let mut t = Table::new("t", vec![Column::number("x", 1).higher_is_better()]);
        for cell in [Cell::Empty, 1.0.into(), 2.0.into(), "n/a".into(), 1000.0.into()] {
            t.push_row(vec![cell]);
        }
        t.flag(4, 0, Caveat::SmallData("tiny".into()));
        let s = shades(&t);
        assert_eq!(s.len(), 2);
        assert_eq!(s[&(2, 0)].hue, BEST, "the flagged 1000 does not squash the scale");
    }

    #[test]
    fn linear_scales_for_signed_values() {
        let mut t = Table::new("t", vec![Column::number("x", 1).higher_is_better()]);
        for v in [-1.0, 0.0, 1.0] {
            t.push_row(vec![v.into()]);
        }
        let s = shades(&t);
        assert_eq!((s[&(0, 0)].hue, s[&(1, 0)].hue, s[&(2, 0)].hue), (0, HUE_STEPS / 2, BEST));
        assert_eq!(s[&(0, 0)].strength, FULL);
    }

    #[test]
    fn shades_name_a_class_and_a_colour() {
        let s = Shade { hue: BEST, strength: FULL };
        assert_eq!((s.class(), s.css()), ("h12s4".to_string(), "hsl(120,75%,82%)".to_string()));
        assert_eq!(Shade { hue: 0, strength: 1 }.css(), "hsl(0,19%,90%)");
    }
}
