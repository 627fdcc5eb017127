//! `strata bench chaos`: proof, on the user's own disk, that the tick plane keeps
//! every acknowledged tick. A tickerplant, an RDB and an HDB run as real `strata`
//! processes on loopback while a sync feed sends numbered rows; end of day is forced
//! on a timer; a random process is killed with SIGKILL at random moments (the RDB
//! also shortly after an end of day, while it writes the day) and restarted with the
//! same arguments; some end of days are interrupted by killing the tickerplant
//! inside `.u.end[]` (its steps slowed by fault points so the kill lands there). A
//! reader asks the HDB for every day's figures throughout ([`readers`]). At the end
//! every row id on disk and in the RDB is counted against what the tickerplant
//! answered: acknowledged rows must be there exactly once, refused ones not at all,
//! and no reader may have seen a mixed or failed answer.

mod audit;
mod cluster;
mod feed;
mod readers;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::report::{Cell, Column, Report, ScatterChart, Table};
use crate::rng::SplitMix64;

pub use audit::Audit;
use cluster::Cluster;
pub use cluster::Role;
use feed::{Answer, Feed, Ledger};
pub use readers::ReaderReport;
use readers::Readers;

/// How long the final phase waits for every process to answer again.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(180);
/// How often the supervisor looks at its processes.
const TICK: Duration = Duration::from_millis(50);
/// A process that died is restarted after a pause of up to this long (a kill)
/// or exactly this long (an exit of its own), so restarts also meet a peer that is down.
const RESTART_PAUSE: Duration = Duration::from_millis(1000);

/// Errors that stop a chaos run (a lost row is a result, not an error).
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// A file, directory, socket or process.
    #[error("{path}: {source}")]
    Io {
        /// What was being used.
        path: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A request to one of the processes.
    #[error("{role:?}: {source}")]
    Ipc {
        /// The process asked.
        role: Role,
        /// Why it failed.
        source: strata_ipc::IpcError,
    },
    /// An answer of an unexpected shape.
    #[error("{role:?} answered {what}")]
    Answer {
        /// The process asked.
        role: Role,
        /// What came back.
        what: String,
    },
    /// Reading the database.
    #[error(transparent)]
    Store(strata_store::StoreError),
    /// A process that did not come back.
    #[error("{role:?} did not answer within {seconds} s after the run; see {log}")]
    NotReady {
        /// The process.
        role: Role,
        /// How long it was given.
        seconds: u64,
        /// Its log file.
        log: String,
    },
}

impl ChaosError {
    fn io(path: impl AsRef<Path>, source: std::io::Error) -> ChaosError {
        ChaosError::Io { path: path.as_ref().display().to_string(), source }
    }

    fn ipc(role: Role, source: strata_ipc::IpcError) -> ChaosError {
        ChaosError::Ipc { role, source }
    }
}

/// What a chaos run does.
#[derive(Clone, Debug)]
pub struct ChaosOptions {
    /// The `strata` executable to run the processes with.
    pub strata: PathBuf,
    /// Directory for journals, the database and logs (made if missing).
    pub dir: PathBuf,
    /// How long the feed runs while processes are killed.
    pub duration: Duration,
    /// Seed of every random choice (which process, when).
    pub seed: u64,
    /// Pause between kills: uniform between these bounds.
    pub kill_every: (Duration, Duration),
    /// End of day (`.u.end[]`) is forced this often.
    pub end_of_day_every: Duration,
    /// Share of end of days after which the RDB is killed while it writes the day.
    pub kill_during_end_of_day: f64,
    /// Share of end of days during which the tickerplant is killed inside `.u.end[]`.
    pub kill_tickerplant_in_end_of_day: f64,
    /// Whether a reader asks the HDB for every day's figures throughout.
    pub readers: bool,
    /// Sync updates a second the feed sends.
    pub rate: f64,
    /// Rows per update.
    pub rows: usize,
    /// The tickerplant's `--fsync` policy.
    pub fsync: String,
    /// Draw a progress bar with an ETA on a terminal.
    pub progress: bool,
}

