//! The `quote` table: one row per NBBO-file quote, 23 columns with daily TAQ's
//! names, generated instrument by instrument (so rows come sorted by Symbol, Time).

use std::sync::Arc;

use strata_store::progress::{Progress, Unit};
use strata_store::{Column, ColumnType, Table};

use crate::clock::{Bursts, Profile, event_times};
use crate::flags::{Sticky, rare_runs, run_count};
use crate::prices::{PricePath, dollars};
use crate::reference::{QUOTE, QUOTE_ROWS, ReferenceColumn};
use crate::rng::Rng;
use crate::sequence::channel_sequence;
use crate::universe::{Instrument, QUOTE_CHANNELS, allocate, channels_by_activity};

/// The quote table's columns and types, in order.
pub const QUOTE_SCHEMA: [(&str, ColumnType); 23] = [
    ("Time", ColumnType::Timespan),
    ("Exchange", ColumnType::Char),
    ("Symbol", ColumnType::Symbol),
    ("Bid_Price", ColumnType::Float),
    ("Bid_Size", ColumnType::Int),
    ("Offer_Price", ColumnType::Float),
    ("Offer_Size", ColumnType::Int),
    ("Quote_Condition", ColumnType::Char),
    ("Sequence_Number", ColumnType::Int),
    ("National_BBO_Ind", ColumnType::Char),
    ("FINRA_BBO_Indicator", ColumnType::Char),
    ("FINRA_ADF_MPID_Indicator", ColumnType::Char),
    ("Quote_Cancel_Correction", ColumnType::Char),
    ("Source_Of_Quote", ColumnType::Char),
    ("Retail_Interest_Indicator", ColumnType::Char),
    ("Short_Sale_Restriction_Indicator", ColumnType::Char),
    ("LULD_BBO_Indicator", ColumnType::Char),
    ("SIP_Generated_Message_Identifier", ColumnType::Char),
    ("National_BBO_LULD_Indicator", ColumnType::Char),
    ("Participant_Timestamp", ColumnType::Timespan),
    ("FINRA_ADF_Timestamp", ColumnType::Timespan),
    ("FINRA_ADF_Market_Participant_Quote_Indicator", ColumnType::Char),
    ("Security_Status_Indicator", ColumnType::Char),
];

/// Quoting venues (daily TAQ exchange codes) and their shares of quotes.
const QUOTE_VENUES: [(u8, f64); 17] = [
    (b'Q', 0.13),
    (b'P', 0.12),
    (b'Z', 0.1),
    (b'K', 0.09),
    (b'N', 0.07),
    (b'J', 0.07),
    (b'Y', 0.07),
    (b'X', 0.06),
    (b'H', 0.05),
    (b'U', 0.05),
    (b'B', 0.04),
    (b'A', 0.03),
    (b'C', 0.02),
    (b'I', 0.04),
    (b'M', 0.02),
    (b'V', 0.02),
    (b'T', 0.02),
];

fn reference(name: &str) -> &'static ReferenceColumn {
    QUOTE.iter().find(|c| c.name == name).expect("a reference quote column")
}

fn rate(name: &str) -> f64 {
    reference(name).change_rate(QUOTE_ROWS)
}

