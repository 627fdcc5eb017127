//! `strata bench tick`: seed 001's tickerplant profiling method on Strata.
//!
//! Each scenario starts a real tickerplant (journaling to disk), one or more RDBs
//! subscribed over loopback TCP and the feed simulator, all in this process on
//! their own threads, runs the feed for a while and reads the per-hop medians the
//! processes record: tplog (journal write), tppub (publish), rdbrecv (publish to RDB
//! receipt), rdbupd (RDB insert), plus feed-to-RDB latency (the feed stamps each
//! row) and CPU per process from the kernel's per-thread accounting. Groups follow
//! the white paper: rows per update, row width, publish mode, subscribers; a last
//! group measures the targets: the latency of a lone update and of 100k updates a
//! second sent in bursts, then the feed pushed as fast as it goes. Before the runs,
//! [`machine`] measures what new memory and thread wake-ups cost here, the two
//! floors under those targets.

mod cpu;
pub mod machine;

use std::path::Path;
use std::time::{Duration, Instant};

use strata_tick::counters::Latency;
use strata_tick::feed::{self, FeedConfig, FeedTable};
use strata_tick::rdb::{self, RdbConfig, RdbHandle};
use strata_tick::schema::Schema;
use strata_tick::sql::QueryLimits;
use strata_tick::tickerplant::{self, TickerplantConfig};

use crate::report::{Cell, Column, Report, Table};

/// One run: the feed's shape and the tickerplant's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Report table the run belongs to.
    pub group: &'static str,
    /// Rows per update (`r`).
    pub rows: usize,
    /// Updates per timer tick (`u`).
    pub updates: usize,
    /// Timer in milliseconds (`t`).
    pub timer_ms: u64,
    /// Extra float columns (`ex`).
    pub extra: usize,
    /// Publish on a timer of this many milliseconds (0: zero-latency).
    pub batch_ms: u64,
    /// RDBs subscribed.
    pub subscribers: usize,
}

impl Scenario {
    /// Rows per second the feed offers: `r * u * 1000 / t`.
    pub fn offered(&self) -> f64 {
        (self.rows * self.updates) as f64 * 1000.0 / self.timer_ms as f64
    }
}

/// What `strata bench tick` runs.
#[derive(Clone, Debug)]
pub struct TickBenchOptions {
    /// Seconds each scenario's feed runs.
    pub seconds: f64,
    /// The scenarios, in order.
    pub scenarios: Vec<Scenario>,
}

impl TickBenchOptions {
    /// Seed 001's groups (a subset of each of its tables) and the throughput runs.
    pub fn new(seconds: f64) -> TickBenchOptions {
        let s = |group, rows, updates, timer_ms, extra, batch_ms, subscribers| Scenario {
            group,
            rows,
            updates,
            timer_ms,
            extra,
            batch_ms,
            subscribers,
        };
        let rows_group = "rows per update (seed 001 table 1)";
        let width = "row width (table 3)";
        let publish = "publish mode (table 4)";
        let subs = "subscribers (table 5)";
        let max = "latency and throughput targets (u=1000000: the feed sends flat out)";
        TickBenchOptions {
            seconds,
            scenarios: vec![
                s(rows_group, 1, 10, 1, 0, 0, 1),
                s(rows_group, 10, 1, 1, 0, 0, 1),
                s(rows_group, 100, 1, 10, 0, 0, 1),
                s(rows_group, 1, 30, 1, 0, 0, 1),
                s(rows_group, 10, 10, 1, 0, 0, 1),
                s(rows_group, 100, 1, 1, 0, 0, 1),
                s(rows_group, 1000, 1, 10, 0, 0, 1),
                s(rows_group, 100, 5, 1, 0, 0, 1),
                s(width, 1, 10, 1, 10, 0, 1),
                s(width, 1, 10, 1, 50, 0, 1),
                s(width, 100, 1, 1, 10, 0, 1),
                s(width, 100, 1, 1, 50, 0, 1),
                s(publish, 1, 10, 1, 0, 100, 1),
                s(subs, 100, 1, 1, 0, 0, 3),
                s(subs, 100, 1, 1, 0, 0, 5),
                s(max, 1, 1, 1, 0, 0, 1),
                s(max, 1, 100, 1, 0, 0, 1),
                s(max, 1, 1_000_000, 1, 0, 0, 1),
                s(max, 100, 1_000_000, 1, 0, 0, 1),
            ],
        }
    }
}

