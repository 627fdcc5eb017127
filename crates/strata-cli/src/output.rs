//! Terminal tables for storage statistics.

use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
use strata_store::ColumnStats;

/// Bytes as a short human figure (KiB, MiB, GiB).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// A terminal table with one row per column: type, rows, raw and stored bytes,
/// ratio and spec (kdb+'s `-21!` per column), plus a total row.
pub fn stats_table(stats: &[ColumnStats]) -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(["column", "type", "attr", "rows", "raw", "stored", "ratio", "spec"]);
    let (mut raw, mut stored) = (0u64, 0u64);
    for s in stats {
        raw += s.raw_bytes;
        stored += s.stored_bytes;
        table.add_row(vec![
            Cell::new(&s.name),
            Cell::new(s.ty),
            Cell::new(s.attribute),
            Cell::new(s.rows).set_alignment(CellAlignment::Right),
            Cell::new(human_bytes(s.raw_bytes)).set_alignment(CellAlignment::Right),
            Cell::new(human_bytes(s.stored_bytes)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.2}", s.ratio())).set_alignment(CellAlignment::Right),
            Cell::new(&s.spec),
        ]);
    }
    if stats.len() > 1 {
        let ratio = if stored == 0 { 0.0 } else { raw as f64 / stored as f64 };
        table.add_row(vec![
            Cell::new("total"),
            Cell::new(""),
            Cell::new(""),
            Cell::new(""),
            Cell::new(human_bytes(raw)).set_alignment(CellAlignment::Right),
            Cell::new(human_bytes(stored)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{ratio:.2}")).set_alignment(CellAlignment::Right),
            Cell::new(""),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_picks_units() {
        assert_eq!(human_bytes(5), "5 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
