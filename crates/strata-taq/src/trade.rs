//! The `trade` table: one row per reported trade, 15 columns with daily TAQ's names,
//! generated instrument by instrument (rows sorted by Symbol, Time).

use std::sync::Arc;

use strata_store::progress::{Progress, Unit};
use strata_store::{Column, ColumnType, Table};

use crate::clock::{Bursts, Profile, event_times};
use crate::flags::{Sticky, rare_runs, run_count};
use crate::prices::PricePath;
use crate::quote::participant_time;
use crate::reference::{TRADE, TRADE_ROWS};
use crate::rng::Rng;
use crate::sequence::channel_sequence;
use crate::universe::{Instrument, TRADE_CHANNELS, allocate, channels_by_activity, zipf_exponent};

/// The trade table's columns and types, in order.
pub const TRADE_SCHEMA: [(&str, ColumnType); 15] = [
    ("Time", ColumnType::Timespan),
    ("Exchange", ColumnType::Char),
    ("Symbol", ColumnType::Symbol),
    ("SaleCondition", ColumnType::Symbol),
    ("TradeVolume", ColumnType::Int),
    ("TradePrice", ColumnType::Real),
    ("TradeStopStockIndicator", ColumnType::Boolean),
    ("TradeCorrectionIndicator", ColumnType::Short),
    ("SequenceNumber", ColumnType::Int),
    ("TradeId", ColumnType::String),
    ("SourceofTrade", ColumnType::Char),
    ("TradeReportingFacility", ColumnType::Boolean),
    ("ParticipantTimestamp", ColumnType::Timespan),
    ("TradeReportingFacilityTRFTimestamp", ColumnType::Timespan),
    ("TradeThroughExemptIndicator", ColumnType::Boolean),
];

/// Trading venues and their shares of trades; `D` is the FINRA trade reporting
/// facilities (off-exchange trades).
const TRADE_VENUES: [(u8, f64); 19] = [
    (b'D', 0.3),
    (b'Q', 0.12),
    (b'P', 0.08),
    (b'Z', 0.07),
    (b'K', 0.07),
    (b'N', 0.06),
    (b'V', 0.05),
    (b'J', 0.03),
    (b'Y', 0.03),
    (b'X', 0.03),
    (b'H', 0.03),
    (b'U', 0.02),
    (b'B', 0.02),
    (b'A', 0.02),
    (b'C', 0.01),
    (b'I', 0.02),
    (b'M', 0.01),
    (b'L', 0.02),
    (b'T', 0.01),
];

/// Distinct sale conditions in the reference day.
const SALE_CONDITIONS: usize = 118;

fn rate(name: &str) -> f64 {
    TRADE.iter().find(|c| c.name == name).expect("a reference trade column").change_rate(TRADE_ROWS)
}