impl ChaosOptions {
    /// A run of `duration` with the defaults `strata bench chaos` has: a kill every
    /// 4-14 s (about 65 in 10 minutes), end of day every 20 s (half of them followed
    /// by an RDB kill), 1000 updates of 10 rows a second, fsync `none` (a killed
    /// process loses nothing the page cache holds).
    pub fn new(strata: PathBuf, dir: PathBuf, duration: Duration) -> ChaosOptions {
        ChaosOptions {
            strata,
            dir,
            duration,
            seed: 1,
            kill_every: (Duration::from_secs(4), Duration::from_secs(14)),
            end_of_day_every: Duration::from_secs(20),
            kill_during_end_of_day: 0.5,
            kill_tickerplant_in_end_of_day: 0.25,
            readers: true,
            rate: 1000.0,
            rows: 10,
            fsync: "none".into(),
            progress: false,
        }
    }
}

/// What happened to a process: a kill or an exit of its own, and how long until it
/// answered again.
#[derive(Clone, Debug, PartialEq)]
pub struct ChaosEvent {
    /// Seconds since the run started.
    pub at: f64,
    /// The process.
    pub role: Role,
    /// `kill`, `kill during end of day`, or `exit <status>`.
    pub what: String,
    /// Seconds until it answered again (`None`: killed again first, or never).
    pub recovered_after: Option<f64>,
}

/// A finished chaos run.
#[derive(Clone, Debug)]
pub struct ChaosOutcome {
    /// Seconds of feed under kills.
    pub seconds: f64,
    /// Updates sent, and what the tickerplant answered.
    pub updates: u64,
    /// Updates acknowledged.
    pub acknowledged: u64,
    /// Updates refused with an error.
    pub refused: u64,
    /// Updates without an answer.
    pub unanswered: u64,
    /// End of days forced.
    pub end_of_days: u64,
    /// Kills and exits, in order.
    pub events: Vec<ChaosEvent>,
    /// The count of stored rows against the ledger.
    pub audit: Audit,
    /// The first refusal texts.
    pub refusals: Vec<String>,
    /// What the HDB's reader saw (`None`: no reader ran).
    pub readers: Option<ReaderReport>,
}

impl ChaosOutcome {
    /// Whether nothing was lost, duplicated, stored wrongly, or read mixed or failed.
    pub fn clean(&self) -> bool {
        self.audit.clean() && self.readers.as_ref().is_none_or(|r| r.mixed == 0 && r.failed == 0)
    }
}

impl ChaosOutcome {
    /// Processes killed.
    pub fn kills(&self) -> usize {
        self.events.iter().filter(|e| e.what.starts_with("kill")).count()
    }

    /// Restarts after which the process answered again.
    pub fn recoveries(&self) -> usize {
        self.events.iter().filter(|e| e.recovered_after.is_some()).count()
    }
}

/// Per process: whether it is down and since when, and when to start it again.
#[derive(Default)]
struct Life {
    /// The event that took it down (an index into the events), while it is down.
    down: Option<(usize, Instant)>,
    restart_at: Option<Instant>,
}

/// Runs the chaos test (a progress bar with an ETA when `options.progress` and
/// stderr is a terminal).
pub fn run(options: &ChaosOptions) -> Result<ChaosOutcome, ChaosError> {
    let mut cluster = Cluster::new(&options.strata, &options.dir, &options.fsync)?;
    for role in Role::ALL {
        cluster.spawn(role)?;
        wait_until_answers(&mut cluster, role)?;
    }
    let feed = Feed::start(cluster.addr(Role::Tickerplant), options.rate, options.rows);
    let readers = options.readers.then(|| Readers::start(cluster.addr(Role::Hdb)));
    let mut supervisor = Supervisor::new(options);
    let bar = crate::progress::bar(options.progress, options.duration.as_secs());
    let started = Instant::now();
    while started.elapsed() < options.duration {
        supervisor.step(&mut cluster, started)?;
        bar.set_position(started.elapsed().as_secs());
        bar.set_message(format!("s; {} updates acknowledged, {} kills", feed.acknowledged(), supervisor.events.len()));
        std::thread::sleep(TICK);
    }
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    supervisor.settle(&mut cluster, started)?;
    let ledger = feed.finish();
    let readers = readers.map(Readers::finish);
    wait_for_rdb_to_catch_up(&cluster);
    let audit = audit::audit(&cluster, &ledger)?;
    Ok(outcome(seconds, supervisor, ledger, audit, readers))
}

