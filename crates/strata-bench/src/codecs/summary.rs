//! The per-column summary: the best spec, the zstd:1 baseline, whether the best pco
//! or filter chain beats that baseline on ratio and on compress speed, and the best
//! chain that compresses at least as fast as the baseline.

use strata_codec::{Algorithm, CompressionSpec};

use super::{Measurement, SUMMARY_TABLE};
use crate::report::{Cell, Column, Table};

/// Whether `spec` is the zstd:1 baseline (no filters; any block size).
fn is_baseline(spec: &CompressionSpec) -> bool {
    spec.filters.is_empty() && spec.algorithm == Algorithm::Zstd && spec.level == 1
}

/// Whether `spec` is one of Strata's additions over kdb+: pcodec or a filter chain.
fn is_chain(spec: &CompressionSpec) -> bool {
    spec.algorithm == Algorithm::Pco || !spec.filters.is_empty()
}

/// The measurement with the highest ratio, ties going to the faster compressor.
fn best<'m>(candidates: impl Iterator<Item = &'m Measurement>) -> Option<&'m Measurement> {
    candidates.max_by(|a, b| {
        a.figures.ratio.total_cmp(&b.figures.ratio).then(a.figures.compress_mbps.total_cmp(&b.figures.compress_mbps))
    })
}

/// One row per column, in the order columns were measured, using the measurements
/// made with `threads` threads (the single-threaded ones, normally).
pub(super) fn table(measurements: &[Measurement], threads: usize) -> Table {
    let mut table = Table::new(
        SUMMARY_TABLE,
        vec![
            Column::text("column"),
            Column::text("best_spec"),
            Column::number("best_ratio", 2),
            Column::number("zstd1_ratio", 2),
            Column::number("zstd1_compress_MBps", 1),
            Column::text("chain_spec"),
            Column::number("chain_ratio", 2),
            Column::number("chain_compress_MBps", 1),
            Column::number("chain_ratio_vs_zstd1", 2).higher_is_better(),
            Column::text("chain_beats_zstd1_ratio"),
            Column::text("chain_compress_ge_zstd1"),
            Column::text("fast_chain_spec"),
            Column::number("fast_chain_ratio", 2),
        ],
    );
    let mut columns: Vec<&str> = Vec::new();
    for m in measurements {
        if !columns.contains(&m.column) {
            columns.push(m.column);
        }
    }
    for column in columns {
        let rows = || measurements.iter().filter(move |m| m.column == column && m.threads == threads);
        let overall = best(rows());
        let baseline = rows().find(|m| is_baseline(&m.spec));
        let chain = best(rows().filter(|m| is_chain(&m.spec)));
        // The best chain that gives up no compress speed against zstd:1.
        let fast_chain = baseline.and_then(|b| {
            best(rows().filter(|m| is_chain(&m.spec) && m.figures.compress_mbps >= b.figures.compress_mbps))
        });
        let vs = |f: fn(&Measurement, &Measurement) -> Cell| match (chain, baseline) {
            (Some(c), Some(b)) => f(c, b),
            _ => Cell::Empty,
        };
        table.push_row(vec![
            column.into(),
            overall.map(|m| m.spec.to_string()).into(),
            overall.map(|m| m.figures.ratio).into(),
            baseline.map(|m| m.figures.ratio).into(),
            baseline.map(|m| m.figures.compress_mbps).into(),
            chain.map(|m| m.spec.to_string()).into(),
            chain.map(|m| m.figures.ratio).into(),
            chain.map(|m| m.figures.compress_mbps).into(),
            vs(|c, b| (c.figures.ratio / b.figures.ratio).into()),
            vs(|c, b| (c.figures.ratio > b.figures.ratio).into()),
            vs(|c, b| (c.figures.compress_mbps >= b.figures.compress_mbps).into()),
            fast_chain.map(|m| m.spec.to_string()).into(),
            fast_chain.map(|m| m.figures.ratio).into(),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::measure::Figures;

    fn m(column: &'static str, spec: &str, threads: usize, ratio: f64, mbps: f64) -> Measurement {
        Measurement {
            column,
            spec: spec.parse().unwrap(),
            threads,
            figures: Figures { ratio, compress_mbps: mbps, decompress_mbps: mbps },
        }
    }

    #[test]
    fn picks_best_overall_baseline_and_best_chain() {
        let ms = [
            m("time", "zstd:1", 1, 3.0, 500.0),
            m("time", "zstd:19", 1, 3.1, 5.0),
            m("time", "pco:8", 1, 4.0, 400.0),
            m("time", "delta+zstd:1", 1, 3.7, 600.0),
            m("time", "pco:8", 2, 4.0, 800.0),
            m("cond", "zstd:1", 1, 9.0, 900.0),
        ];
        let t = table(&ms, 1);
        assert_eq!(t.rows.len(), 2);
        let time = &t.rows[0];
        assert_eq!(time[1], Cell::from("pco:8"));
        assert_eq!(time[3], Cell::Number(3.0));
        assert_eq!(time[5], Cell::from("pco:8"));
        assert_eq!(time[7], Cell::Number(400.0), "one-thread figure, not two");
        assert_eq!(time[8], Cell::Number(4.0 / 3.0));
        assert_eq!(time[9], Cell::from(true));
        assert_eq!(time[10], Cell::from(false));
        assert_eq!(time[11], Cell::from("delta+zstd:1"), "pco:8 is slower");
        assert_eq!(time[12], Cell::Number(3.7));
        let cond = &t.rows[1];
        assert_eq!(cond[5], Cell::Empty);
        assert_eq!(cond[9], Cell::Empty);
    }

    #[test]
    fn without_a_baseline_the_comparison_is_blank() {
        let t = table(&[m("size", "pco:8", 1, 11.0, 300.0)], 1);
        assert_eq!(t.rows[0][3], Cell::Empty);
        assert_eq!(t.rows[0][10], Cell::Empty);
        assert_eq!(t.rows[0][6], Cell::Number(11.0));
        assert_eq!(t.rows[0][11], Cell::Empty);
    }
}
