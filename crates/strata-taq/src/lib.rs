//! TAQ-shaped market data for Strata: a synthetic day of NYSE daily TAQ quotes and
//! trades, calibrated to a real day's column statistics, and loaders for the real
//! pipe-delimited files for users who have them.
//!
//! ```
//! use strata_taq::{TaqConfig, generate, normalise};
//! let day = generate(&TaqConfig { quotes: 2_000, trades: 200, syms: 20, ..TaqConfig::default() });
//! assert_eq!(day.quote.names().len(), 23);
//! assert_eq!(day.trade.names().len(), 15);
//! let (quote_norm, trade_norm) = normalise(&day);
//! assert_eq!(quote_norm.names(), ["sym", "time", "ex", "bid", "bsize", "ask", "asize"]);
//! assert_eq!(trade_norm.len(), 200);
//! ```
//!
//! The generator draws a universe of instruments with Zipf-skewed activity, then
//! for each instrument bursty nanosecond event times under a U-shaped intraday
//! profile, prices that random-walk on the instrument's tick grid, sizes in round
//! lots, venues and indicator columns with the change rates of the reference day
//! ([`reference`]), feed sequence numbers per channel, and exchange trade ids.
//! Everything is a pure function of [`TaqConfig`]: the same seed gives the same day.

mod clock;
mod flags;
pub mod nyse;
pub mod parquet;
mod prices;
mod quote;
pub mod reference;
pub mod rng;
mod sequence;
mod trade;
pub mod universe;

use strata_store::progress::{NoProgress, Progress};
use strata_store::{Attribute, Column, ColumnType, Database, Date, Table, TableLocation, TableWrite, WriteMode};

pub use quote::QUOTE_SCHEMA;
pub use trade::TRADE_SCHEMA;

/// Name of the full quote table.
pub const QUOTE_TABLE: &str = "quote";
/// Name of the full trade table.
pub const TRADE_TABLE: &str = "trade";
/// Name of the normalised quote table (short column names).
pub const QUOTE_NORM_TABLE: &str = "quoteNorm";
/// Name of the normalised trade table (short column names).
pub const TRADE_NORM_TABLE: &str = "tradeNorm";

/// What day to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct TaqConfig {
    /// The trading date (the partition it is written to).
    pub date: Date,
    /// Rows of the quote table.
    pub quotes: usize,
    /// Rows of the trade table.
    pub trades: usize,
    /// Instruments in the universe (every one quotes at least once when there are
    /// enough quotes; quiet ones may not trade).
    pub syms: usize,
    /// Seed: the same configuration always gives the same day.
    pub seed: u64,
}

impl Default for TaqConfig {
    /// A small day (2022.03.31, 100 000 quotes, 10 000 trades, 100 symbols, seed 0):
    /// enough for tests and examples; benchmarks ask for more.
    fn default() -> TaqConfig {
        TaqConfig {
            date: Date::from_ymd(2022, 3, 31).expect("a real date"),
            quotes: 100_000,
            trades: 10_000,
            syms: 100,
            seed: 0,
        }
    }
}

/// One generated (or loaded) trading day.
#[derive(Clone, Debug, PartialEq)]
pub struct TaqDay {
    /// The quote table ([`QUOTE_SCHEMA`]), sorted by Symbol then Time.
    pub quote: Table,
    /// The trade table ([`TRADE_SCHEMA`]), sorted by Symbol then Time.
    pub trade: Table,
}

impl TaqDay {
    /// A day from a database's `quote` and `trade` tables (a day `strata gen taq`
    /// or the NYSE loaders wrote, or one a user stored with the same columns),
    /// sorted by Symbol then Time as a day promises. Fails, naming the table and
    /// column, when a column of [`QUOTE_SCHEMA`] or [`TRADE_SCHEMA`] is missing or
    /// of another type: seed 000's queries read them by name.
    pub fn from_tables(quote: Table, trade: Table) -> Result<TaqDay, NotTaqError> {
        let checked = |name: &str, table: Table, schema: &[(&str, ColumnType)]| {
            let problem = |problem: String| NotTaqError { table: name.to_string(), problem };
            for &(column, expected) in schema {
                match table.column(column) {
                    Err(_) => return Err(problem(format!("has no column {column} ({expected})"))),
                    Ok(c) if c.ty() != expected => {
                        return Err(problem(format!("column {column} is {}, expected {expected}", c.ty())));
                    }
                    Ok(_) => {}
                }
            }
            table.xasc(&["Symbol", "Time"]).map_err(|e| problem(e.to_string()))
        };
        Ok(TaqDay {
            quote: checked(QUOTE_TABLE, quote, &QUOTE_SCHEMA)?,
            trade: checked(TRADE_TABLE, trade, &TRADE_SCHEMA)?,
        })
    }
}