fn outcome(
    seconds: f64,
    supervisor: Supervisor,
    ledger: Ledger,
    audit: Audit,
    readers: Option<ReaderReport>,
) -> ChaosOutcome {
    ChaosOutcome {
        seconds,
        updates: ledger.answers.len() as u64,
        acknowledged: ledger.count(Answer::Acknowledged),
        refused: ledger.count(Answer::Refused),
        unanswered: ledger.count(Answer::Unanswered),
        end_of_days: supervisor.end_of_days,
        events: supervisor.events,
        audit,
        refusals: ledger.refusals,
        readers,
    }
}

/// Kills, restarts and end of days on their timers.
struct Supervisor {
    rng: SplitMix64,
    kill_every: (Duration, Duration),
    end_of_day_every: Duration,
    kill_during_end_of_day: f64,
    kill_tickerplant_in_end_of_day: f64,
    lives: [(Role, Life); 3],
    next_kill: Instant,
    next_end_of_day: Instant,
    rdb_kill_at: Option<Instant>,
    end_of_days: u64,
    events: Vec<ChaosEvent>,
}

impl Supervisor {
    fn new(options: &ChaosOptions) -> Supervisor {
        let now = Instant::now();
        let mut supervisor = Supervisor {
            rng: SplitMix64::new(options.seed),
            kill_every: options.kill_every,
            end_of_day_every: options.end_of_day_every,
            kill_during_end_of_day: options.kill_during_end_of_day,
            kill_tickerplant_in_end_of_day: options.kill_tickerplant_in_end_of_day,
            lives: Role::ALL.map(|r| (r, Life::default())),
            next_kill: now,
            next_end_of_day: now + options.end_of_day_every,
            rdb_kill_at: None,
            end_of_days: 0,
            events: Vec::new(),
        };
        supervisor.next_kill = now + supervisor.pause_between_kills();
        supervisor
    }

    fn pause_between_kills(&mut self) -> Duration {
        let (lo, hi) = self.kill_every;
        lo + (hi.saturating_sub(lo)).mul_f64(self.rng.next_f64())
    }

    fn life(&mut self, role: Role) -> &mut Life {
        &mut self.lives.iter_mut().find(|(r, _)| *r == role).expect("every role has a life").1
    }

    /// One look at every process: exits noticed, restarts due, recoveries seen,
    /// then the end of day and kill timers.
    fn step(&mut self, cluster: &mut Cluster, started: Instant) -> Result<(), ChaosError> {
        self.look_after(cluster, started)?;
        let now = Instant::now();
        if now >= self.next_end_of_day {
            self.next_end_of_day = now + self.end_of_day_every;
            if self.rng.chance(self.kill_tickerplant_in_end_of_day) {
                self.kill_inside_end_of_day(cluster, started);
            } else if self.force_end_of_day(cluster) && self.rng.chance(self.kill_during_end_of_day) {
                let delay = Duration::from_millis(50) + Duration::from_millis(1450).mul_f64(self.rng.next_f64());
                self.rdb_kill_at = Some(now + delay);
            }
        }
        if self.rdb_kill_at.is_some_and(|at| now >= at) {
            self.rdb_kill_at = None;
            self.kill(cluster, Role::Rdb, "kill during end of day", started);
        }
        if now >= self.next_kill {
            self.next_kill = now + self.pause_between_kills();
            // The HDB is killed less often: it holds nothing of its own.
            let role = match self.rng.below(5) {
                0 | 1 => Role::Tickerplant,
                2 | 3 => Role::Rdb,
                _ => Role::Hdb,
            };
            self.kill(cluster, role, "kill", started);
        }
        Ok(())
    }

