//! The chaos run's verdict: every row id found in the database on disk and in the
//! RDB's memory, counted against the feed's ledger.

use strata_ipc::{K, Vector};
use strata_store::{Database, TableLocation};

use super::ChaosError;
use super::cluster::{Cluster, Role};
use super::feed::{Answer, Ledger};

/// What the audit found, in rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Audit {
    /// Rows of acknowledged updates.
    pub acknowledged_rows: u64,
    /// Rows of acknowledged updates found nowhere.
    pub lost: u64,
    /// Rows found more than once (each extra copy counts).
    pub duplicated: u64,
    /// Rows of refused updates that were stored anyway.
    pub refused_stored: u64,
    /// Rows of unanswered updates that were stored (allowed: once).
    pub unanswered_stored: u64,
    /// Rows whose id the feed never sent.
    pub phantom: u64,
    /// Rows in the database's partitions.
    pub on_disk: u64,
    /// Partitions the database lists.
    pub partitions: u64,
    /// Partitions whose `trade` could not be read, with the reason.
    pub unreadable: Vec<String>,
    /// Rows in the RDB's memory.
    pub in_rdb: u64,
    /// Rows the HDB process serves after a reload (`None`: it did not answer).
    pub hdb_serves: Option<u64>,
}

impl Audit {
    /// Whether nothing acknowledged was lost and nothing stored wrongly.
    pub fn clean(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.refused_stored == 0
            && self.phantom == 0
            && self.unreadable.is_empty()
            && self.hdb_serves == Some(self.on_disk)
    }
}

/// Counts every stored row id of `cluster`'s database and RDB against `ledger`.
pub(crate) fn audit(cluster: &Cluster, ledger: &Ledger) -> Result<Audit, ChaosError> {
    let ids = ledger.answers.len() * ledger.rows;
    let mut seen = vec![0u8; ids];
    let mut audit = Audit::default();
    let mut count = |id: i64, audit: &mut Audit| match usize::try_from(id).ok().filter(|&i| i < ids) {
        Some(i) => seen[i] = seen[i].saturating_add(1),
        None => audit.phantom += 1,
    };
    let db = Database::open(&cluster.db()).map_err(ChaosError::Store)?;
    let partitions = db.partitions().map_err(ChaosError::Store)?;
    audit.partitions = partitions.len() as u64;
    for date in partitions {
        match db.read_column(&TableLocation::Partition(date, "trade".into()), "size") {
            Ok(column) => {
                for &id in column.values::<i64>() {
                    count(id, &mut audit);
                    audit.on_disk += 1;
                }
            }
            Err(e) => audit.unreadable.push(format!("{date}: {e}")),
        }
    }
    for id in rdb_ids(cluster)? {
        count(id, &mut audit);
        audit.in_rdb += 1;
    }
    for (update, answer) in ledger.answers.iter().enumerate() {
        for copies in &seen[update * ledger.rows..(update + 1) * ledger.rows] {
            let copies = u64::from(*copies);
            audit.duplicated += copies.saturating_sub(1);
            match answer {
                Answer::Acknowledged => {
                    audit.acknowledged_rows += 1;
                    audit.lost += u64::from(copies == 0);
                }
                Answer::Refused => audit.refused_stored += copies.min(1),
                Answer::Unanswered => audit.unanswered_stored += copies.min(1),
            }
        }
    }
    audit.hdb_serves = hdb_rows(cluster);
    Ok(audit)
}

/// Every row id the RDB holds.
fn rdb_ids(cluster: &Cluster) -> Result<Vec<i64>, ChaosError> {
    let mut rdb = cluster.connect(Role::Rdb)?;
    let answer = rdb.sync(&K::string("SELECT size FROM trade")).map_err(|e| ChaosError::ipc(Role::Rdb, e))?;
    match answer {
        K::Table(table) => match table.column("size") {
            Some(K::Vector(Vector::Long(ids), _)) => Ok(ids.clone()),
            other => Err(ChaosError::Answer { role: Role::Rdb, what: format!("size column {other:?}") }),
        },
        other => Err(ChaosError::Answer { role: Role::Rdb, what: other.describe() }),
    }
}

/// The rows of `trade` the HDB serves once told to reload; `None` when it does not answer.
fn hdb_rows(cluster: &Cluster) -> Option<u64> {
    let mut hdb = cluster.connect(Role::Hdb).ok()?;
    hdb.sync(&K::string("\\l .")).ok()?;
    trade_rows(&mut hdb)
}

/// `count(*)` of `trade` over SQL on `conn`: 0 where no such table exists yet (an
/// HDB before its first partition), `None` when the process does not answer.
pub(crate) fn trade_rows(conn: &mut strata_ipc::Connection) -> Option<u64> {
    match conn.sync(&K::string("SELECT count(*) AS n FROM trade")).ok()? {
        K::Table(table) => match table.column("n") {
            Some(K::Vector(Vector::Long(n), _)) => n.first().map(|&n| n as u64),
            _ => None,
        },
        K::Error(e) if e.contains("not found") => Some(0),
        _ => None,
    }
}