/// Figures from one scenario.
#[derive(Clone, Debug, Default)]
struct Measured {
    tp_rows_per_s: f64,
    delivered: bool,
    tplog_p50: Option<f64>,
    tppub_p50: Option<f64>,
    rdbrecv: Latency,
    rdbupd: Latency,
    feed_to_rdb: Latency,
    tp_cpu: f64,
    rdb_cpu: f64,
    feed_cpu: f64,
    /// Why RDBs stopped before the end (a subscriber that fell a queue limit
    /// behind is dropped by the tickerplant).
    rdb_failures: Vec<String>,
}

/// Runs every scenario, journaling under `dir`; `progress` hears each finished run.
pub fn run(
    options: &TickBenchOptions,
    dir: &Path,
    mut progress: impl FnMut(&Scenario),
) -> Result<Report, strata_tick::TickError> {
    let mut report = Report::new("tick: seed 001's tickerplant profiling");
    report.push_note(format!(
        "Each run: a tickerplant journaling to {} (one write per update, no fsync), RDBs subscribed over \
         loopback TCP, the feed simulator sending async updates for {} s; all in one process on {} cores. \
         Latencies are medians (p50) and 99th percentiles in microseconds; CPU is percent of one core \
         from the kernel's per-thread accounting (RDB: per RDB). 'achieved' is rows journaled, \
         published and received by every RDB per second, from the feed's first send until the last RDB \
         has every row; 'all delivered' says each RDB received every row.",
        dir.display(),
        options.seconds,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    ));
    let machine = machine::measure().map_err(|e| strata_tick::TickError::Other(format!("machine probe: {e}")))?;
    let mut tables: Vec<Table> = Vec::new();
    let mut measured_runs = Vec::new();
    for (i, scenario) in options.scenarios.iter().enumerate() {
        let run_dir = dir.join(format!("run{i}"));
        let measured = measure(scenario, &run_dir, options.seconds)?;
        std::fs::remove_dir_all(&run_dir).ok();
        if tables.last().is_none_or(|t| t.title != scenario.group) {
            tables.push(new_table(scenario.group));
        }
        tables.last_mut().expect("pushed").push_row(row(scenario, &measured));
        for failure in &measured.rdb_failures {
            report.push_note(format!(
                "r={} u={} t={}ms subs={}: an RDB stopped early ({failure}); not every row was delivered.",
                scenario.rows, scenario.updates, scenario.timer_ms, scenario.subscribers
            ));
        }
        progress(scenario);
        measured_runs.push((scenario, measured));
    }
    if let Some(headlines) = headline_table(&measured_runs) {
        report.push_table(headlines);
    }
    report.push_note(
        "What this machine charges for memory new to the process (every row an RDB keeps, every journal byte) \
         and for waking a sleeping thread (each hop of feed -> TP reader -> TP core -> RDB when idle). On a \
         virtual machine whose balloon hands free memory back to the host, new memory can cost several times \
         what memory just freed does, 2 MiB pages most of all when the host has taken back the free blocks they \
         need; the figures change with what the host holds. Three wake-ups are a floor under the latency of a \
         lone update.",
    );
    report.push_table(machine.table());
    for table in tables {
        report.push_table(table);
    }
    Ok(report)
}

/// A figure of the headline table: the run it is read from (one subscriber, no
/// extra columns, zero-latency publishing), how, and Strata's target for it.
struct Headline {
    what: &'static str,
    rows: usize,
    updates: usize,
    timer_ms: u64,
    figure: fn(&Measured) -> Option<f64>,
    /// The target, and whether a higher figure is better.
    target: Option<(f64, bool)>,
}