    /// Notices exits, restarts what is due, and records recoveries.
    fn look_after(&mut self, cluster: &mut Cluster, started: Instant) -> Result<(), ChaosError> {
        let now = Instant::now();
        for role in Role::ALL {
            if let Some(status) = cluster.reap(role) {
                let what = status.code().map_or_else(|| "exit by a signal".to_string(), |c| format!("exit {c}"));
                self.went_down(role, what, started);
                self.life(role).restart_at = Some(now + RESTART_PAUSE);
            }
            let life = self.life(role);
            if life.restart_at.is_some_and(|at| now >= at) && !cluster.started(role) {
                life.restart_at = None;
                cluster.spawn(role)?;
            }
            if let Some((event, since)) = self.life(role).down
                && cluster.started(role)
                && cluster.answers(role)
            {
                self.events[event].recovered_after = Some(since.elapsed().as_secs_f64());
                self.life(role).down = None;
            }
        }
        Ok(())
    }

    fn went_down(&mut self, role: Role, what: String, started: Instant) {
        self.events.push(ChaosEvent { at: started.elapsed().as_secs_f64(), role, what, recovered_after: None });
        let event = self.events.len() - 1;
        self.life(role).down = Some((event, Instant::now()));
    }

    fn kill(&mut self, cluster: &mut Cluster, role: Role, what: &str, started: Instant) {
        if !cluster.kill(role) {
            return;
        }
        self.went_down(role, what.into(), started);
        let pause = RESTART_PAUSE.mul_f64(self.rng.next_f64());
        self.life(role).restart_at = Some(Instant::now() + pause);
    }

    /// Forces `.u.end[]` from another thread and kills the tickerplant while it runs
    /// it: its steps sleep at fault points ([`cluster::TP_END_OF_DAY_FAULTS`]), so a
    /// kill 0-120 ms into the call lands before, between or after them.
    fn kill_inside_end_of_day(&mut self, cluster: &mut Cluster, started: Instant) {
        let addr = cluster.addr(Role::Tickerplant);
        std::thread::spawn(move || {
            let mut tp = strata_ipc::Connection::connect_timeout(&addr, "", Duration::from_secs(2))?;
            tp.sync(&strata_ipc::K::string(".u.end[]"))
        });
        std::thread::sleep(Duration::from_millis(120).mul_f64(self.rng.next_f64()));
        self.kill(cluster, Role::Tickerplant, "kill inside end of day", started);
    }

    /// Sends `.u.end[]` to the tickerplant; whether it was answered without error.
    fn force_end_of_day(&mut self, cluster: &Cluster) -> bool {
        let ended = cluster
            .connect(Role::Tickerplant)
            .is_ok_and(|mut tp| matches!(tp.sync(&strata_ipc::K::string(".u.end[]")), Ok(a) if !matches!(a, strata_ipc::K::Error(_))));
        self.end_of_days += u64::from(ended);
        ended
    }

    /// After the run: restarts whatever is down and waits until every process answers.
    fn settle(&mut self, cluster: &mut Cluster, started: Instant) -> Result<(), ChaosError> {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            self.look_after(cluster, started)?;
            let down: Vec<Role> = Role::ALL.into_iter().filter(|&r| self.life(r).down.is_some()).collect();
            let Some(&role) = down.first() else { return Ok(()) };
            if Instant::now() >= deadline {
                let log = cluster.log(role).display().to_string();
                return Err(ChaosError::NotReady { role, seconds: SETTLE_TIMEOUT.as_secs(), log });
            }
            std::thread::sleep(TICK);
        }
    }
}

/// Starts-up wait for `role`, before the run: a process that does not come up is an error.
fn wait_until_answers(cluster: &mut Cluster, role: Role) -> Result<(), ChaosError> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while !cluster.answers(role) {
        if Instant::now() >= deadline || cluster.reap(role).is_some() {
            let log = cluster.log(role).display().to_string();
            return Err(ChaosError::NotReady { role, seconds: SETTLE_TIMEOUT.as_secs(), log });
        }
        std::thread::sleep(TICK);
    }
    Ok(())
}