/// Generates the quote table: `rows` quotes over `universe`, sorted by Symbol, Time.
/// `progress` hears one step in rows, advanced instrument by instrument.
pub fn quotes(universe: &[Instrument], rows: usize, seed: u64, progress: &dyn Progress) -> Table {
    let profile = Profile::us_equities();
    let weights: Vec<f64> = universe.iter().map(|i| i.weight).collect();
    let counts = allocate(&weights, rows, 1);
    let bursts = Bursts { mean_size: 3.0, repeat: 0.06, gap_ns: (1e3, 2e7) };
    let venue = Sticky::with_change_rate(&QUOTE_VENUES, rate("Exchange"));
    let nbbo = Sticky::with_change_rate(
        &[
            (b'2', 0.6),
            (b'0', 0.17),
            (b'4', 0.1),
            (b'1', 0.05),
            (b'A', 0.03),
            (b'C', 0.02),
            (b'3', 0.01),
            (b'E', 0.01),
            (b'G', 0.01),
        ],
        rate("National_BBO_Ind"),
    );
    let retail = Sticky::with_change_rate(
        &[(b' ', 0.9), (b'A', 0.04), (b'B', 0.04), (b'C', 0.02)],
        rate("Retail_Interest_Indicator"),
    );
    // A fresh size repeats the old one about 14% of the time, hence the division.
    let redraw = (rate("Bid_Size") / 0.86).min(1.0);

    let mut time = Vec::with_capacity(rows);
    let mut exchange = Vec::with_capacity(rows);
    let mut symbol = Vec::with_capacity(rows);
    let (mut bid, mut bid_size, mut ask, mut ask_size) =
        (Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows));
    let mut nbbo_ind = Vec::with_capacity(rows);
    let mut source = Vec::with_capacity(rows);
    let mut retail_ind = Vec::with_capacity(rows);
    let mut short_sale = Vec::with_capacity(rows);
    let mut participant = Vec::with_capacity(rows);
    let mut channels = Vec::with_capacity(rows);
    let channel_of = channels_by_activity(&weights, QUOTE_CHANNELS);

    progress.start("generating quotes", rows as u64, Unit::Rows);
    for (index, (instrument, &n)) in universe.iter().zip(&counts).enumerate() {
        let mut rng = Rng::fork(seed, 0x5155_0000 + index as u64);
        let times = event_times(n, &profile, bursts, &mut rng);
        let mut path = PricePath::new(instrument, n);
        let tpd = instrument.ticks_per_dollar();
        let (mut last_venue, mut last_nbbo, mut last_retail) = (None, None, None);
        let (mut last_bid_size, mut last_ask_size) = (None, None);
        for &t in &times {
            let (b, a) = path.quote(&mut rng);
            let v = venue.next(last_venue, &mut rng);
            last_venue = Some(v);
            time.push(t);
            exchange.push(v);
            symbol.push(index as u32);
            bid.push(dollars(b, tpd));
            ask.push(dollars(a, tpd));
            // Sizes change on a share of quotes (the flag decides), else repeat.
            last_bid_size = Some(next_lots(last_bid_size, redraw, &mut rng));
            last_ask_size = Some(next_lots(last_ask_size, redraw, &mut rng));
            bid_size.extend(last_bid_size);
            ask_size.extend(last_ask_size);
            let nb = nbbo.next(last_nbbo, &mut rng);
            last_nbbo = Some(nb);
            nbbo_ind.push(nb);
            let r = retail.next(last_retail, &mut rng);
            last_retail = Some(r);
            retail_ind.push(r);
            source.push(if instrument.nasdaq { b'N' } else { b'C' });
            short_sale.push(instrument.short_sale);
            participant.push(participant_time(t, v, &mut rng));
            channels.push(channel_of[index]);
        }
        progress.advance(n as u64);
    }
    progress.finish();
    let sequence = channel_sequence(&time, &channels, QUOTE_CHANNELS);

    let mut rng = Rng::fork(seed, 0x5155_4c47);
    let mut condition = vec![b'R'; rows];
    rare_runs(&mut condition, b"ABCHLO", run_count(rows, rate("Quote_Condition"), 6), 2.0, &mut rng);
    rare_runs(&mut short_sale, b"DE", run_count(rows, 1e-6, 2), 500.0, &mut rng);
    let mut luld_bbo = vec![b' '; rows];
    rare_runs(&mut luld_bbo, b"A", 1, 50.0, &mut rng);
    let mut sip = vec![b' '; rows];
    rare_runs(&mut sip, b"EF", run_count(rows, rate("SIP_Generated_Message_Identifier"), 2), 1.0, &mut rng);
    let mut nbbo_luld = vec![b' '; rows];
    rare_runs(&mut nbbo_luld, b"ABCDEFG", run_count(rows, rate("National_BBO_LULD_Indicator"), 7), 600.0, &mut rng);
    let mut status = vec![b' '; rows];
    rare_runs(&mut status, b"HTRQPM", run_count(rows, rate("Security_Status_Indicator"), 6), 100.0, &mut rng);

    let domain = Arc::new(universe.iter().map(|i| i.name.clone()).collect::<Vec<_>>());
    let chars = |v: Vec<u8>| Column::from_values(ColumnType::Char, v).expect("char values");
    let constant = || chars(vec![b' '; rows]);
    let columns = vec![
        Column::from_values(ColumnType::Timespan, time).expect("timespans"),
        chars(exchange),
        Column::from_symbol_keys(symbol, domain).expect("keys index the universe"),
        Column::from_values(ColumnType::Float, bid).expect("floats"),
        Column::from_values(ColumnType::Int, bid_size).expect("ints"),
        Column::from_values(ColumnType::Float, ask).expect("floats"),
        Column::from_values(ColumnType::Int, ask_size).expect("ints"),
        chars(condition),
        Column::from_values(ColumnType::Int, sequence).expect("ints"),
        chars(nbbo_ind),
        constant(),
        constant(),
        constant(),
        chars(source),
        chars(retail_ind),
        chars(short_sale),
        chars(luld_bbo),
        chars(sip),
        chars(nbbo_luld),
        Column::from_values(ColumnType::Timespan, participant).expect("timespans"),
        Column::from_values(ColumnType::Timespan, vec![0i64; rows]).expect("timespans"),
        constant(),
        chars(status),
    ];
    Table::new(QUOTE_SCHEMA.iter().map(|(name, _)| name.to_string()).zip(columns).collect())
        .expect("generated columns have equal lengths")
}

/// Quote sizes in round lots: mostly a few lots, sometimes hundreds. A new size is
/// drawn with probability `redraw`, else the last one stands.
fn next_lots(last: Option<i32>, redraw: f64, rng: &mut Rng) -> i32 {
    match last {
        Some(size) if !rng.chance(redraw) => size,
        _ if rng.chance(0.93) => rng.geometric(4.0) as i32,
        // A heavy tail: block-sized quotes from a Pareto law.
        _ => (5.0 / (1.0 - rng.uniform()).powf(1.0 / 1.1)).min(500_000.0) as i32,
    }
}

/// When the venue stamped the quote: tens of microseconds to milliseconds before
/// the SIP did. Some venues stamp whole microseconds.
pub(crate) fn participant_time(sip_time: i64, venue: u8, rng: &mut Rng) -> i64 {
    let stamped = sip_time - rng.log_uniform(2e4, 2e6) as i64;
    let stamped = if matches!(venue, b'B' | b'X' | b'C' | b'M') { stamped / 1000 * 1000 } else { stamped };
    stamped.max(0)
}
