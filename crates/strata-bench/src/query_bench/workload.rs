//! The analyst workload of `strata bench query`: what a TAQ analyst asks of a day of
//! `quoteNorm(sym, time, ex, bid, bsize, ask, asize)` and
//! `tradeNorm(sym, time, ex, price, size)`, by family.
//!
//! Each query is one SQL text that Strata and DuckDB both run (Strata's dialect
//! takes DuckDB's forms: `time BETWEEN '10:00' AND '10:05'`, `date + time`,
//! `time_bucket`, windows ordered by time with `RANGE INTERVAL` frames,
//! `weighted_avg`, `first(x ORDER BY time)`, `ASOF JOIN ... USING`, `PIVOT`). The
//! Polars form of each query, under the same name, is in `polars_workload.py`.

use strata_query::Engine;

use super::{BenchResult, strings};

/// Symbols and exchanges the workload names, picked from the data so that every
/// engine sees the same and the queries return rows on any generated day.
#[derive(Clone, Debug)]
pub struct WorkloadParameters {
    /// The partition date, `YYYY-MM-DD`.
    pub date: String,
    /// One symbol of middling activity.
    pub one_sym: String,
    /// Fifty symbols spread over the activity ranks.
    pub syms50: Vec<String>,
    /// The thousand most traded symbols (all of them on a smaller day).
    pub syms1000: Vec<String>,
    /// The exchanges that trade or quote, sorted (the pivots' columns).
    pub exchanges: Vec<String>,
    /// Five active symbols with plain names (a pivot's columns).
    pub pivot_syms: Vec<String>,
}

/// Symbol lists shorter than these are refused: the families would not differ.
const MIN_SYMS: usize = 50;

/// Picks the [`WorkloadParameters`] from the day in `engine`.
pub fn pick_workload_parameters(engine: &Engine, date: &str) -> BenchResult<WorkloadParameters> {
    let ranked = strings(&engine.sql("SELECT sym FROM tradeNorm GROUP BY sym ORDER BY count(*) DESC, sym")?, "sym");
    if ranked.len() < MIN_SYMS {
        return Err(
            format!("the workload needs at least {MIN_SYMS} traded symbols; tradeNorm has {}", ranked.len()).into()
        );
    }
    let step = ranked.len() / 50;
    let plain = |s: &&String| s.chars().all(|c| c.is_ascii_alphanumeric());
    let exchanges = strings(
        &engine.sql("SELECT DISTINCT CAST(ex AS VARCHAR) AS ex FROM tradeNorm UNION SELECT DISTINCT CAST(ex AS VARCHAR) FROM quoteNorm ORDER BY ex")?,
        "ex",
    );
    Ok(WorkloadParameters {
        date: date.to_string(),
        one_sym: ranked[ranked.len() / 2].clone(),
        syms50: ranked.iter().step_by(step).take(50).cloned().collect(),
        syms1000: ranked.iter().take(1000).cloned().collect(),
        exchanges: exchanges
            .into_iter()
            .filter(|e| e.chars().all(|c| c.is_ascii_alphanumeric()) && !e.is_empty())
            .collect(),
        pivot_syms: ranked.iter().filter(plain).take(5).cloned().collect(),
    })
}

/// One query of the workload.
#[derive(Clone, Debug)]
pub struct WorkloadQuery {
    /// Its family (see [`FAMILIES`]).
    pub family: &'static str,
    /// A short unique name, also the key of its Polars form.
    pub name: &'static str,
    /// The SQL Strata runs, and DuckDB unless [`Self::duckdb_sql`] is given.
    pub sql: String,
    /// DuckDB's text of the same question, where it differs.
    pub duckdb_sql: Option<String>,
}

/// The families, in report order, with what they cover.
pub const FAMILIES: [(&str, &str); 10] = [
    ("select", "raw rows by time window and by 1, 50 and 1000 symbols"),
    ("derive", "derived columns (mid, spread, notional, lots) with sorts"),
    ("aggregate", "scalar and grouped aggregates: VWAP, stddev, corr, median, distinct"),
    ("bars", "time-bucketed OHLCV bars, 1, 5 and 10 minutes"),
    ("pivot", "pivots by exchange and by symbol, with forward fill"),
    ("window", "cumulative and rolling (ROWS and RANGE INTERVAL) windows per symbol"),
    ("extreme", "group-wise extreme rows (largest, top 3, latest, widest)"),
    ("sequence", "lagged differences, gaps, islands of upticks, changes"),
    ("asof", "as-of joins of trades to the prevailing quote: 1, 50, 1000 symbols, extra key"),
    (
        "forms",
        "DuckDB's forms as analysts write them: rowid, COLUMNS, WITH PIVOT, CASE pivots, DATE + INTERVAL, \
      whole-partition windows, key-less ASOF against a small table",
    ),
];

