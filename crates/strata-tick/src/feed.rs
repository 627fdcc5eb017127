//! Seed 001's feed simulator with TAQ-shaped rows: on a timer, send `updates` updates
//! of `rows` rows each to a tickerplant, asynchronously, with `extra` float columns,
//! and stop when the tickerplant goes away.
//!
//! Rows are strata-taq's generated trading day, normalised (`tradeNorm` or
//! `quoteNorm` columns), replayed in time order and from the start again when they
//! run out. Each update is encoded straight from those columns (symbols from their
//! wire form, laid out once for the whole pool) into one reused buffer (no q values
//! are built) and the timer tick's updates go out in large writes. The tickerplant
//! adds the time column, unless the feed stamps each update with its own clock so
//! subscribers can time the whole feed-to-them path.

use std::time::{Duration, Instant};

use strata_ipc::frame::{COMPRESSION_THRESHOLD, compress_message};
use strata_ipc::{Connection, MessageKind};
use strata_store::{Column, ColumnType, Table};
use strata_taq::{TaqConfig, generate, normalise};

use crate::clock;
use crate::error::TickError;

/// The TAQ tables a feed can send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedTable {
    /// Trades: `time sym ex price size` (tradeNorm's columns).
    Trade,
    /// Quotes: `time sym ex bid bsize ask asize` (quoteNorm's columns).
    Quote,
}

impl std::str::FromStr for FeedTable {
    type Err = String;
    fn from_str(s: &str) -> Result<FeedTable, String> {
        match s {
            "trade" => Ok(FeedTable::Trade),
            "quote" => Ok(FeedTable::Quote),
            other => Err(format!("feed table {other:?}: expected trade or quote")),
        }
    }
}

impl FeedTable {
    /// The table's name at the tickerplant.
    pub fn name(self) -> &'static str {
        match self {
            FeedTable::Trade => "trade",
            FeedTable::Quote => "quote",
        }
    }

    /// Columns after `time`, with their types, in the order the feed sends them.
    fn columns(self) -> &'static [(&'static str, ColumnType)] {
        match self {
            FeedTable::Trade => &[
                ("sym", ColumnType::Symbol),
                ("ex", ColumnType::Char),
                ("price", ColumnType::Float),
                ("size", ColumnType::Int),
            ],
            FeedTable::Quote => &[
                ("sym", ColumnType::Symbol),
                ("ex", ColumnType::Char),
                ("bid", ColumnType::Float),
                ("bsize", ColumnType::Int),
                ("ask", ColumnType::Float),
                ("asize", ColumnType::Int),
            ],
        }
    }

    /// The tickerplant schema line of this table with `extra` float columns
    /// (`col0`, `col1`, ...), e.g. `trade time:timespan sym:symbol ex:char price:float size:int`.
    pub fn schema_line(self, extra: usize) -> String {
        let mut line = format!("{} time:timespan", self.name());
        for (name, ty) in self.columns() {
            line.push_str(&format!(" {name}:{}", ty.name()));
        }
        for i in 0..extra {
            line.push_str(&format!(" col{i}:float"));
        }
        line
    }
}

/// What the feed sends.
#[derive(Clone, Debug)]
pub struct FeedConfig {
    /// The tickerplant, `host:port`.
    pub tp: String,
    /// `user:password` (may be empty).
    pub user_password: String,
    /// The table to publish to.
    pub table: FeedTable,
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
    /// Seed of the generated trading day.
    pub seed: u64,
    /// Rows of the generated day the feed cycles through.
    pub pool_rows: usize,
    /// Send a `time` column (UTC time of day at sending) instead of letting the
    /// tickerplant add it, so subscribers can time the whole feed-to-them path.
    pub stamp_time: bool,
}