/// Waits until the RDB's row count holds still for half a second (what the
/// tickerplant published last is still on its way), at most 30 s.
fn wait_for_rdb_to_catch_up(cluster: &Cluster) {
    let count = || audit::trade_rows(&mut cluster.connect(Role::Rdb).ok()?);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = count();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        let now = count();
        if now.is_some() && now == last {
            return;
        }
        last = now;
    }
}

/// The run as a report: the verdict, the kills per process, and every event.
pub fn report(options: &ChaosOptions, outcome: &ChaosOutcome) -> Report {
    let mut report = Report::new("strata bench chaos: kill -9 under a sync feed");
    report.push_note(format!(
        "{:.0} s of feed at {} updates/s x {} rows (tickerplant fsync {}), a kill every {:.0}-{:.0} s, end of day every {:.0} s \
         ({:.0}% followed by an RDB kill while it writes), seed {}; files in {}",
        outcome.seconds,
        options.rate,
        options.rows,
        options.fsync,
        options.kill_every.0.as_secs_f64(),
        options.kill_every.1.as_secs_f64(),
        options.end_of_day_every.as_secs_f64(),
        options.kill_during_end_of_day * 100.0,
        options.seed,
        options.dir.display()
    ));
    let a = &outcome.audit;
    let (mixed, failed) = outcome.readers.as_ref().map_or((0, 0), |r| (r.mixed, r.failed));
    let verdict = if outcome.clean() {
        "PASS: nothing acknowledged lost, nothing duplicated, no mixed or failed answer".to_string()
    } else {
        format!(
            "FAIL: {} acknowledged rows lost, {} duplicated, {} refused rows stored, {} never sent, {} unreadable \
             partitions, {mixed} mixed and {failed} failed answers",
            a.lost,
            a.duplicated,
            a.refused_stored,
            a.phantom,
            a.unreadable.len()
        )
    };
    // A failure is what the run is for: shown as a warning, not a paragraph.
    if outcome.clean() {
        report.push_note(verdict);
    } else {
        report.push_warning(verdict);
    }
    for refusal in &outcome.refusals {
        report.push_note(format!("a refusal: {refusal}"));
    }
    for bad in &a.unreadable {
        report.push_note(format!("unreadable partition: {bad}"));
    }
    for sample in outcome.readers.iter().flat_map(|r| &r.samples) {
        report.push_note(format!("a reader's answer: {sample}"));
    }
    report.push_table(summary(outcome));
    report.push_table(per_process(outcome));
    let events = events(outcome);
    let chart = ScatterChart::from_table(
        "seconds until a killed process answered again",
        &events,
        EVENT_AT,
        EVENT_RECOVERED,
        EVENT_PROCESS,
    )
    .expect("the events table has these columns");
    report.push_chart(chart.with_series(str::to_string).without_labels());
    report.push_table(events);
    report
}

/// The events table's columns the chart reads (a chart naming a column the
/// table does not have is an error, so they are named once).
const EVENT_AT: &str = "seconds into the run";
const EVENT_PROCESS: &str = "process";
const EVENT_RECOVERED: &str = "seconds until it answered again";

fn summary(outcome: &ChaosOutcome) -> Table {
    let a = &outcome.audit;
    let mut table = Table::new("chaos: outcome", vec![Column::text("figure"), Column::number("value", 0)]);
    let hdb = a.hdb_serves.map_or(Cell::from("no answer"), |n| Cell::from(n as f64));
    let rows: Vec<(&str, Cell)> = vec![
        ("updates sent", (outcome.updates as f64).into()),
        ("updates acknowledged", (outcome.acknowledged as f64).into()),
        ("updates refused", (outcome.refused as f64).into()),
        ("updates unanswered", (outcome.unanswered as f64).into()),
        ("rows acknowledged", (a.acknowledged_rows as f64).into()),
        ("acknowledged rows lost", (a.lost as f64).into()),
        ("rows duplicated", (a.duplicated as f64).into()),
        ("refused rows stored", (a.refused_stored as f64).into()),
        ("unanswered rows stored (once)", (a.unanswered_stored as f64).into()),
        ("rows never sent", (a.phantom as f64).into()),
        ("rows on disk", (a.on_disk as f64).into()),
        ("partitions on disk", (a.partitions as f64).into()),
        ("rows the HDB serves", hdb),
        ("rows in the RDB", (a.in_rdb as f64).into()),
        ("end of days forced", (outcome.end_of_days as f64).into()),
        ("reader answers", outcome.readers.as_ref().map_or(Cell::from("no reader"), |r| (r.answers as f64).into())),
        ("mixed answers", outcome.readers.as_ref().map_or(Cell::from("no reader"), |r| (r.mixed as f64).into())),
        ("failed answers", outcome.readers.as_ref().map_or(Cell::from("no reader"), |r| (r.failed as f64).into())),
        ("processes killed", outcome.kills().into()),
        ("recoveries (answered again)", outcome.recoveries().into()),
    ];
    for (figure, value) in rows {
        table.push_row(vec![figure.into(), value]);
    }
    table
}

