//! Tier recommendations from `strata bench zip` results: for each column the best
//! spec for a hot, a mid and a cold storage tier, as table spec files that
//! `strata import --table-spec`, `strata gen taq --table-spec` and end-of-day writes
//! accept.
//!
//! - **hot**: uncompressed, for the fastest writes and queries on recent data.
//! - **mid**: the fastest whole-column read (cold and warm cache averaged) among
//!   specs that store at most [`MID_MAX_RELATIVE_SIZE`] of the raw bytes.
//! - **cold**: the smallest stored size among specs whose write takes at most the
//!   write budget times the uncompressed write.
//!
//! Near-ties (reads within 5%, sizes within 0.1% of the raw bytes) go to the spec
//! that is cheaper to write, so a constant column does not get zstd:22 for 3 bytes.
//!
//! The parted symbol column stays uncompressed in every tier, as kdb+ practice
//! advises (its index makes symbol lookups cheap only while the column is cheap to
//! read).

use std::collections::BTreeMap;

use strata_codec::CompressionSpec;
use strata_store::TableSpec;

use crate::zip::{BASELINE, ColumnResult, ZipResults};

/// A mid-tier spec must store at most this share of the raw bytes ("a real ratio").
pub const MID_MAX_RELATIVE_SIZE: f64 = 0.8;

/// Reads within this factor of the fastest count as ties (timer noise), which go to
/// the spec that is cheaper to write.
const READ_TIE: f64 = 1.05;

/// Sizes within this share of the raw bytes of the smallest count as ties (a few
/// bytes on a column that already vanishes), which go to the cheaper write.
const SIZE_TIE: f64 = 0.001;

/// One column's recommendation and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnChoice {
    /// The column.
    pub column: String,
    /// Mid tier spec.
    pub mid: CompressionSpec,
    /// Why the mid spec.
    pub mid_why: String,
    /// Cold tier spec.
    pub cold: CompressionSpec,
    /// Why the cold spec.
    pub cold_why: String,
}

/// The three tiers' table specs for one table.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    /// Everything uncompressed.
    pub hot: TableSpec,
    /// Fast reads with a real ratio.
    pub mid: TableSpec,
    /// Best ratio within the write budget.
    pub cold: TableSpec,
    /// Per column, with reasons.
    pub columns: Vec<ColumnChoice>,
}