/// Why two tables are not a TAQ day ([`TaqDay::from_tables`]).
#[derive(Debug, thiserror::Error)]
#[error("table {table} {problem}: a TAQ day needs seed 000's quote and trade columns")]
pub struct NotTaqError {
    /// `quote` or `trade`.
    pub table: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Generates one trading day. Deterministic: the same `config` gives the same tables.
///
/// # Panics
/// If `config.syms` is 0.
pub fn generate(config: &TaqConfig) -> TaqDay {
    generate_with_progress(config, &NoProgress)
}

/// [`generate`], telling `progress` two steps in rows: the quotes, then the trades.
///
/// # Panics
/// If `config.syms` is 0.
pub fn generate_with_progress(config: &TaqConfig, progress: &dyn Progress) -> TaqDay {
    let universe = universe::instruments(config.syms, config.seed);
    TaqDay {
        quote: quote::quotes(&universe, config.quotes, config.seed, progress),
        trade: trade::trades(&universe, config.trades, config.seed, progress),
    }
}

/// The normalised tables of a day, with the short names seed queries use:
/// `quoteNorm(sym, time, ex, bid, bsize, ask, asize)` and
/// `tradeNorm(sym, time, ex, price, size)`. Types: symbol, timespan, char, float,
/// int. Trade prices (reals) become floats rounded to 4 decimals, the file's
/// precision, so `10.07` stays `10.07` rather than the real's `10.0699996948`.
pub fn normalise(day: &TaqDay) -> (Table, Table) {
    let pick = |table: &Table, pairs: &[(&str, &str)]| -> Table {
        Table::new(
            pairs
                .iter()
                .map(|(short, long)| (short.to_string(), table.column(long).expect("a TAQ column").clone()))
                .collect(),
        )
        .expect("columns of one table")
    };
    let quote_norm = pick(
        &day.quote,
        &[
            ("sym", "Symbol"),
            ("time", "Time"),
            ("ex", "Exchange"),
            ("bid", "Bid_Price"),
            ("bsize", "Bid_Size"),
            ("ask", "Offer_Price"),
            ("asize", "Offer_Size"),
        ],
    );
    let trade_norm =
        pick(&day.trade, &[("sym", "Symbol"), ("time", "Time"), ("ex", "Exchange"), ("size", "TradeVolume")]);
    let price = day.trade.column("TradePrice").expect("a TAQ column");
    let price = Column::from_values(
        ColumnType::Float,
        price.values::<f32>().iter().map(|&p| (p as f64 * 1e4).round() / 1e4).collect::<Vec<f64>>(),
    )
    .expect("floats");
    let mut columns: Vec<(String, Column)> =
        trade_norm.iter().map(|(name, column)| (name.to_string(), column.clone())).collect();
    columns.insert(3, ("price".to_string(), price));
    (quote_norm, Table::new(columns).expect("columns of one table"))
}

/// Writes `quote`, `trade`, `quoteNorm` and `tradeNorm` into partition `date` of
/// `db`, each sorted by symbol then time with the parted attribute on its symbol
/// column. `how` supplies the compression (its sort and attribute lists are
/// replaced by those); `mode` says what happens to tables the day already holds.
pub fn write_day(
    db: &Database,
    date: Date,
    day: &TaqDay,
    how: &TableWrite,
    mode: WriteMode,
) -> strata_store::Result<()> {
    write_day_with_progress(db, date, day, how, mode, &NoProgress)
}

/// [`write_day`], telling `progress` one step per table, in bytes of its values.
pub fn write_day_with_progress(
    db: &Database,
    date: Date,
    day: &TaqDay,
    how: &TableWrite,
    mode: WriteMode,
    progress: &dyn Progress,
) -> strata_store::Result<()> {
    let (quote_norm, trade_norm) = normalise(day);
    for (name, table, sym, time) in [
        (QUOTE_TABLE, &day.quote, "Symbol", "Time"),
        (TRADE_TABLE, &day.trade, "Symbol", "Time"),
        (QUOTE_NORM_TABLE, &quote_norm, "sym", "time"),
        (TRADE_NORM_TABLE, &trade_norm, "sym", "time"),
    ] {
        let how = TableWrite {
            sort_by: vec![sym.to_string(), time.to_string()],
            attributes: vec![(sym.to_string(), Attribute::Parted)],
            ..how.clone()
        };
        let location = TableLocation::Partition(date, name.to_string());
        db.write_table_as(&location, table, &how, mode, progress)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
