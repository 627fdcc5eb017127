//! The processes a chaos run supervises: a tickerplant, an RDB and an HDB, each a
//! real `strata` process on loopback, started, probed, killed with SIGKILL and
//! restarted with the same arguments, its output appended to a log file of its own.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use strata_ipc::{Connection, K};

use super::ChaosError;

/// The schema every chaos run uses: one table whose `size` column carries a unique
/// row id, so the audit can find every row exactly once.
pub(crate) const SCHEMA: &str = "trade time:timespan sym:symbol price:float size:long\n";

/// How long a probe waits to connect, and then for its answer.
const PROBE_CONNECT: Duration = Duration::from_millis(300);
const PROBE_ANSWER: Duration = Duration::from_secs(2);

/// One of the supervised processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `strata tp`.
    Tickerplant,
    /// `strata rdb`.
    Rdb,
    /// `strata hdb`.
    Hdb,
}

impl Role {
    /// Every role, in start order (an RDB needs its tickerplant).
    pub const ALL: [Role; 3] = [Role::Hdb, Role::Tickerplant, Role::Rdb];

    /// The `strata` subcommand, also the role's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Role::Tickerplant => "tp",
            Role::Rdb => "rdb",
            Role::Hdb => "hdb",
        }
    }

    fn index(self) -> usize {
        match self {
            Role::Tickerplant => 0,
            Role::Rdb => 1,
            Role::Hdb => 2,
        }
    }

    /// A cheap request every healthy process of this role answers.
    fn probe(self) -> &'static str {
        match self {
            Role::Tickerplant => ".u.i",
            Role::Rdb | Role::Hdb => "tables[]",
        }
    }
}

/// The tickerplant's steps inside `.u.end[]` slowed (see `strata_store::fault`), so
/// a kill at a random moment of the call lands before, between or after them.
pub(crate) const TP_END_OF_DAY_FAULTS: &str =
    "tp.eod.flushed=sleep:30;tp.eod.journal-synced=sleep:30;tp.eod.next-journal-created=sleep:30";

/// The three processes, their ports and their files under one directory.
pub(crate) struct Cluster {
    strata: PathBuf,
    dir: PathBuf,
    fsync: String,
    ports: [u16; 3],
    children: [Option<Child>; 3],
}

impl Cluster {
    /// Lays out `dir` (schema file, journal directory, database, logs) and picks
    /// free loopback ports; starts nothing.
    pub(crate) fn new(strata: &Path, dir: &Path, fsync: &str) -> Result<Cluster, ChaosError> {
        for sub in ["journal", "hdb", "logs"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| ChaosError::io(dir.join(sub), e))?;
        }
        let schema = dir.join("schema.txt");
        std::fs::write(&schema, SCHEMA).map_err(|e| ChaosError::io(&schema, e))?;
        let ports = [free_port()?, free_port()?, free_port()?];
        Ok(Cluster { strata: strata.into(), dir: dir.into(), fsync: fsync.into(), ports, children: [None, None, None] })
    }

    /// The database end of day writes into.
    pub(crate) fn db(&self) -> PathBuf {
        self.dir.join("hdb")
    }

    /// Where a process of `role` listens.
    pub(crate) fn addr(&self, role: Role) -> String {
        format!("127.0.0.1:{}", self.ports[role.index()])
    }

    /// The log file of `role`.
    pub(crate) fn log(&self, role: Role) -> PathBuf {
        self.dir.join("logs").join(format!("{}.log", role.name()))
    }

    fn args(&self, role: Role) -> Vec<String> {
        let port = self.ports[role.index()].to_string();
        let db = self.db().display().to_string();
        let mut args: Vec<String> = vec![role.name().into()];
        match role {
            Role::Tickerplant => {
                let schema = self.dir.join("schema.txt").display().to_string();
                let journal = self.dir.join("journal").display().to_string();
                args.extend(["--schema".into(), schema, "--journal-dir".into(), journal]);
                args.extend(["--fsync".into(), self.fsync.clone()]);
            }
            Role::Rdb => {
                args.extend(["--tp".into(), self.addr(Role::Tickerplant), "--db".into(), db]);
                args.extend(["--hdb".into(), self.addr(Role::Hdb)]);
            }
            Role::Hdb => args.extend(["--db".into(), db]),
        }
        args.extend(["--port".into(), port, "--bind".into(), "127.0.0.1".into()]);
        args
    }

    /// Starts the process of `role` (its output appended to its log).
    pub(crate) fn spawn(&mut self, role: Role) -> Result<(), ChaosError> {
        let path = self.log(role);
        let log = OpenOptions::new().create(true).append(true).open(&path).map_err(|e| ChaosError::io(&path, e))?;
        let err: File = log.try_clone().map_err(|e| ChaosError::io(&path, e))?;
        let mut command = Command::new(&self.strata);
        if role == Role::Tickerplant {
            command.env(strata_store::fault::FAULTS_VARIABLE, TP_END_OF_DAY_FAULTS);
        }
        let child = command
            .args(self.args(role))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| ChaosError::io(&self.strata, e))?;
        self.children[role.index()] = Some(child);
        Ok(())
    }

    /// Whether a process of `role` was started and has not been seen to end.
    pub(crate) fn started(&self, role: Role) -> bool {
        self.children[role.index()].is_some()
    }

    /// Kills the process of `role` with SIGKILL and reaps it; `false` when none runs.
    pub(crate) fn kill(&mut self, role: Role) -> bool {
        match self.children[role.index()].take() {
            Some(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
                true
            }
            None => false,
        }
    }

    /// The exit status of the process of `role` if it ended on its own since last
    /// asked (it is then forgotten, so the next call says `None`).
    pub(crate) fn reap(&mut self, role: Role) -> Option<ExitStatus> {
        let slot = &mut self.children[role.index()];
        let status = slot.as_mut()?.try_wait().ok().flatten()?;
        *slot = None;
        Some(status)
    }

    /// Whether the process of `role` answers its probe request.
    pub(crate) fn answers(&self, role: Role) -> bool {
        self.connect(role)
            .is_ok_and(|mut c| matches!(c.sync(&K::string(role.probe())), Ok(answer) if !matches!(answer, K::Error(_))))
    }

    /// A client connection to `role` whose reads give up after [`PROBE_ANSWER`].
    pub(crate) fn connect(&self, role: Role) -> Result<Connection, ChaosError> {
        let addr = self.addr(role);
        let conn = Connection::connect_timeout(&addr, "", PROBE_CONNECT).map_err(|e| ChaosError::ipc(role, e))?;
        conn.socket().set_read_timeout(Some(PROBE_ANSWER)).map_err(|e| ChaosError::io(&addr, e))?;
        Ok(conn)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for role in Role::ALL {
            self.kill(role);
        }
    }
}

fn free_port() -> Result<u16, ChaosError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| ChaosError::io("127.0.0.1:0", e))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| ChaosError::io("127.0.0.1:0", e))
}