/// Generates the trade table: `rows` trades over `universe`, sorted by Symbol, Time.
/// Symbols with little activity may have no trades, as in a real day.
/// `progress` hears one step in rows, advanced instrument by instrument.
pub fn trades(universe: &[Instrument], rows: usize, seed: u64, progress: &dyn Progress) -> Table {
    let profile = Profile::us_equities();
    let weights: Vec<f64> = universe.iter().map(|i| i.weight).collect();
    let counts = allocate(&weights, rows, 0);
    let bursts = Bursts { mean_size: 2.5, repeat: 0.05, gap_ns: (1e3, 5e7) };
    let venue = Sticky::with_change_rate(&TRADE_VENUES, rate("Exchange"));
    let (conditions, condition_weights) = sale_conditions();
    let condition = Sticky::with_change_rate(
        &(0..SALE_CONDITIONS as u32).zip(condition_weights).collect::<Vec<_>>(),
        rate("SaleCondition"),
    );
    let trf = Sticky::with_change_rate(&[(0u8, 0.89), (1u8, 0.11)], rate("TradeReportingFacility"));
    let exempt = Sticky::with_change_rate(&[(0u8, 0.7), (1u8, 0.3)], rate("TradeThroughExemptIndicator"));
    // Participant times are missing in runs (a fifth of trades), not row by row.
    let no_participant = Sticky::with_change_rate(&[(false, 0.8), (true, 0.2)], 0.05);

    let mut time = Vec::with_capacity(rows);
    let mut exchange = Vec::with_capacity(rows);
    let mut symbol = Vec::with_capacity(rows);
    let mut sale = Vec::with_capacity(rows);
    let mut volume = Vec::with_capacity(rows);
    let mut price = Vec::with_capacity(rows);
    let mut source = Vec::with_capacity(rows);
    let mut facility = Vec::with_capacity(rows);
    let mut participant = Vec::with_capacity(rows);
    let mut trf_time = Vec::with_capacity(rows);
    let mut through = Vec::with_capacity(rows);
    let mut channels = Vec::with_capacity(rows);
    let channel_of = channels_by_activity(&weights, TRADE_CHANNELS);

    progress.start("generating trades", rows as u64, Unit::Rows);
    for (index, (instrument, &n)) in universe.iter().zip(&counts).enumerate() {
        let mut rng = Rng::fork(seed, 0x5452_0000 + index as u64);
        let times = event_times(n, &profile, bursts, &mut rng);
        let mut path = PricePath::new(instrument, n);
        let tpd = instrument.ticks_per_dollar();
        let (mut last_venue, mut last_sale, mut last_trf, mut last_exempt) = (None, None, None, None);
        let (mut last_price, mut last_volume, mut last_missing) = (None, None, None);
        for &t in &times {
            let v = venue.next(last_venue, &mut rng);
            last_venue = Some(v);
            let (bid, ask) = path.quote(&mut rng);
            // Trades print at the bid or the offer, and often at the last price;
            // off-exchange prints are sometimes at the midpoint or a sub-penny.
            let ticks = match last_price {
                Some(p) if rng.chance(0.6) => p,
                _ if rng.chance(0.5) => bid as f64,
                _ => ask as f64,
            };
            last_price = Some(ticks);
            let printed = if v == b'D' && rng.chance(0.3) {
                if rng.chance(0.5) { ticks + 0.5 } else { ticks + rng.below(100) as f64 / 100.0 }
            } else {
                ticks
            };
            time.push(t);
            exchange.push(v);
            symbol.push(index as u32);
            price.push((printed / tpd) as f32);
            last_volume = Some(next_volume(last_volume, &mut rng));
            volume.extend(last_volume);
            let c = condition.next(last_sale, &mut rng);
            last_sale = Some(c);
            sale.push(c);
            source.push(if instrument.nasdaq { b'N' } else { b'C' });
            let f = trf.next(last_trf, &mut rng);
            last_trf = Some(f);
            facility.push(f);
            let e = exempt.next(last_exempt, &mut rng);
            last_exempt = Some(e);
            through.push(e);
            // Blank in the file: 0.
            let missing = no_participant.next(last_missing, &mut rng);
            last_missing = Some(missing);
            participant.push(if missing { 0 } else { participant_time(t, v, &mut rng) });
            trf_time.push(if v == b'D' { (t - rng.log_uniform(1e5, 1e8) as i64).max(0) } else { 0 });
            channels.push(channel_of[index]);
        }
        progress.advance(n as u64);
    }
    progress.finish();
    let sequence = channel_sequence(&time, &channels, TRADE_CHANNELS);
    let trade_id = trade_ids(&time, &exchange);

    let mut rng = Rng::fork(seed, 0x5452_464c);
    let mut stop_stock = vec![0u8; rows];
    rare_runs(&mut stop_stock, &[1], 1, 20.0, &mut rng);
    let mut correction = vec![0i16; rows];
    rare_runs(&mut correction, &[1, 7, 8, 12], run_count(rows, rate("TradeCorrectionIndicator"), 4), 1.0, &mut rng);

    let domain = Arc::new(universe.iter().map(|i| i.name.clone()).collect::<Vec<_>>());
    let columns = vec![
        Column::from_values(ColumnType::Timespan, time).expect("timespans"),
        Column::from_values(ColumnType::Char, exchange).expect("chars"),
        Column::from_symbol_keys(symbol, domain).expect("keys index the universe"),
        Column::from_symbol_keys(sale, Arc::new(conditions)).expect("keys index the conditions"),
        Column::from_values(ColumnType::Int, volume).expect("ints"),
        Column::from_values(ColumnType::Real, price).expect("reals"),
        Column::from_values(ColumnType::Boolean, stop_stock).expect("booleans"),
        Column::from_values(ColumnType::Short, correction).expect("shorts"),
        Column::from_values(ColumnType::Int, sequence).expect("ints"),
        Column::from_strings(trade_id),
        Column::from_values(ColumnType::Char, source).expect("chars"),
        Column::from_values(ColumnType::Boolean, facility).expect("booleans"),
        Column::from_values(ColumnType::Timespan, participant).expect("timespans"),
        Column::from_values(ColumnType::Timespan, trf_time).expect("timespans"),
        Column::from_values(ColumnType::Boolean, through).expect("booleans"),
    ];
    Table::new(TRADE_SCHEMA.iter().map(|(name, _)| name.to_string()).zip(columns).collect())
        .expect("generated columns have equal lengths")
}

