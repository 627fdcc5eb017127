//! Tests of the generated day: schema, determinism, order, and the written partition.

use strata_store::progress::{ProgressLog, Unit};
use strata_store::{Attribute, ColumnType, Database, TableLocation, TableWrite, WriteMode};

use super::*;

fn small() -> TaqConfig {
    TaqConfig { quotes: 20_000, trades: 2_000, syms: 40, seed: 11, ..TaqConfig::default() }
}

#[test]
fn tables_have_the_reference_names_and_types() {
    let day = generate(&small());
    for (table, schema, reference) in
        [(&day.quote, &QUOTE_SCHEMA[..], &reference::QUOTE[..]), (&day.trade, &TRADE_SCHEMA[..], &reference::TRADE[..])]
    {
        assert_eq!(table.names().len(), reference.len());
        for ((name, ty), r) in schema.iter().zip(reference) {
            assert_eq!(*name, r.name);
            assert_eq!(ty.name(), r.ty, "{name}");
            assert_eq!(table.column(name).unwrap().ty(), *ty, "{name}");
        }
    }
    assert_eq!(day.quote.len(), 20_000);
    assert_eq!(day.trade.len(), 2_000);
}

#[test]
fn the_same_seed_gives_the_same_day_and_another_seed_does_not() {
    let config = small();
    assert_eq!(generate(&config), generate(&config));
    let other = generate(&TaqConfig { seed: 12, ..config });
    assert_ne!(other.quote, generate(&small()).quote);
}

#[test]
fn rows_are_sorted_by_symbol_then_time_and_prices_are_sane() {
    let day = generate(&small());
    for table in [&day.quote, &day.trade] {
        let sym = table.column("Symbol").unwrap();
        let time = table.column("Time").unwrap().values::<i64>();
        let keys = sym.values::<u32>();
        for i in 1..table.len() {
            let (a, b) = (sym.symbol(i - 1), sym.symbol(i));
            assert!(a < b || a == b && time[i - 1] <= time[i], "row {i}: {a} {} then {b} {}", time[i - 1], time[i]);
        }
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "keys follow the sorted names");
    }
    let bid = day.quote.column("Bid_Price").unwrap().values::<f64>();
    let ask = day.quote.column("Offer_Price").unwrap().values::<f64>();
    assert!(bid.iter().zip(ask).all(|(b, a)| *b > 0.0 && a > b));
    let seq = day.quote.column("Sequence_Number").unwrap().values::<i32>();
    let keys = day.quote.column("Symbol").unwrap().values::<u32>();
    assert!((1..seq.len()).all(|i| keys[i] != keys[i - 1] || seq[i] > seq[i - 1]), "sequence rises per symbol");
}

#[test]
fn normalised_tables_keep_the_values_under_short_names() {
    let day = generate(&small());
    let (quote_norm, trade_norm) = normalise(&day);
    assert_eq!(trade_norm.names(), ["sym", "time", "ex", "price", "size"]);
    let types: Vec<ColumnType> = quote_norm.columns().iter().map(|c| c.ty()).collect();
    use ColumnType::*;
    assert_eq!(types, [Symbol, Timespan, Char, Float, Int, Float, Int]);
    assert_eq!(quote_norm.column("bid").unwrap(), day.quote.column("Bid_Price").unwrap());
    let real = day.trade.column("TradePrice").unwrap().values::<f32>();
    let float = trade_norm.column("price").unwrap().values::<f64>();
    assert!(real.iter().zip(float).all(|(r, f)| (*r as f64 - f).abs() < 1e-4));
    assert!(float.iter().all(|f| (f * 1e4 - (f * 1e4).round()).abs() < 1e-6), "4 decimals");
}