fn list(syms: &[String]) -> String {
    syms.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
}

/// An error naming the known families if `families` names another.
pub fn check_families(families: &[String]) -> BenchResult<()> {
    match families.iter().find(|f| !FAMILIES.iter().any(|(known, _)| known == f)) {
        Some(unknown) => {
            let known: Vec<&str> = FAMILIES.iter().map(|(name, _)| *name).collect();
            Err(format!("no query family {unknown}; the families are {}", known.join(", ")).into())
        }
        None => Ok(()),
    }
}

/// The queries of `queries` in the named `families` (all when none is named).
pub fn of_families(queries: Vec<WorkloadQuery>, families: &[String]) -> BenchResult<Vec<WorkloadQuery>> {
    check_families(families)?;
    Ok(queries.into_iter().filter(|q| families.is_empty() || families.iter().any(|f| f == q.family)).collect())
}

/// The workload's queries for the data `p` describes.
pub fn workload(p: &WorkloadParameters) -> Vec<WorkloadQuery> {
    let one = format!("'{}'", p.one_sym);
    let (s50, s1000) = (list(&p.syms50), list(&p.syms1000));
    let exchanges = list(&p.exchanges);
    let pivot_syms = list(&p.pivot_syms);
    let q = |family, name, sql: String| WorkloadQuery { family, name, sql, duckdb_sql: None };
    let q2 = |family, name, sql: String, duckdb_sql: String| WorkloadQuery {
        family,
        name,
        sql,
        duckdb_sql: Some(duckdb_sql),
    };
    let quote_cols = "sym, time, ex, bid, bsize, ask, asize";
    let trade_cols = "sym, time, ex, price, size";
    let ohlcv = "first(price ORDER BY time) AS open, max(price) AS high, min(price) AS low, \
                 last(price ORDER BY time) AS close, sum(size) AS volume";
    let by_sym = "PARTITION BY sym ORDER BY time";
    // Forward fill of each exchange's column of a pivot: the last non-null so far.
    let ffill: Vec<String> = p
        .exchanges
        .iter()
        .map(|e| format!("last_value(\"{e}\" IGNORE NULLS) OVER (ORDER BY bar ROWS UNBOUNDED PRECEDING) AS \"{e}\""))
        .collect();
    let ranked = |order: &str, keep: &str| {
        format!(
            "SELECT sym, time, price, size FROM (SELECT {trade_cols}, row_number() OVER (PARTITION BY sym ORDER BY {order}) AS r \
             FROM tradeNorm) WHERE {keep}"
        )
    };
    let asof = |filter: &str| {
        format!(
            "SELECT t.sym, t.time, t.price, t.size, q.bid, q.ask FROM (SELECT {trade_cols} FROM tradeNorm WHERE {filter}) t \
             ASOF JOIN (SELECT {quote_cols} FROM quoteNorm WHERE {filter}) q USING (sym, time)"
        )
    };
    let case_sums: Vec<String> =
        p.exchanges.iter().map(|e| format!("sum(CASE WHEN ex = '{e}' THEN size END) AS \"{e}\"")).collect();
    // A key-less as-of join against a seven-row table of session bounds.
    let sessions = "WITH sessions(start, session) AS (VALUES (TIME '00:00:00', 'pre'), (TIME '04:00:00', 'early'), \
                    (TIME '09:30:00', 'open'), (TIME '10:00:00', 'morning'), (TIME '12:00:00', 'midday'), \
                    (TIME '15:30:00', 'close'), (TIME '16:00:00', 'after')) SELECT t.sym, t.time, t.price, s.session \
                    FROM tradeNorm t ASOF JOIN sessions s ON t.time >= s.start";
    vec![
        q("select", "sel_window_quotes", format!("SELECT {quote_cols} FROM quoteNorm WHERE time BETWEEN '10:00' AND '10:05'")),
        q("select", "sel_window_trades", format!("SELECT {trade_cols} FROM tradeNorm WHERE time >= '15:30' AND time < '16:00'")),
        q("select", "sel_1sym_quotes", format!("SELECT {quote_cols} FROM quoteNorm WHERE sym = {one}")),
        q("select", "sel_50sym_trades", format!("SELECT {trade_cols} FROM tradeNorm WHERE sym IN ({s50})")),
        q(
            "select",
            "sel_1000sym_hour",
            format!("SELECT sym, time, bid, ask FROM quoteNorm WHERE sym IN ({s1000}) AND time BETWEEN '11:00' AND '12:00'"),
        ),
        q(
            "derive",
            "der_spread_50sym",
            format!(
                "SELECT sym, time, (bid + ask) / 2 AS mid, ask - bid AS spread, 10000 * (ask - bid) / ((bid + ask) / 2) AS bps \
                 FROM quoteNorm WHERE sym IN ({s50}) ORDER BY sym, time"
            ),
        ),
        q(
            "derive",
            "der_top_notional",
            "SELECT sym, time, price, size, price * size AS notional FROM tradeNorm ORDER BY notional DESC, sym, time LIMIT 100"
                .into(),
        ),
        q(
            "derive",
            "der_lots_50sym",
            format!(
                "SELECT sym, time, size, size // 100 AS round_lots, CASE WHEN size >= 10000 THEN 'block' WHEN size >= 100 \
                 THEN 'round' ELSE 'odd' END AS lot FROM tradeNorm WHERE sym IN ({s50}) ORDER BY time, sym"
            ),
        ),
        q(
            "derive",
            "der_session_notional",
            "SELECT sym, time, price * size AS notional, ex FROM tradeNorm WHERE time BETWEEN '09:30' AND '16:00' \
             ORDER BY time, sym"
                .into(),
        ),
        q(
            "aggregate",
            "agg_day_vwap",
            "SELECT count(*) AS n, sum(size) AS volume, weighted_avg(price, size) AS vwap, avg(price) AS mean_price \
             FROM tradeNorm"
                .into(),
        ),
        q(
            "aggregate",
            "agg_vwap_by_sym",
            "SELECT sym, count(*) AS n, sum(size) AS volume, weighted_avg(price, size) AS vwap, min(price) AS low, \
             max(price) AS high FROM tradeNorm GROUP BY sym"
                .into(),
        ),
        q(
            "aggregate",
            "agg_stats_by_sym",
            "SELECT sym, stddev_samp(bid) AS sd_bid, stddev_samp(ask) AS sd_ask, corr(bid, ask) AS rho, \
             avg(ask - bid) AS spread FROM quoteNorm GROUP BY sym"
                .into(),
        ),
        q(
            "aggregate",
            "agg_median_by_sym",
            "SELECT sym, median(price) AS med_price, median(size * 1.0) AS med_size FROM tradeNorm GROUP BY sym".into(),
        ),
        q(
            "aggregate",
            "agg_by_sym_ex",
            "SELECT sym, ex, count(*) AS n, avg(bsize) AS bsize, max(ask) AS max_ask FROM quoteNorm GROUP BY sym, ex".into(),
        ),
        q(
            "aggregate",
            "agg_distinct_by_ex",
            "SELECT ex, count(DISTINCT sym) AS syms, count(*) AS n FROM tradeNorm GROUP BY ex".into(),
        ),
        q(
            "aggregate",
            "agg_weighted_mid_50sym",
            format!(
                "SELECT sym, weighted_avg((bid + ask) / 2, bsize + asize) AS wmid FROM quoteNorm WHERE sym IN ({s50}) \
                 GROUP BY sym"
            ),
        ),
        q(
            "bars",
            "bars_1m_all",
            format!(
                "SELECT sym, time_bucket(INTERVAL '1 minute', date + time) AS bar, {ohlcv} FROM tradeNorm GROUP BY sym, bar"
            ),
        ),
        q(
            "bars",
            "bars_5m_50sym",
            format!(
                "SELECT sym, time_bucket(INTERVAL '5 minutes', date + time) AS bar, {ohlcv}, weighted_avg(price, size) AS vwap \
                 FROM tradeNorm WHERE sym IN ({s50}) GROUP BY sym, bar"
            ),
        ),
        q(
            "bars",
            "bars_10m_quotes",
            "SELECT sym, time_bucket(INTERVAL '10 minutes', date + time) AS bar, avg((bid + ask) / 2) AS mid, \
             last(bid ORDER BY time) AS bid, last(ask ORDER BY time) AS ask, count(*) AS n FROM quoteNorm GROUP BY sym, bar"
                .into(),
        ),
        q(
            "bars",
            "bars_1m_spread_1sym",
            format!(
                "SELECT time_bucket(INTERVAL '1 minute', date + time) AS bar, avg(ask - bid) AS spread, \
                 max(ask - bid) AS max_spread, count(*) AS n FROM quoteNorm WHERE sym = {one} GROUP BY bar"
            ),
        ),
        q(
            "pivot",
            "piv_volume_by_ex",
            format!(
                "SELECT * FROM (SELECT sym, ex, size FROM tradeNorm) PIVOT (sum(size) FOR ex IN ({exchanges}))"
            ),
        ),
        q(
            "pivot",
            "piv_bid_by_ex_ffill",
            format!(
                "SELECT bar, {} FROM (SELECT time_bucket(INTERVAL '1 minute', date + time) AS bar, ex, bid FROM quoteNorm \
                 WHERE sym IN ({s50})) PIVOT (max(bid) FOR ex IN ({exchanges}))",
                ffill.join(", ")
            ),
        ),
        q(
            "pivot",
            "piv_mid_by_sym",
            format!(
                "SELECT * FROM (SELECT time_bucket(INTERVAL '5 minutes', date + time) AS bar, sym, (bid + ask) / 2 AS mid \
                 FROM quoteNorm WHERE sym IN ({pivot_syms})) PIVOT (avg(mid) FOR sym IN ({pivot_syms}))"
            ),
        ),
        q(
            "window",
            "win_cum_volume",
            format!("SELECT sym, time, size, sum(size) OVER ({by_sym} ROWS UNBOUNDED PRECEDING) AS cum_volume FROM tradeNorm"),
        ),
        q(
            "window",
            "win_ma20_50sym",
            format!(
                "SELECT sym, time, price, avg(price) OVER ({by_sym} ROWS BETWEEN 19 PRECEDING AND CURRENT ROW) AS ma20 \
                 FROM tradeNorm WHERE sym IN ({s50})"
            ),
        ),
        q(
            "window",
            "win_vol5m_1000sym",
            format!(
                "SELECT sym, time, size, sum(size) OVER ({by_sym} RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND CURRENT ROW) \
                 AS vol_5m FROM tradeNorm WHERE sym IN ({s1000})"
            ),
        ),
        q(
            "window",
            "win_mid1m_50sym",
            format!(
                "SELECT sym, time, avg((bid + ask) / 2) OVER ({by_sym} RANGE BETWEEN INTERVAL '1 minute' PRECEDING AND \
                 CURRENT ROW) AS mid_1m FROM quoteNorm WHERE sym IN ({s50})"
            ),
        ),
        q(
            "window",
            "win_cum_vwap_50sym",
            format!(
                "SELECT sym, time, sum(price * size) OVER ({by_sym} ROWS UNBOUNDED PRECEDING) / \
                 sum(size) OVER ({by_sym} ROWS UNBOUNDED PRECEDING) AS vwap FROM tradeNorm WHERE sym IN ({s50})"
            ),
        ),
        q("extreme", "ext_largest_trade", ranked("size DESC, time", "r = 1")),
        q("extreme", "ext_top3_notional", ranked("price * size DESC, time", "r <= 3")),
        q(
            "extreme",
            "ext_latest_quote",
            format!(
                "SELECT sym, time, bid, ask FROM (SELECT {quote_cols}, row_number() OVER (PARTITION BY sym ORDER BY time DESC) \
                 AS r FROM quoteNorm) WHERE r = 1"
            ),
        ),
        // Dedup by key (issue 48): almost every (sym, time) its own group.
        q(
            "extreme",
            "ext_dedup_sym_time",
            format!(
                "SELECT sym, time, bid, ask FROM (SELECT {quote_cols}, row_number() OVER (PARTITION BY sym, time ORDER BY \
                 bid DESC, ask DESC, bsize DESC, asize DESC, ex) AS r FROM quoteNorm) WHERE r = 1"
            ),
        ),
        q(
            "extreme",
            "ext_widest_spread",
            format!(
                "SELECT sym, time, bid, ask FROM (SELECT {quote_cols}, row_number() OVER (PARTITION BY sym ORDER BY ask - bid \
                 DESC, time) AS r FROM quoteNorm WHERE sym IN ({s1000})) WHERE r = 1"
            ),
        ),
        q(
            "sequence",
            "seq_lag_diff_50sym",
            format!(
                "SELECT sym, time, price, price - lag(price) OVER ({by_sym}) AS dprice, \
                 size - lag(size) OVER ({by_sym}) AS dsize FROM tradeNorm WHERE sym IN ({s50})"
            ),
        ),
        q(
            "sequence",
            "seq_log_return_50sym",
            format!("SELECT sym, time, ln(price / lag(price) OVER ({by_sym})) AS ret FROM tradeNorm WHERE sym IN ({s50})"),
        ),
        q(
            "sequence",
            "seq_gaps",
            format!(
                "SELECT sym, count(*) AS gaps FROM (SELECT sym, time, lag(time) OVER ({by_sym}) AS prev FROM tradeNorm) \
                 WHERE prev < time - INTERVAL '1 minute' GROUP BY sym"
            ),
        ),
        q(
            "sequence",
            "seq_uptick_islands",
            format!(
                "WITH d AS (SELECT sym, time, CASE WHEN price > lag(price) OVER ({by_sym}) THEN 1 ELSE 0 END AS up \
                 FROM tradeNorm), g AS (SELECT sym, up, sum(1 - up) OVER ({by_sym} ROWS UNBOUNDED PRECEDING) AS grp FROM d) \
                 SELECT sym, count(*) AS runs, max(run) AS longest FROM (SELECT sym, grp, sum(up) AS run FROM g \
                 GROUP BY sym, grp HAVING sum(up) > 0) GROUP BY sym"
            ),
        ),
        q(
            "sequence",
            "seq_bid_changes",
            format!(
                "SELECT sym, count(*) AS changes FROM (SELECT sym, bid, lag(bid) OVER ({by_sym}) AS prev FROM quoteNorm \
                 WHERE sym IN ({s1000})) WHERE bid <> prev GROUP BY sym"
            ),
        ),
        q("asof", "asof_1sym", asof(&format!("sym = {one}"))),
        q("asof", "asof_50sym", asof(&format!("sym IN ({s50})"))),
        q("asof", "asof_1000sym", asof(&format!("sym IN ({s1000})"))),
        q(
            "asof",
            "asof_all_by_ex",
            "SELECT t.sym, t.ex, t.time, t.price, q.bid, q.ask, q.time AS quote_time FROM tradeNorm t \
             ASOF JOIN quoteNorm q USING (sym, ex, time)"
                .into(),
        ),
        q(
            "asof",
            "asof_effective_spread",
            "SELECT t.sym, count(*) AS n, avg(2 * abs(t.price - (q.bid + q.ask) / 2) / ((q.bid + q.ask) / 2)) AS eff_spread \
             FROM tradeNorm t ASOF JOIN quoteNorm q USING (sym, time) GROUP BY t.sym"
                .into(),
        ),
        q(
            "forms",
            "form_rowid_sample",
            "SELECT rowid, sym, time, bid, ask FROM quoteNorm WHERE rowid % 1000 = 0".into(),
        ),
        // Dedup keeping the last row stored: DuckDB's QUALIFY idiom over rowid.
        q(
            "forms",
            "form_rowid_dedup_last",
            "SELECT sym, time, bid, ask FROM quoteNorm QUALIFY row_number() OVER (PARTITION BY sym, time ORDER BY rowid \
             DESC) = 1"
                .into(),
        ),
        q2(
            "forms",
            "form_date_plus_interval",
            format!(
                "SELECT sym, time, price, size FROM tradeNorm WHERE time >= DATE '{}' + INTERVAL '15 hours 30 minutes'",
                p.date
            ),
            format!(
                "SELECT sym, time, price, size FROM tradeNorm WHERE date + time >= DATE '{}' + INTERVAL '15 hours 30 \
                 minutes'",
                p.date
            ),
        ),
        q(
            "forms",
            "form_columns_regex",
            "SELECT sym, max(COLUMNS('^(bid|ask)$')), min(COLUMNS('size$')) FROM quoteNorm GROUP BY sym".into(),
        ),
        q(
            "forms",
            "form_with_pivot",
            format!("WITH t AS (SELECT sym, ex, size FROM tradeNorm) PIVOT t ON ex IN ({exchanges}) USING sum(size) GROUP BY sym"),
        ),
        q(
            "forms",
            "form_pivot_case_sums",
            format!("SELECT sym, {} FROM tradeNorm GROUP BY sym", case_sums.join(", ")),
        ),
        q(
            "forms",
            "form_window_max_by_ex",
            "SELECT sym, time, ex, price, max(price) OVER (PARTITION BY ex) AS hi FROM tradeNorm".into(),
        ),
        q(
            "forms",
            "form_window_share_by_sym",
            "SELECT sym, time, size, size * 1.0 / sum(size) OVER (PARTITION BY sym) AS share, \
             count(*) OVER (PARTITION BY sym, ex) AS n_ex FROM tradeNorm"
                .into(),
        ),
        q(
            "forms",
            "form_groupwise_max",
            "SELECT sym, time, price FROM tradeNorm QUALIFY price = max(price) OVER (PARTITION BY sym)".into(),
        ),
        q("forms", "form_asof_sessions", sessions.into()),
    ]
}