/// Trade sizes in shares: odd lots, round lots and the occasional block. A new size
/// is drawn for most trades (the reference day changes size on 80% of rows).
fn next_volume(last: Option<i32>, rng: &mut Rng) -> i32 {
    match last {
        Some(v) if rng.chance(0.1) => v,
        _ if rng.chance(0.42) => rng.log_uniform(1.0, 100.0) as i32,
        _ if rng.chance(0.9) => 100 * rng.geometric(2.0) as i32,
        _ => ((200.0 / (1.0 - rng.uniform()).powf(1.0 / 1.2)) as i32).min(5_000_000),
    }
}

/// The sale-condition codes (four characters, as in the file) and Zipf weights whose
/// entropy matches the reference column's 3.1 bits.
fn sale_conditions() -> (Vec<String>, Vec<f64>) {
    let mut codes = Vec::new();
    'all: for c2 in [' ', 'F', 'O', '4', '5', '6', '7', '9'] {
        for c4 in [' ', 'I', 'W', 'X', 'M', 'Q'] {
            for c3 in [' ', 'T', 'U', 'Z'] {
                for c1 in ['@', ' '] {
                    codes.push(format!("{c1}{c2}{c3}{c4}"));
                    if codes.len() == SALE_CONDITIONS {
                        break 'all;
                    }
                }
            }
        }
    }
    let share = 3.1 / (SALE_CONDITIONS as f64).log2();
    let s = zipf_exponent(SALE_CONDITIONS, share);
    let weights = (1..=SALE_CONDITIONS).map(|r| (r as f64).powf(-s)).collect();
    (codes, weights)
}

/// Exchange-assigned trade ids: each venue numbers its trades in time order, so the
/// same numbers recur across venues. One venue uses long numeric ids.
fn trade_ids(times: &[i64], venues: &[u8]) -> Vec<String> {
    let mut order: Vec<u32> = (0..times.len() as u32).collect();
    order.sort_by_key(|&r| (times[r as usize], r));
    let mut counters = [0u64; 256];
    let mut ids = vec![String::new(); times.len()];
    for r in order {
        let venue = venues[r as usize];
        counters[venue as usize] += 1;
        let n = counters[venue as usize];
        ids[r as usize] = match venue {
            b'P' => format!("{}", 52_983_525_000_000u64 + n),
            _ => n.to_string(),
        };
    }
    ids
}
