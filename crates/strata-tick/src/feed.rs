//! Seed 001's feed simulator: on a timer, send `updates` updates of `rows` rows each
//! to a tickerplant, asynchronously, with `extra` float columns, and stop when the
//! tickerplant goes away. Rows are TAQ-shaped trades (`sym price size cond`, plus
//! the extras); the tickerplant adds the time column.

use std::time::{Duration, Instant};

use strata_ipc::{Connection, K, MessageKind, Vector};

use crate::clock;
use crate::error::TickError;

/// What the feed sends.
#[derive(Clone, Debug)]
pub struct FeedConfig {
    /// The tickerplant, `host:port`.
    pub tp: String,
    /// `user:password` (may be empty).
    pub user_password: String,
    /// The table to publish to.
    pub table: String,
    /// Rows per update (`r`); one row is sent as atoms, as feeds do.
    pub rows: usize,
    /// Updates per timer tick (`u`).
    pub updates: usize,
    /// Timer period (`t`).
    pub timer: Duration,
    /// Extra float columns (`ex`).
    pub extra_columns: usize,
    /// Stop after this long (`None`: until the tickerplant goes away).
    pub duration: Option<Duration>,
    /// Stop after this many updates.
    pub max_updates: Option<u64>,
    /// Send each update synchronously and wait for the acknowledgement.
    pub sync: bool,
    /// Seed for the generated rows.
    pub seed: u64,
    /// Send a `time` column (UTC time of day at sending) instead of letting the
    /// tickerplant add it, so subscribers can time the whole feed-to-them path.
    pub stamp_time: bool,
}

/// What the feed did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FeedReport {
    /// Updates sent.
    pub updates: u64,
    /// Rows sent.
    pub rows: u64,
    /// Updates the tickerplant acknowledged (sync mode).
    pub acknowledged: u64,
    /// Updates the tickerplant refused (sync mode).
    pub refused: u64,
    /// Seconds from first to last send.
    pub seconds: f64,
    /// Why it stopped.
    pub stopped: String,
}

/// The symbols feeds draw from: a few hundred tickers, skewed so some trade far
/// more often, like a real tape.
const TICKERS: usize = 200;

/// Deterministic TAQ-shaped trades.
pub struct TradeGenerator {
    state: u64,
    prices: Vec<f64>,
    names: Vec<String>,
}

impl TradeGenerator {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> TradeGenerator {
        let mut g = TradeGenerator { state: seed ^ 0x5EED_F00D, prices: Vec::new(), names: Vec::new() };
        for i in 0..TICKERS {
            let letters: String =
                (0..3 + i % 2).map(|k| (b'A' + ((i * 7 + k * 11 + i / 26) % 26) as u8) as char).collect();
            g.names.push(format!("{letters}{i}"));
            let price = 10.0 + (g.next() % 40_000) as f64 / 100.0;
            g.prices.push(price);
        }
        g
    }

    fn next(&mut self) -> u64 {
        // SplitMix64.
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `rows` trades as columns `sym price size cond` and `extra` float columns.
    pub fn columns(&mut self, rows: usize, extra: usize) -> Vec<K> {
        let (mut sym, mut price, mut size, mut cond) =
            (Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows));
        for _ in 0..rows {
            let r = self.next();
            // Squaring a uniform draw skews activity toward low-numbered tickers.
            let u = (r >> 11) as f64 / (1u64 << 53) as f64;
            let i = ((u * u) * TICKERS as f64) as usize;
            let step = ((r & 7) as i64 - 3) as f64 * 0.01;
            self.prices[i] = (self.prices[i] + step).max(0.01);
            sym.push(self.names[i].clone());
            price.push((self.prices[i] * 100.0).round() / 100.0);
            size.push(100 * (1 + (r >> 8) % 10) as i32);
            cond.push(if (r >> 20) % 10 < 8 { b' ' } else { b"ABFT"[((r >> 24) % 4) as usize] });
        }
        let mut columns = vec![
            K::vector(Vector::Symbol(sym)),
            K::vector(Vector::Float(price)),
            K::vector(Vector::Int(size)),
            K::vector(Vector::Char(cond)),
        ];
        columns.extend((0..extra).map(|_| K::vector(Vector::Float(vec![1.0; rows]))));
        columns
    }

    /// One update's data: columns, or atoms for a single row; with `time`, a first
    /// column of that timespan.
    pub fn update(&mut self, rows: usize, extra: usize, time: Option<i64>) -> K {
        let mut columns = self.columns(rows, extra);
        if let Some(t) = time {
            columns.insert(0, K::vector(Vector::Timespan(vec![t; rows])));
        }
        if rows != 1 {
            return K::List(columns);
        }
        K::List(
            columns
                .into_iter()
                .map(|c| match c {
                    K::Vector(v, _) => K::Atom(v.get(0).expect("one row")),
                    other => other,
                })
                .collect(),
        )
    }
}

/// Runs the feed until its duration or update count is reached or the
/// tickerplant goes away; `progress` is called after every timer tick.
pub fn run(config: &FeedConfig, mut progress: impl FnMut(&FeedReport)) -> Result<FeedReport, TickError> {
    let mut tp = Connection::connect_timeout(&config.tp, &config.user_password, Duration::from_secs(5))?;
    let mut generator = TradeGenerator::new(config.seed);
    let mut report = FeedReport::default();
    let started = Instant::now();
    let mut next_tick = started;
    let table = K::symbol(config.table.clone());
    'ticks: loop {
        if config.duration.is_some_and(|d| started.elapsed() >= d) {
            report.stopped = "duration reached".into();
            break;
        }
        for _ in 0..config.updates {
            if config.max_updates.is_some_and(|m| report.updates >= m) {
                report.stopped = "update count reached".into();
                break 'ticks;
            }
            let time = config.stamp_time.then(|| clock::time_of_day(clock::Clock::default().now_nanos()));
            let data = generator.update(config.rows, config.extra_columns, time);
            let message = K::List(vec![K::symbol(".u.upd"), table.clone(), data]);
            let sent = if config.sync {
                match tp.sync(&message) {
                    Ok(_) => {
                        report.acknowledged += 1;
                        Ok(())
                    }
                    Err(strata_ipc::IpcError::Remote(e)) => {
                        report.refused += 1;
                        if report.refused == 1 {
                            crate::log::line("feed", &format!("the tickerplant refused an update: {e}"));
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            } else {
                tp.write(MessageKind::Async, &message)
            };
            if let Err(e) = sent {
                report.stopped = format!("tickerplant went away: {e}");
                break 'ticks;
            }
            report.updates += 1;
            report.rows += config.rows as u64;
        }
        if let Err(e) = tp.flush() {
            report.stopped = format!("tickerplant went away: {e}");
            break;
        }
        report.seconds = started.elapsed().as_secs_f64();
        progress(&report);
        next_tick += config.timer;
        let now = Instant::now();
        if next_tick > now {
            std::thread::sleep(next_tick - now);
        } else {
            // Behind schedule: do not try to catch up in a burst.
            next_tick = now;
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