/// Title of the table of headline figures.
pub const HEADLINES: &str = "headline figures and targets";

fn feed_to_rdb(m: &Measured, quantile: f64) -> Option<f64> {
    (!m.feed_to_rdb.is_empty()).then(|| m.feed_to_rdb.micros(quantile))
}

const HEADLINE_FIGURES: [Headline; 6] = [
    Headline {
        what: "single-row updates/s, flat out",
        rows: 1,
        updates: 1_000_000,
        timer_ms: 1,
        figure: |m| Some(m.tp_rows_per_s),
        target: Some((1e6, true)),
    },
    Headline {
        what: "rows/s in 100-row updates, flat out",
        rows: 100,
        updates: 1_000_000,
        timer_ms: 1,
        figure: |m| Some(m.tp_rows_per_s),
        target: Some((2e7, true)),
    },
    Headline {
        what: "feed->RDB p50 µs, 100k updates/s in bursts of 100",
        rows: 1,
        updates: 100,
        timer_ms: 1,
        figure: |m| feed_to_rdb(m, 0.5),
        target: Some((20.0, false)),
    },
    Headline {
        what: "feed->RDB p99 µs, 100k updates/s in bursts of 100",
        rows: 1,
        updates: 100,
        timer_ms: 1,
        figure: |m| feed_to_rdb(m, 0.99),
        target: Some((100.0, false)),
    },
    Headline {
        what: "feed->RDB p50 µs, one update a millisecond",
        rows: 1,
        updates: 1,
        timer_ms: 1,
        figure: |m| feed_to_rdb(m, 0.5),
        target: None,
    },
    Headline {
        what: "feed->RDB p99 µs, one update a millisecond",
        rows: 1,
        updates: 1,
        timer_ms: 1,
        figure: |m| feed_to_rdb(m, 0.99),
        target: None,
    },
];

/// The headline figures read off the runs that measure them, beside their targets
/// and whether they are met; `None` when no such run was made.
fn headline_table(runs: &[(&Scenario, Measured)]) -> Option<Table> {
    let mut table = Table::new(
        HEADLINES,
        vec![Column::text("figure"), Column::number("measured", 1), Column::number("target", 0), Column::text("met")],
    );
    for headline in &HEADLINE_FIGURES {
        let run = runs.iter().find(|(s, _)| {
            (s.rows, s.updates, s.timer_ms, s.extra, s.batch_ms, s.subscribers)
                == (headline.rows, headline.updates, headline.timer_ms, 0, 0, 1)
        });
        let Some(figure) = run.and_then(|(_, m)| (headline.figure)(m)) else { continue };
        let met = match headline.target {
            Some((target, true)) => Cell::from(figure >= target),
            Some((target, false)) => Cell::from(figure <= target),
            None => Cell::from("-"),
        };
        table.push_row(vec![headline.what.into(), figure.into(), headline.target.map(|(t, _)| t).into(), met]);
    }
    (!table.rows.is_empty()).then_some(table)
}

fn new_table(title: &str) -> Table {
    let us = |name: &str| Column::number(name, 1).lower_is_better();
    Table::new(
        title,
        vec![
            Column::number("r", 0),
            Column::number("u", 0),
            Column::number("t ms", 0),
            Column::number("ex", 0),
            Column::number("batch ms", 0),
            Column::number("subs", 0),
            Column::number("offered rows/s", 0),
            Column::number("achieved rows/s", 0).higher_is_better(),
            Column::number("upd/s", 0).higher_is_better(),
            Column::text("all delivered"),
            us("tplog p50"),
            us("tppub p50"),
            us("rdbrecv p50"),
            us("rdbupd p50"),
            us("feed->rdb p50"),
            us("feed->rdb p99"),
            Column::number("TP CPU %", 0).lower_is_better(),
            Column::number("RDB CPU %", 0).lower_is_better(),
            Column::number("feed CPU %", 0),
        ],
    )
}

