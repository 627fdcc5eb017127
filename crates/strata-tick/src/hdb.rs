//! The historical database server: answers queries over a partitioned database (SQL
//! through strata-query's engine, and q's built-in forms) and reloads it when an RDB
//! says end of day has written a new partition.
//!
//! A table read through the HDB gets kdb+'s virtual `date` column first, one value
//! per row from its partition; SQL sees the same `date` column (and prunes
//! partitions on it).
//!
//! Only complete partitions are served, and of each only the tables its completion
//! record lists (`strata_store::Database::partition`): a staging directory or a
//! partition an end of day was killed writing is never seen.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use strata_ipc::value::EPOCH_OFFSET_DAYS;
use strata_ipc::{Credentials, K, Table, Vector, arrow::table_from_store};
use strata_query::{Cancel, Engine};
use strata_store::{ColumnStats, Database, Date, PartitionStatus, TableLocation};

use crate::counters::{Counters, counters_dict};
use crate::error::TickError;
use crate::log;
use crate::query::Queries;
use crate::server::{Server, ServerConfig};
use crate::service;
use crate::sql::QueryLimits;

/// How an HDB runs.
#[derive(Clone, Debug)]
pub struct HdbConfig {
    /// The database root.
    pub db: PathBuf,
    /// Where to answer queries.
    pub listen: String,
    /// Users allowed to connect.
    pub credentials: Option<Credentials>,
    /// TLS on the port it serves (`None`: plain TCP only).
    pub tls: Option<strata_ipc::tls::ServerTls>,
    /// What one query may take: memory, time, and how many run at once.
    pub queries: QueryLimits,
}

/// What the HDB knows of its database.
pub struct HdbState {
    db: Database,
    /// Partition dates, listed once per (re)load; a partition's record is read when
    /// a query needs its day, so loading costs the same for one day or ten years.
    dates: Vec<Date>,
    tables: BTreeSet<String>,
    reloads: u64,
}

impl HdbState {
    /// Opens the database at `root` and lists its partitions and tables (see
    /// `Database::listing`).
    pub fn load(root: &std::path::Path) -> Result<HdbState, TickError> {
        let db = Database::open(root)?;
        let listing = db.listing()?;
        Ok(HdbState { db, dates: listing.dates, tables: listing.tables.into_iter().collect(), reloads: 0 })
    }

    /// Partitions loaded.
    pub fn partitions(&self) -> Vec<Date> {
        self.dates.clone()
    }

    /// Table names, sorted.
    pub fn table_names(&self) -> Vec<String> {
        self.tables.iter().cloned().collect()
    }

    /// The partitions that serve table `name` (complete ones only, as
    /// `Database::partition` rules). A damaged partition is an error: its day was
    /// published whole, and an answer without it would be silently short.
    fn holding(&self, name: &str) -> Result<Vec<Date>, String> {
        if !self.tables.contains(name) {
            return Err(format!("{name}: no such table; tables: {}", self.table_names().join(" ")));
        }
        let mut held = Vec::new();
        for &date in &self.dates {
            let Some(partition) = self.db.partition(date).map_err(|e| e.to_string())? else { continue };
            if let PartitionStatus::BadRecord(why) = &partition.status {
                return Err(format!("{}: partition {date} cannot be served: {why}", partition.dir.display()));
            }
            if partition.tables.iter().any(|t| t == name) {
                held.push(date);
            }
        }
        Ok(held)
    }
}

impl HdbState {
    /// Table `name` over every partition, with the virtual `date` column first.
    pub fn table(&self, name: &str) -> Result<Table, String> {
        let mut names: Vec<String> = vec!["date".into()];
        let mut columns: Vec<K> = vec![K::vector(Vector::Date(Vec::new()))];
        for date in self.holding(name)? {
            let location = TableLocation::Partition(date, name.into());
            let part = self.db.read_table(&location).map_err(|e| e.to_string())?;
            let part = table_from_store(&part);
            if names.len() == 1 {
                names.extend(part.names().iter().cloned());
                columns.extend(part.columns().iter().map(|c| match c {
                    K::Vector(v, _) => K::vector(Vector::with_capacity(v.code(), 0).expect("a vector type")),
                    _ => K::List(Vec::new()),
                }));
            }
            if part.names() != &names[1..] {
                return Err(format!(
                    "{name}: partition {date} has columns {} unlike earlier partitions",
                    part.names().join(" ")
                ));
            }
            if let K::Vector(Vector::Date(dates), _) = &mut columns[0] {
                dates.extend(std::iter::repeat_n(date.0 - EPOCH_OFFSET_DAYS, part.len()));
            }
            for (held, new) in columns[1..].iter_mut().zip(part.into_parts().1) {
                match (held, new) {
                    (K::Vector(held, _), K::Vector(new, _)) if held.code() == new.code() => {
                        held.extend_from(&new);
                    }
                    (K::List(held), K::List(new)) => held.extend(new),
                    _ => return Err(format!("{name}: partition {date} changes a column's type")),
                }
            }
        }
        Table::from_parts(names, columns, false)
    }

    /// Table `name`'s rows over every partition, from the column files' headers.
    pub fn count(&self, name: &str) -> Result<usize, String> {
        let stats = self.column_stats(name)?;
        Ok(stats.iter().map(|part| part.first().map_or(0, |s| s.rows as usize)).sum())
    }