impl FeedConfig {
    /// A feed of `table` to `tp` as `strata feed` starts it: one row per update, one
    /// update per 1 ms tick, no extra columns, until the tickerplant goes away, from
    /// a generated day of 100 000 rows.
    pub fn new(tp: impl Into<String>, table: FeedTable) -> FeedConfig {
        FeedConfig {
            tp: tp.into(),
            user_password: String::new(),
            table,
            rows: 1,
            updates: 1,
            timer: Duration::from_millis(1),
            extra_columns: 0,
            duration: None,
            max_updates: None,
            sync: false,
            seed: 1,
            pool_rows: 100_000,
            stamp_time: false,
        }
    }
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

/// Symbols in the generated day.
const SYMS: usize = 500;

/// A generated day's rows of one table, in time order, and a cursor into them.
pub struct TaqRows {
    table: FeedTable,
    /// The columns after `time`, as [`FeedTable::columns`] lists them.
    columns: Vec<Column>,
    /// Every row's symbol as the wire has it (text and NUL), rows end to end, so a
    /// run of rows is one copy.
    symbol_bytes: Vec<u8>,
    /// Where each row's symbol starts in `symbol_bytes`, and its end after the last.
    symbol_starts: Vec<usize>,
    next: usize,
}

impl TaqRows {
    /// `rows` rows (at least one) of `table` from the day strata-taq generates for
    /// `seed`.
    pub fn new(table: FeedTable, rows: usize, seed: u64) -> TaqRows {
        let rows = rows.max(1);
        let (quotes, trades) = match table {
            FeedTable::Trade => (SYMS, rows),
            FeedTable::Quote => (rows, SYMS),
        };
        let day = generate(&TaqConfig { quotes, trades, syms: SYMS, seed, ..TaqConfig::default() });
        let (quote_norm, trade_norm) = normalise(&day);
        let day: Table = match table {
            FeedTable::Trade => trade_norm,
            FeedTable::Quote => quote_norm,
        };
        // The generator writes symbol by symbol; a feed sends in time order.
        let order = day.take(&day.sort_permutation(&["time"]).expect("a time column"));
        let columns: Vec<Column> =
            table.columns().iter().map(|(name, _)| order.column(name).expect("a TAQ column").clone()).collect();
        let domain = columns[0].domain().expect("sym is a symbol column");
        let mut symbol_bytes = Vec::new();
        let mut symbol_starts = vec![0];
        for &key in columns[0].values::<u32>() {
            symbol_bytes.extend(domain[key as usize].bytes().chain([0]));
            symbol_starts.push(symbol_bytes.len());
        }
        TaqRows { table, columns, symbol_bytes, symbol_starts, next: 0 }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.columns[0].len()
    }