fn per_process(outcome: &ChaosOutcome) -> Table {
    let mut table = Table::new(
        "chaos: per process",
        vec![
            Column::text("process"),
            Column::number("kills", 0),
            Column::number("during or inside end of day", 0),
            Column::number("exits of its own", 0),
            Column::number("recovered", 0),
            Column::number("recovery p50 s", 2),
            Column::number("recovery max s", 2),
        ],
    );
    for role in Role::ALL {
        let mine: Vec<&ChaosEvent> = outcome.events.iter().filter(|e| e.role == role).collect();
        let mut times: Vec<f64> = mine.iter().filter_map(|e| e.recovered_after).collect();
        times.sort_by(f64::total_cmp);
        let p50 = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
        let max = times.last().copied().unwrap_or(f64::NAN);
        let count = |prefix: &str| mine.iter().filter(|e| e.what.starts_with(prefix)).count();
        table.push_row(vec![
            role.name().into(),
            count("kill").into(),
            (count("kill during") + count("kill inside")).into(),
            count("exit").into(),
            times.len().into(),
            p50.into(),
            max.into(),
        ]);
    }
    table
}

fn events(outcome: &ChaosOutcome) -> Table {
    let mut table = Table::new(
        "chaos: events",
        vec![
            Column::number(EVENT_AT, 1),
            Column::text(EVENT_PROCESS),
            Column::text("event"),
            Column::number(EVENT_RECOVERED, 2),
        ],
    );
    for e in &outcome.events {
        table.push_row(vec![
            e.at.into(),
            e.role.name().into(),
            e.what.clone().into(),
            e.recovered_after.unwrap_or(f64::NAN).into(),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(lost: u64) -> ChaosOutcome {
        let event = |at, role, recovered| ChaosEvent { at, role, what: "kill".into(), recovered_after: recovered };
        ChaosOutcome {
            seconds: 10.0,
            updates: 100,
            acknowledged: 100,
            refused: 0,
            unanswered: 0,
            end_of_days: 1,
            events: vec![
                event(2.0, Role::Rdb, Some(0.5)),
                event(5.0, Role::Hdb, Some(0.8)),
                event(8.0, Role::Rdb, None),
            ],
            audit: Audit { lost, hdb_serves: Some(0), ..Audit::default() },
            refusals: Vec::new(),
            readers: Some(ReaderReport::default()),
        }
    }

    #[test]
    fn the_report_charts_recoveries_by_process() {
        let options = ChaosOptions::new("strata".into(), "d".into(), Duration::from_secs(10));
        let report = report(&options, &outcome(0));
        let chart = report.charts().next().expect("the recovery chart");
        assert_eq!(chart.points.len(), 2, "the kill never answered again has no point");
        assert_eq!(chart.series(), ["rdb", "hdb"]);
        assert!(report.to_html().contains("PASS: nothing acknowledged lost"));
    }

    #[test]
    fn a_failed_run_is_a_warning() {
        let options = ChaosOptions::new("strata".into(), "d".into(), Duration::from_secs(10));
        let report = report(&options, &outcome(3));
        assert!(report.to_html().contains("<p class=\"warning\">\u{26a0} FAIL: 3 acknowledged rows lost"));
    }
}