fn row(s: &Scenario, m: &Measured) -> Vec<Cell> {
    let p50 = |l: &Latency| Cell::from((!l.is_empty()).then(|| l.micros(0.5)));
    vec![
        s.rows.into(),
        s.updates.into(),
        (s.timer_ms as usize).into(),
        s.extra.into(),
        (s.batch_ms as usize).into(),
        s.subscribers.into(),
        s.offered().into(),
        m.tp_rows_per_s.into(),
        (m.tp_rows_per_s / s.rows as f64).into(),
        m.delivered.into(),
        m.tplog_p50.into(),
        m.tppub_p50.into(),
        p50(&m.rdbrecv),
        p50(&m.rdbupd),
        p50(&m.feed_to_rdb),
        Cell::from((!m.feed_to_rdb.is_empty()).then(|| m.feed_to_rdb.micros(0.99))),
        m.tp_cpu.into(),
        m.rdb_cpu.into(),
        m.feed_cpu.into(),
    ]
}

/// The TAQ trade table with `extra` float columns, as the feed sends it.
fn schema(extra: usize) -> Schema {
    Schema::parse("sym", &FeedTable::Trade.schema_line(extra)).expect("a valid schema")
}

fn measure(s: &Scenario, dir: &Path, seconds: f64) -> Result<Measured, strata_tick::TickError> {
    let mut config = TickerplantConfig::new(schema(s.extra), Some(dir.join("journal")));
    config.listen = "127.0.0.1:0".into();
    config.hop_times = true;
    config.batch = (s.batch_ms > 0).then(|| Duration::from_millis(s.batch_ms));
    // Room for the backlog a flat-out feed builds ahead of one RDB.
    config.subscriber_limit = 4 << 30;
    let tp = tickerplant::start(config)?;
    let rdbs: Vec<RdbHandle> = (0..s.subscribers)
        .map(|i| {
            rdb::start(RdbConfig {
                tp: tp.addr.to_string(),
                user_password: String::new(),
                db: dir.join(format!("hdb{i}")),
                listen: None,
                credentials: None,
                tls: None,
                hdbs: Vec::new(),
                table_spec: None,
                queries: QueryLimits::default(),
            })
        })
        .collect::<Result<_, _>>()?;
    let feed = FeedConfig {
        rows: s.rows,
        updates: s.updates,
        timer: Duration::from_millis(s.timer_ms),
        extra_columns: s.extra,
        duration: Some(Duration::from_secs_f64(seconds)),
        seed: 7,
        stamp_time: true,
        ..FeedConfig::new(tp.addr.to_string(), FeedTable::Trade)
    };
    let cpu_before = cpu::by_role();
    let started = Instant::now();
    let sender = std::thread::Builder::new()
        .name("feed".into())
        .spawn(move || feed::run(&feed, |_| {}).map(|report| (report, cpu::this_thread())))
        .map_err(|e| strata_tick::TickError::Other(e.to_string()))?;
    let (sent, feed_cpu) = sender.join().map_err(|_| strata_tick::TickError::Other("the feed panicked".into()))??;
    // Let queued messages drain, then count what arrived (bounded wait).
    let deadline = Instant::now() + Duration::from_secs(30);
    let expected = sent.rows as usize;
    let held = |r: &RdbHandle| r.state.read().map_or(0, |st| st.row_counts().iter().map(|(_, n)| n).sum::<usize>());
    while rdbs.iter().any(|r| held(r) < expected && !r.is_finished()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = cpu::by_role();
    let mut m = Measured {
        delivered: rdbs.iter().all(|r| held(r) == expected),
        tp_rows_per_s: expected as f64 / elapsed,
        ..Default::default()
    };
    let share = |role: &str| 100.0 * (cpu_after.get(role) - cpu_before.get(role)) / elapsed;
    m.tp_cpu = share("tp");
    m.rdb_cpu = share("rdb") / s.subscribers as f64;
    m.feed_cpu = 100.0 * feed_cpu / elapsed;
    (m.tplog_p50, m.tppub_p50) = tickerplant_medians(&tp.addr.to_string())?;
    for r in &rdbs {
        let st = r.state.read().expect("RDB state");
        m.rdbrecv.merge(&st.rdbrecv);
        m.rdbupd.merge(&st.rdbupd);
        m.feed_to_rdb.merge(&st.feed_to_rdb);
    }
    tp.stop()?;
    m.rdb_failures = rdbs.into_iter().filter_map(|r| r.stop().err()).map(|e| e.to_string()).collect();
    Ok(m)
}

/// The tickerplant's tplog and tppub medians in microseconds, read over IPC from
/// its counters.
fn tickerplant_medians(addr: &str) -> Result<(Option<f64>, Option<f64>), strata_tick::TickError> {
    use strata_ipc::{Atom, Connection, K};
    let mut conn = Connection::connect(addr, "")?;
    let K::Dict { keys, values, .. } = conn.sync(&K::string(".strata.counters[]"))? else {
        return Err(strata_tick::TickError::Other("the tickerplant's counters are not a dictionary".into()));
    };
    let names = keys.as_symbols().unwrap_or_default();
    let K::List(values) = *values else {
        return Err(strata_tick::TickError::Other("the tickerplant's counters are not a list".into()));
    };
    let get = |name: &str| {
        names.iter().position(|n| *n == name).and_then(|i| match values[i] {
            K::Atom(Atom::Float(v)) => Some(v),
            _ => None,
        })
    };
    Ok((get("tplogp50us"), get("tppubp50us")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_delivers_every_row_and_fills_the_report() {
        let dir = tempfile::tempdir().unwrap();
        let scenario =
            Scenario { group: "g", rows: 10, updates: 2, timer_ms: 1, extra: 2, batch_ms: 0, subscribers: 2 };
        let options = TickBenchOptions { seconds: 0.3, scenarios: vec![scenario.clone()] };
        let mut heard = Vec::new();
        let report = run(&options, dir.path(), |s| heard.push(s.clone())).unwrap();
        assert_eq!(heard, [scenario]);
        let table = report.table("g").unwrap();
        let delivered = table.column_index("all delivered").unwrap();
        assert_eq!(table.display_cell(0, delivered), "yes");
        for column in ["achieved rows/s", "tplog p50", "rdbrecv p50", "feed->rdb p99"] {
            let i = table.column_index(column).unwrap();
            let shown = table.display_cell(0, i);
            assert!(shown.parse::<f64>().is_ok_and(|v| v > 0.0), "{column}: {shown:?}");
        }
        assert!(report.table(HEADLINES).is_none(), "no run measures a headline figure");
        assert_eq!(report.table(machine::TITLE).unwrap().rows.len(), 5, "the machine's costs come with every report");
    }

    #[test]
    fn the_headline_table_reads_the_runs_that_measure_its_figures() {
        let dir = tempfile::tempdir().unwrap();
        let lone = Scenario { group: "g", rows: 1, updates: 1, timer_ms: 1, extra: 0, batch_ms: 0, subscribers: 1 };
        let options = TickBenchOptions { seconds: 0.3, scenarios: vec![lone] };
        let report = run(&options, dir.path(), |_| {}).unwrap();
        let headlines = report.table(HEADLINES).unwrap();
        let [figure, measured, met] = ["figure", "measured", "met"].map(|c| headlines.column_index(c).unwrap());
        let shown: Vec<String> = (0..headlines.rows.len()).map(|r| headlines.display_cell(r, figure)).collect();
        assert_eq!(
            shown,
            ["feed->RDB p50 µs, one update a millisecond", "feed->RDB p99 µs, one update a millisecond"],
            "only the figures this run measures"
        );
        let p50: f64 = headlines.display_cell(0, measured).parse().unwrap();
        let p99: f64 = headlines.display_cell(1, measured).parse().unwrap();
        assert!(p50 > 0.0 && p99 >= p50, "{p50} {p99}");
        assert_eq!(headlines.display_cell(0, met), "-", "no target for a lone update");
        let g = report.table("g").unwrap();
        let p50_in_run = g.display_cell(0, g.column_index("feed->rdb p50").unwrap());
        assert_eq!(headlines.display_cell(0, measured), p50_in_run, "the same figure as the run's row");
    }
}
