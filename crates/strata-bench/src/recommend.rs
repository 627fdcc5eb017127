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
//! The parted symbol column stays uncompressed in every tier, as kdb+ practice
//! advises (its index makes symbol lookups cheap only while the column is cheap to
//! read).

use std::collections::BTreeMap;

use strata_codec::CompressionSpec;
use strata_store::TableSpec;

use crate::zip::{BASELINE, ColumnResult, ZipResults};

/// A mid-tier spec must store at most this share of the raw bytes ("a real ratio").
pub const MID_MAX_RELATIVE_SIZE: f64 = 0.8;

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
        let mid = rows
            .iter()
            .filter(|r| r.spec != BASELINE && size(r) <= MID_MAX_RELATIVE_SIZE)
            .min_by(|a, b| read(a).total_cmp(&read(b)));
        let (mid, mid_why) = match mid {
            Some(r) => (
                r.stored_spec.clone(),
                format!("fastest read ({:.2}x uncompressed) at {:.1}% of raw", read(r), 100.0 * size(r)),
            ),
            None => (none.clone(), format!("no spec stores under {:.0}% of raw", 100.0 * MID_MAX_RELATIVE_SIZE)),
        };
        let cold = rows
            .iter()
            .filter(|r| r.spec != BASELINE && write(r) <= cold_write_budget)
            .min_by(|a, b| size(a).total_cmp(&size(b)).then(write(a).total_cmp(&write(b))));
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