#[test]
fn write_day_writes_four_parted_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let config = small();
    let log = ProgressLog::default();
    let day = generate_with_progress(&config, &log);
    assert_eq!(day, generate(&config), "progress changes nothing");
    write_day_with_progress(&db, config.date, &day, &TableWrite::default(), WriteMode::Fail, &log).unwrap();
    assert_eq!(db.tables(Some(config.date)).unwrap(), ["quote", "quoteNorm", "trade", "tradeNorm"]);
    let steps = log.complete_steps().unwrap();
    let named: Vec<_> = steps.iter().map(|s| (s.name.as_str(), s.unit)).collect();
    assert_eq!(
        named,
        [
            ("generating quotes", Unit::Rows),
            ("generating trades", Unit::Rows),
            ("writing quote", Unit::Bytes),
            ("writing trade", Unit::Bytes),
            ("writing quoteNorm", Unit::Bytes),
            ("writing tradeNorm", Unit::Bytes),
        ]
    );
    assert_eq!((steps[0].total, steps[1].total), (config.quotes as u64, config.trades as u64));
    assert_eq!(steps[0].advances.len(), config.syms, "quotes are told instrument by instrument");
    assert_eq!(steps[2].advances.len(), QUOTE_SCHEMA.len(), "a table's write is told column by column");
    for (table, sym) in [("quote", "Symbol"), ("quoteNorm", "sym"), ("trade", "Symbol"), ("tradeNorm", "sym")] {
        let location = TableLocation::Partition(config.date, table.to_string());
        let stats = db.open_table(&location).unwrap().stats().unwrap();
        let sym_stats = stats.iter().find(|s| s.name == sym).unwrap();
        assert_eq!(sym_stats.attribute, Attribute::Parted, "{table}");
    }
    let back = db.read_table(&TableLocation::Partition(config.date, "trade".into())).unwrap();
    assert_eq!(back.column("TradeId").unwrap().string(0), day.trade.column("TradeId").unwrap().string(0));
    assert_eq!(back.column("Symbol").unwrap().symbol(10), day.trade.column("Symbol").unwrap().symbol(10));
}

#[test]
fn writing_a_day_again_refuses_or_replaces_never_doubles() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let config = small();
    let day = generate(&config);
    let rows = |name: &str| db.read_table(&TableLocation::Partition(config.date, name.to_string())).unwrap().len();
    write_day(&db, config.date, &day, &TableWrite::default(), WriteMode::Fail).unwrap();
    let (quotes, trades) = (rows("quoteNorm"), rows("tradeNorm"));
    let err = write_day(&db, config.date, &day, &TableWrite::default(), WriteMode::Fail).unwrap_err();
    assert!(err.to_string().contains("already holds"), "{err}");
    write_day(&db, config.date, &day, &TableWrite::default(), WriteMode::Replace).unwrap();
    assert_eq!((rows("quoteNorm"), rows("tradeNorm")), (quotes, trades));
    assert_eq!(rows("quote"), config.quotes);
}

#[test]
fn a_day_read_back_from_a_database_is_the_day_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let config = small();
    let day = generate(&config);
    write_day(&db, config.date, &day, &TableWrite::default(), WriteMode::Fail).unwrap();
    let read = |name: &str| db.read_table(&TableLocation::Partition(config.date, name.to_string())).unwrap();
    // Out of order on the way in (the first symbol's quotes last): the day sorts it
    // again; the sort is stable, so quotes at the same time keep their order.
    let quote = read("quote");
    let symbols = quote.column("Symbol").unwrap();
    let first = symbols.symbol(0);
    let (mut moved, mut kept): (Vec<usize>, Vec<usize>) = (0..quote.len()).partition(|&i| symbols.symbol(i) == first);
    kept.append(&mut moved);
    let back = TaqDay::from_tables(quote.take(&kept), read("trade")).unwrap();
    assert_eq!(back, day);
}

#[test]
fn tables_without_the_taq_columns_are_refused_by_name() {
    let day = generate(&small());
    let names: Vec<&str> = day.trade.names().iter().map(String::as_str).filter(|n| *n != "TradePrice").collect();
    let without = Table::new(names.iter().map(|n| (n.to_string(), day.trade.column(n).unwrap().clone())).collect());
    let error = TaqDay::from_tables(day.quote.clone(), without.unwrap()).unwrap_err().to_string();
    assert!(error.contains("table trade has no column TradePrice (real)"), "{error}");

    let sizes = Column::from_values(ColumnType::Float, vec![1.0f64; day.quote.len()]).unwrap();
    let retyped = day.quote.with_column("Bid_Size", sizes).unwrap();
    let error = TaqDay::from_tables(retyped, day.trade).unwrap_err().to_string();
    assert!(error.contains("table quote column Bid_Size is float, expected int"), "{error}");
}