    /// Whether no rows are held (never: there is at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the message `(`.u.upd; `table; data)` of the next `rows` rows (atoms
    /// for one row, else vectors), with a first `time` column when `time` is given
    /// and `extra` float columns, header included.
    pub fn encode_update(
        &mut self,
        out: &mut Vec<u8>,
        kind: MessageKind,
        rows: usize,
        extra: usize,
        time: Option<i64>,
    ) {
        let start = out.len();
        out.extend_from_slice(&[1, kind as u8, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&[0, 0, 3, 0, 0, 0]);
        out.extend_from_slice(b"\xf5.u.upd\0\xf5");
        out.extend_from_slice(self.table.name().as_bytes());
        out.push(0);
        let columns = self.columns.len() + extra + usize::from(time.is_some());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&(columns as u32).to_le_bytes());
        let single = rows == 1;
        let head = |out: &mut Vec<u8>, ty: ColumnType| {
            if single {
                out.push((ty.code() as i8).wrapping_neg() as u8);
            } else {
                out.extend_from_slice(&[ty.code(), 0]);
                out.extend_from_slice(&(rows as u32).to_le_bytes());
            }
        };
        if let Some(t) = time {
            head(out, ColumnType::Timespan);
            (0..rows).for_each(|_| out.extend_from_slice(&t.to_le_bytes()));
        }
        let len = self.len();
        let runs = pool_runs(self.next, rows, len);
        for column in &self.columns {
            head(out, column.ty());
            for run in runs.clone() {
                match column.ty() {
                    ColumnType::Symbol => out.extend_from_slice(
                        &self.symbol_bytes[self.symbol_starts[run.start]..self.symbol_starts[run.end]],
                    ),
                    ty => {
                        let width = ty.width();
                        out.extend_from_slice(&column.value_bytes()[run.start * width..run.end * width]);
                    }
                }
            }
        }
        for _ in 0..extra {
            head(out, ColumnType::Float);
            (0..rows).for_each(|_| out.extend_from_slice(&1.0f64.to_le_bytes()));
        }
        self.next = (self.next + rows) % len;
        let total = (out.len() - start) as u32;
        out[start + 4..start + 8].copy_from_slice(&total.to_le_bytes());
    }
}

/// The pool rows `from`, `from + 1`, ... (`rows` of them, `len` in the pool) as
/// runs of consecutive rows: to the end of the pool, then from its start again.
fn pool_runs(from: usize, rows: usize, len: usize) -> impl Iterator<Item = std::ops::Range<usize>> + Clone {
    let (mut from, mut left) = (from, rows);
    std::iter::from_fn(move || {
        (left > 0).then(|| {
            let run = left.min(len - from);
            let rows = from..from + run;
            (from, left) = (0, left - run);
            rows
        })
    })
}

/// Runs the feed until its duration or update count is reached or the
/// tickerplant goes away; `progress` is called after every timer tick.
pub fn run(config: &FeedConfig, mut progress: impl FnMut(&FeedReport)) -> Result<FeedReport, TickError> {
    let mut tp = Connection::connect_timeout(&config.tp, &config.user_password, Duration::from_secs(5))?;
    let mut rows = TaqRows::new(config.table, config.pool_rows, config.seed);
    let rows_per_update = config.rows.max(1);
    let mut report = FeedReport::default();
    let mut message = Vec::with_capacity(1 << 16);
    let kind = if config.sync { MessageKind::Sync } else { MessageKind::Async };
    let started = Instant::now();
    let mut next_tick = started;
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
            message.clear();
            rows.encode_update(&mut message, kind, rows_per_update, config.extra_columns, time);
            if tp.compresses()
                && message.len() > COMPRESSION_THRESHOLD
                && let Some(packed) = compress_message(&message)
            {
                message = packed;
            }
            let sent = if config.sync {
                match tp.request(&message) {
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
                tp.write_raw(&message)
            };
            if let Err(e) = sent {
                report.stopped = format!("tickerplant went away: {e}");
                break 'ticks;
            }
            report.updates += 1;
            report.rows += rows_per_update as u64;
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

#[cfg(test)]
mod tests {
    use strata_ipc::{Atom, K, Vector, read_message};

    use super::*;

    #[test]
    fn updates_decode_as_taq_rows_in_time_order() {
        let mut rows = TaqRows::new(FeedTable::Quote, 300, 3);
        assert_eq!(rows.len(), 300);
        let mut out = Vec::new();
        rows.encode_update(&mut out, MessageKind::Async, 1, 0, None);
        rows.encode_update(&mut out, MessageKind::Sync, 299, 2, Some(77));
        let mut stream = &out[..];
        let (header, one) = read_message(&mut stream, 1 << 20).unwrap().unwrap();
        assert_eq!(header.kind, MessageKind::Async);
        let K::List(items) = one else { panic!() };
        assert_eq!(items[..2], [K::symbol(".u.upd"), K::symbol("quote")]);
        let K::List(atoms) = &items[2] else { panic!() };
        assert_eq!(atoms.len(), 6);
        assert!(matches!(atoms[0], K::Atom(Atom::Symbol(_))) && matches!(atoms[1], K::Atom(Atom::Char(_))));
        let (_, many) = read_message(&mut stream, 1 << 20).unwrap().unwrap();
        let K::List(items) = many else { panic!() };
        let K::List(columns) = &items[2] else { panic!() };
        assert_eq!(columns.len(), 1 + 6 + 2);
        assert_eq!(columns[0], K::vector(Vector::Timespan(vec![77; 299])));
        let Some(K::Vector(Vector::Float(bids), _)) = columns.get(3) else { panic!() };
        assert!(bids.iter().all(|b| *b > 0.0));
        assert_eq!(columns[8], K::vector(Vector::Float(vec![1.0; 299])));
        assert!(stream.is_empty());
        assert_eq!(
            FeedTable::Trade.schema_line(1),
            "trade time:timespan sym:symbol ex:char price:float size:int col0:float"
        );
        assert_eq!("quote".parse(), Ok(FeedTable::Quote));
    }

    #[test]
    fn rows_past_the_end_of_the_pool_start_it_again() {
        assert_eq!(pool_runs(3, 2, 10).collect::<Vec<_>>(), vec![(3..5)]);
        assert_eq!(pool_runs(8, 5, 10).collect::<Vec<_>>(), [8..10, 0..3]);
        assert_eq!(pool_runs(1, 7, 3).collect::<Vec<_>>(), [1..3, 0..3, 0..2]);
        assert_eq!(pool_runs(0, 0, 3).count(), 0);
    }
}