/// Recommends specs for `table`'s columns from `results`; `parted` is the parted
/// symbol column, kept uncompressed; `cold_write_budget` bounds the cold tier's write
/// time as a multiple of the uncompressed write.
pub fn recommend(results: &ZipResults, table: &str, parted: Option<&str>, cold_write_budget: f64) -> Recommendation {
    let mut by_column: BTreeMap<&str, Vec<&ColumnResult>> = BTreeMap::new();
    let mut order = Vec::new();
    for r in results.columns.iter().filter(|r| r.table == table) {
        if !by_column.contains_key(r.column.as_str()) {
            order.push(r.column.as_str());
        }
        by_column.entry(&r.column).or_default().push(r);
    }
    let none = CompressionSpec::none();
    let mut columns = Vec::new();
    for column in order {
        let rows = &by_column[column];
        let Some(base) = rows.iter().find(|r| r.spec == BASELINE) else { continue };
        if parted == Some(column) {
            let why = "parted symbol column: kept uncompressed".to_string();
            columns.push(ColumnChoice {
                column: column.to_string(),
                mid: none.clone(),
                mid_why: why.clone(),
                cold: none.clone(),
                cold_why: why,
            });
            continue;
        }
        let size = |r: &ColumnResult| r.stored_bytes as f64 / r.raw_bytes.max(1) as f64;
        let read = |r: &ColumnResult| (r.read_cold + r.read_warm) / (base.read_cold + base.read_warm).max(1e-9);
        let write = |r: &ColumnResult| r.write / base.write.max(1e-9);
        let real: Vec<&&ColumnResult> =
            rows.iter().filter(|r| r.spec != BASELINE && size(r) <= MID_MAX_RELATIVE_SIZE).collect();
        let fastest = real.iter().map(|r| read(r)).fold(f64::INFINITY, f64::min);
        let mid =
            real.into_iter().filter(|r| read(r) <= fastest * READ_TIE).min_by(|a, b| write(a).total_cmp(&write(b)));
        let (mid, mid_why) = match mid {
            Some(r) => (
                r.stored_spec.clone(),
                format!("fastest read ({:.2}x uncompressed) at {:.1}% of raw", read(r), 100.0 * size(r)),
            ),
            None => (none.clone(), format!("no spec stores under {:.0}% of raw", 100.0 * MID_MAX_RELATIVE_SIZE)),
        };
        let affordable: Vec<&&ColumnResult> =
            rows.iter().filter(|r| r.spec != BASELINE && write(r) <= cold_write_budget).collect();
        let smallest = affordable.iter().map(|r| size(r)).fold(f64::INFINITY, f64::min);
        let cold = affordable
            .into_iter()
            .filter(|r| size(r) <= smallest + SIZE_TIE)
            .min_by(|a, b| write(a).total_cmp(&write(b)));
        let (cold, cold_why) = match cold {
            Some(r) if size(r) < 1.0 => (
                r.stored_spec.clone(),
                format!("smallest ({:.2}% of raw) writing in {:.1}x uncompressed", 100.0 * size(r), write(r)),
            ),
            _ => (none.clone(), format!("nothing smaller within {cold_write_budget}x the uncompressed write")),
        };
        columns.push(ColumnChoice { column: column.to_string(), mid, mid_why, cold, cold_why });
    }
    let spec_of = |pick: &dyn Fn(&ColumnChoice) -> CompressionSpec| TableSpec {
        default: Some(none.clone()),
        columns: columns.iter().map(|c| (c.column.clone(), pick(c))).collect(),
    };
    Recommendation {
        hot: TableSpec::uniform(none.clone()),
        mid: spec_of(&|c| c.mid.clone()),
        cold: spec_of(&|c| c.cold.clone()),
        columns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zip::ColdCache;

    fn result(spec: &str, stored: u64, write: f64, read: f64) -> ColumnResult {
        ColumnResult {
            table: "t".into(),
            column: "flag".into(),
            ty: strata_store::ColumnType::Char,
            spec: spec.into(),
            stored_spec: spec.parse().unwrap(),
            raw_bytes: 1_000_000,
            stored_bytes: stored,
            write,
            write_fsync: write,
            read_cold: read,
            read_warm: read,
            ranges_cold: read,
            ranges_warm: read,
        }
    }

    #[test]
    fn near_ties_go_to_the_cheaper_write_and_budgets_hold() {
        let results = ZipResults {
            columns: vec![
                result("none", 1_000_064, 1.0, 1.0),
                result("zstd:1", 900, 2.0, 1.02),
                result("zstd:22", 300, 15.0, 1.0),
                result("gzip:9", 200, 40.0, 3.0),
            ],
            queries: Vec::new(),
            autos: Vec::new(),
            statistics: Vec::new(),
            specs: vec!["none".into(), "zstd:1".into(), "zstd:22".into(), "gzip:9".into()],
            cold: ColdCache::Fadvise,
            elapsed: std::time::Duration::ZERO,
        };
        let rec = recommend(&results, "t", None, 20.0);
        let flag = &rec.columns[0];
        assert_eq!(flag.cold.to_string(), "zstd:1", "600 bytes of 1 MB is a tie; gzip:9 is over budget");
        assert_eq!(flag.mid.to_string(), "zstd:1", "reads within 5% tie");
        assert_eq!(rec.cold.columns["flag"].to_string(), "zstd:1");
        let rec = recommend(&results, "t", Some("flag"), 20.0);
        assert!(!rec.columns[0].cold.is_compressed(), "the parted column stays plain");
    }
}