    /// Table `name`'s uncompressed bytes over every partition, from the column
    /// files' headers: about what the whole table takes as a q table.
    pub fn raw_bytes(&self, name: &str) -> Result<u64, String> {
        Ok(self.column_stats(name)?.iter().flatten().map(|s| s.raw_bytes).sum())
    }

    /// Each partition's column statistics of table `name`.
    fn column_stats(&self, name: &str) -> Result<Vec<Vec<ColumnStats>>, String> {
        let stats = self.holding(name)?.into_iter().map(|date| {
            let table = self.db.open_table(&TableLocation::Partition(date, name.into())).map_err(|e| e.to_string())?;
            table.stats().map_err(|e| e.to_string())
        });
        stats.collect()
    }

    fn counters(&self) -> K {
        let gauges = [("partitions", self.dates.len() as u64), ("reloads", self.reloads)];
        counters_dict(&Counters::default(), &gauges, &[])
    }
}

/// The HDB's answers: q's built-in forms from [`HdbState`], SQL through an engine
/// over the same root; a reload refreshes both. Several query threads use it at
/// once; a reload waits for the statements running and holds new ones until it is
/// done, so none sees the engine half reloaded.
struct HdbQueries {
    state: Arc<RwLock<HdbState>>,
    engine: Engine,
    root: PathBuf,
    /// The query memory limit, which a whole table asked for by name (`trade`,
    /// `select from trade`) must fit in too.
    query_memory: Option<usize>,
    /// Held shared by each statement, exclusively by a reload.
    generation: RwLock<()>,
}

impl HdbQueries {
    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, HdbState>, String> {
        self.state.read().map_err(|_| "the HDB's tables are unavailable".to_string())
    }
}

impl Queries for HdbQueries {
    fn table_names(&self) -> Result<Vec<String>, String> {
        Ok(self.read()?.table_names())
    }

    fn table(&self, name: &str) -> Result<Table, String> {
        let state = self.read()?;
        if let Some(limit) = self.query_memory {
            let bytes = state.raw_bytes(name)?;
            if bytes > limit as u64 {
                return Err(format!(
                    "{name} holds {} MiB, more than the {} MiB a query may hold here: select what you need with SQL \
                     (\"SELECT ... FROM {name} WHERE date = ...\") or raise the query memory limit",
                    bytes >> 20,
                    limit >> 20
                ));
            }
        }
        state.table(name)
    }

    fn count(&self, name: &str) -> Result<usize, String> {
        self.read()?.count(name)
    }

    fn counters(&self) -> Result<K, String> {
        Ok(self.read()?.counters())
    }

    fn sql(&self, statement: &str, cancel: &Cancel) -> Result<K, String> {
        let _generation = self.generation.read().map_err(|_| "the HDB's tables are unavailable".to_string())?;
        crate::sql::run(&self.engine, statement, cancel)
    }

    fn reload(&self) -> Result<K, String> {
        let _exclusive = self.generation.write().map_err(|_| "the HDB's tables are unavailable".to_string())?;
        let mut fresh = HdbState::load(&self.root).map_err(|e| format!("reload failed: {e}"))?;
        self.engine.reload().map_err(|e| format!("reload failed: {e}"))?;
        let mut guard = self.state.write().map_err(|_| "HDB state poisoned".to_string())?;
        fresh.reloads = guard.reloads + 1;
        log::line(
            "hdb",
            &format!("reloaded: {} partitions, tables {}", fresh.dates.len(), fresh.table_names().join(" ")),
        );
        *guard = fresh;
        Ok(K::Identity)
    }
}

/// A running HDB.
pub struct HdbHandle {
    /// Where it answers queries.
    pub addr: SocketAddr,
    /// What it has loaded.
    pub state: Arc<RwLock<HdbState>>,
    thread: std::thread::JoinHandle<()>,
}

impl HdbHandle {
    /// Waits for the server to stop.
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// Loads the database and starts answering queries.
pub fn start(config: HdbConfig) -> Result<HdbHandle, TickError> {
    let state = HdbState::load(&config.db)?;
    log::line(
        "hdb",
        &format!("{}: {} partitions, tables {}", config.db.display(), state.dates.len(), state.table_names().join(" ")),
    );
    let state = Arc::new(RwLock::new(state));
    let server = Server::start(ServerConfig {
        role: "hdb",
        listen: config.listen.clone(),
        credentials: config.credentials.clone(),
        tls: config.tls.clone(),
        max_message: strata_ipc::DEFAULT_MAX_MESSAGE,
        outbox_limit: 1 << 30,
    })?;
    let addr = server.addr;
    let engine = Engine::open_with(&config.db, &crate::sql::engine_options(&config.queries))
        .map_err(|e| TickError::Other(format!("hdb: cannot open {} for SQL: {e}", config.db.display())))?;
    let queries = HdbQueries {
        state: state.clone(),
        engine,
        root: config.db.clone(),
        query_memory: config.queries.memory,
        generation: RwLock::new(()),
    };
    let thread = service::serve("hdb", server, Arc::new(queries), config.queries.threads)
        .map_err(|e| TickError::Other(e.to_string()))?;
    log::line("hdb", &format!("answering queries (SQL included) on {addr}"));
    Ok(HdbHandle { addr, state, thread })
}
