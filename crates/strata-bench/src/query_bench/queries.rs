//! Seed 000's fourteen queries ("Query response times"), in Strata SQL, DuckDB SQL
//! and Polars, with the same parameters for all three.
//!
//! q's `each` (one query per symbol, results razed) runs as one statement per
//! symbol; `peach` (the same in parallel) as one statement with `sym IN (...)`, which
//! each engine parallelises itself. `aj[sym`time`ex; ...]` is read as a market-data
//! user means it: match symbol and exchange, as of time.

/// Values the queries need, picked from the data so every engine sees the same.
#[derive(Clone, Debug)]
pub struct Parameters {
    /// The partition date, `YYYY-MM-DD`.
    pub date: String,
    /// A few active symbols (q's `someSyms`).
    pub some_syms: Vec<String>,
    /// Rarely quoted symbols (q's `infreqIdList`).
    pub infrequent: Vec<String>,
    /// One mid-activity symbol (the seed's `VFVA`).
    pub one_sym: String,
    /// One rare symbol (the seed's `CIIG.W`).
    pub rare_sym: String,
    /// Trade size above which about 0.1% of trades lie (the seed's 500000).
    pub big_size: i64,
    /// Trade size above which about 0.05% of trades lie (the seed's 700000).
    pub bigger_size: i64,
    /// Quote depth `bsize + asize` above which some infrequent quotes lie (the seed's 4000).
    pub deep: i64,
    /// Stored columns of quote, trade, quoteNorm and tradeNorm.
    pub quote_columns: Vec<String>,
    /// Stored columns of trade.
    pub trade_columns: Vec<String>,
}

/// One query of the set.
#[derive(Clone, Debug)]
pub struct Query {
    /// Short name (`q01` ...) and what it does.
    pub name: String,
    /// The q original, for the report.
    pub q: &'static str,
    /// Strata statements, run in order.
    pub strata: Vec<String>,
    /// DuckDB statements over views of the Parquet files.
    pub duckdb: Vec<String>,
    /// A Python expression giving a list of Polars lazy frames.
    pub polars: String,
}

fn list(syms: &[String]) -> String {
    syms.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
}

fn py_list(syms: &[String]) -> String {
    format!("[{}]", list(syms))
}

/// The fourteen queries.
pub fn seed_queries(p: &Parameters) -> Vec<Query> {
    let d = format!("date = '{}'", p.date);
    let qcols = p.quote_columns.join(", ");
    let tcols = p.trade_columns.join(", ");
    let (some, infreq) = (list(&p.some_syms), list(&p.infrequent));
    let stats = |sym: &str, strata: bool| {
        let (first, wsum_a, wsum_b, sdev, cor) = if strata {
            ("first(sym)", "wsum(asize, ask)", "wsum(bsize, bid)", "sdev", "cor")
        } else {
            ("first(sym)", "sum(asize * ask)", "sum(bsize * bid)", "stddev_samp", "corr")
        };
        format!(
            "{first} AS sym, {wsum_a} AS wsumAsk, {wsum_b} AS wsumBid, {sdev}(ask) AS sdevask, {sdev}(bid) AS sdevbid, \
             {cor}(ask, bid) AS corPrice, {cor}(asize, bsize) AS corSize FROM quoteNorm WHERE {sym}"
        )
    };
    let polars_stats = "pl.col('sym').first(), (pl.col('asize') * pl.col('ask')).sum().alias('wsumAsk'), \
        (pl.col('bsize') * pl.col('bid')).sum().alias('wsumBid'), pl.col('ask').std().alias('sdevask'), \
        pl.col('bid').std().alias('sdevbid'), pl.corr('ask', 'bid').alias('corPrice'), \
        pl.corr('asize', 'bsize').alias('corSize')";
    let each = |sql: &dyn Fn(&str) -> String| p.infrequent.iter().map(|s| sql(s)).collect::<Vec<_>>();
    vec![
        Query {
            name: "q01 quote i<N".into(),
            q: "select from quote where date=d, i<500000000",
            strata: vec![format!("SELECT {qcols} FROM quote WHERE {d} AND i < 500000000")],
            duckdb: vec!["SELECT * FROM quote LIMIT 500000000".into()],
            polars: "[quote.head(500000000)]".into(),
        },
        Query {
            name: "q02 aj sym,ex big trades".into(),
            q: "aj[`sym`time`ex; select from tradeNorm where date=d, size>500000; select from quoteNorm where date=d]",
            strata: vec![format!(
                "SELECT t.sym, t.time, t.ex, t.price, t.size, q.bid, q.bsize, q.ask, q.asize FROM \
                 (SELECT sym, time, ex, price, size FROM tradeNorm WHERE {d} AND size > {big}) t ASOF LEFT JOIN \
                 (SELECT sym, time, ex, bid, bsize, ask, asize FROM quoteNorm WHERE {d}) q \
                 ON t.sym = q.sym AND t.ex = q.ex AND t.time >= q.time",
                big = p.big_size
            )],
            duckdb: vec![format!(
                "SELECT t.sym, t.time, t.ex, t.price, t.size, q.bid, q.bsize, q.ask, q.asize FROM \
                 (SELECT * FROM tradeNorm WHERE size > {big}) t ASOF LEFT JOIN quoteNorm q \
                 ON t.sym = q.sym AND t.ex = q.ex AND t.time >= q.time",
                big = p.big_size
            )],
            polars: format!(
                "[tradeNorm.filter(pl.col('size') > {big}).sort('time').join_asof(quoteNorm.sort('time'), on='time', by=['sym', 'ex'], strategy='backward')\
                 .select(['sym', 'time', 'ex', 'price', 'size', 'bid', 'bsize', 'ask', 'asize'])]",
                big = p.big_size
            ),
        },
        Query {
            name: "q03 count, avg mid by sym".into(),
            q: "select nr: count i, avgMid: avg (bid + ask) % 2 by sym from quoteNorm where date=d",
            strata: vec![format!("SELECT sym, count(*) AS nr, avg((bid + ask) / 2) AS avgMid FROM quoteNorm WHERE {d} GROUP BY sym")],
            duckdb: vec!["SELECT sym, count(*) AS nr, avg((bid + ask) / 2) AS avgMid FROM quoteNorm GROUP BY sym".into()],
            polars: "[quoteNorm.group_by('sym').agg(pl.len().alias('nr'), ((pl.col('bid') + pl.col('ask')) / 2).mean().alias('avgMid'))]".into(),
        },
        Query {
            name: "q04 tradeNorm i<>0".into(),
            q: "select from tradeNorm where date=d, i<>0",
            strata: vec![format!("SELECT sym, time, ex, price, size FROM tradeNorm WHERE {d} AND i <> 0")],
            duckdb: vec!["SELECT * FROM tradeNorm OFFSET 1".into()],
            polars: "[tradeNorm.slice(1)]".into(),
        },
        Query {
            name: "q05 aj trades of someSyms".into(),
            q: "aj[`Symbol`Time; select from trade where date=d, Symbol in someSyms; select from quote where date=d]",
            strata: vec![format!(
                "SELECT t.*, q.Bid_Price, q.Bid_Size, q.Offer_Price, q.Offer_Size FROM \
                 (SELECT {tcols} FROM trade WHERE {d} AND Symbol IN ({some})) t ASOF LEFT JOIN \
                 (SELECT Symbol, Time, Bid_Price, Bid_Size, Offer_Price, Offer_Size FROM quote WHERE {d}) q \
                 ON t.Symbol = q.Symbol AND t.Time >= q.Time"
            )],
            duckdb: vec![format!(
                "SELECT t.*, q.Bid_Price, q.Bid_Size, q.Offer_Price, q.Offer_Size FROM \
                 (SELECT * FROM trade WHERE Symbol IN ({some})) t ASOF LEFT JOIN quote q \
                 ON t.Symbol = q.Symbol AND t.Time >= q.Time"
            )],
            polars: format!(
                "[trade.filter(pl.col('Symbol').is_in({syms})).sort('Time').join_asof(\
                 quote.select(['Symbol', 'Time', 'Bid_Price', 'Bid_Size', 'Offer_Price', 'Offer_Size']).sort('Time'), \
                 on='Time', by='Symbol', strategy='backward')]",
                syms = py_list(&p.some_syms)
            ),
        },
        Query {
            name: "q06 distinct sym,ex big trades".into(),
            q: "distinct select sym, ex from tradeNorm where date=d, size > 700000",
            strata: vec![format!("SELECT DISTINCT sym, ex FROM tradeNorm WHERE {d} AND size > {}", p.bigger_size)],
            duckdb: vec![format!("SELECT DISTINCT sym, ex FROM tradeNorm WHERE size > {}", p.bigger_size)],
            polars: format!("[tradeNorm.filter(pl.col('size') > {}).select(['sym', 'ex']).unique()]", p.bigger_size),
        },
        Query {
            name: "q07 each infrequent sym".into(),
            q: "raze {select from quoteNorm where date=d, sym=x} each infreqIdList",
            strata: each(&|s| format!("SELECT sym, time, ex, bid, bsize, ask, asize FROM quoteNorm WHERE {d} AND sym = '{s}'")),
            duckdb: each(&|s| format!("SELECT * FROM quoteNorm WHERE sym = '{s}'")),
            polars: format!("[quoteNorm.filter(pl.col('sym') == s) for s in {}]", py_list(&p.infrequent)),
        },
        Query {
            name: "q08 each stats".into(),
            q: "raze {select first sym, wsumAsk:asize wsum ask, ..., corSize: asize cor bsize from quoteNorm where date=d, sym=x} each infreqIdList",
            strata: each(&|s| format!("SELECT {}", stats(&format!("{d} AND sym = '{s}'"), true))),
            duckdb: each(&|s| format!("SELECT {}", stats(&format!("sym = '{s}'"), false))),
            polars: format!("[quoteNorm.filter(pl.col('sym') == s).select({polars_stats}) for s in {}]", py_list(&p.infrequent)),
        },
        Query {
            name: "q09 wavg someSyms".into(),
            q: "select bsize wavg bid, asize wavg ask from quoteNorm where date=d, sym in someSyms",
            strata: vec![format!("SELECT wavg(bsize, bid) AS bid, wavg(asize, ask) AS ask FROM quoteNorm WHERE {d} AND sym IN ({some})")],
            duckdb: vec![format!(
                "SELECT sum(bsize * bid) / sum(bsize) AS bid, sum(asize * ask) / sum(asize) AS ask FROM quoteNorm WHERE sym IN ({some})"
            )],
            polars: format!(
                "[quoteNorm.filter(pl.col('sym').is_in({})).select(((pl.col('bsize') * pl.col('bid')).sum() / pl.col('bsize').sum()).alias('bid'), \
                 ((pl.col('asize') * pl.col('ask')).sum() / pl.col('asize').sum()).alias('ask'))]",
                py_list(&p.some_syms)
            ),
        },
        Query {
            name: "q10 peach infrequent syms".into(),
            q: "raze {select from quoteNorm where date=d, sym=x} peach infreqIdList",
            strata: vec![format!("SELECT sym, time, ex, bid, bsize, ask, asize FROM quoteNorm WHERE {d} AND sym IN ({infreq})")],
            duckdb: vec![format!("SELECT * FROM quoteNorm WHERE sym IN ({infreq})")],
            polars: format!("[quoteNorm.filter(pl.col('sym').is_in({}))]", py_list(&p.infrequent)),
        },
        Query {
            name: "q11 quote one sym".into(),
            q: "select from quote where date=d, Symbol=`VFVA",
            strata: vec![format!("SELECT {qcols} FROM quote WHERE {d} AND Symbol = '{}'", p.one_sym)],
            duckdb: vec![format!("SELECT * FROM quote WHERE Symbol = '{}'", p.one_sym)],
            polars: format!("[quote.filter(pl.col('Symbol') == '{}')]", p.one_sym),
        },
        Query {
            name: "q12 peach deep quotes".into(),
            q: "raze {select from quoteNorm where date=d, sym=x, 4000<bsize+asize} peach infreqIdList",
            strata: vec![format!(
                "SELECT sym, time, ex, bid, bsize, ask, asize FROM quoteNorm WHERE {d} AND sym IN ({infreq}) AND bsize + asize > {}",
                p.deep
            )],
            duckdb: vec![format!("SELECT * FROM quoteNorm WHERE sym IN ({infreq}) AND bsize + asize > {}", p.deep)],
            polars: format!(
                "[quoteNorm.filter(pl.col('sym').is_in({}) & (pl.col('bsize') + pl.col('asize') > {}))]",
                py_list(&p.infrequent),
                p.deep
            ),
        },
        Query {
            name: "q13 peach stats".into(),
            q: "raze {select first sym, wsumAsk:asize wsum ask, ... from quoteNorm where date=d, sym=x} peach infreqIdList",
            strata: vec![format!("SELECT {} GROUP BY sym", stats(&format!("{d} AND sym IN ({infreq})"), true).replacen("first(sym) AS sym", "sym", 1))],
            duckdb: vec![format!("SELECT {} GROUP BY sym", stats(&format!("sym IN ({infreq})"), false).replacen("first(sym) AS sym", "sym", 1))],
            polars: format!(
                "[quoteNorm.filter(pl.col('sym').is_in({})).group_by('sym').agg({})]",
                py_list(&p.infrequent),
                polars_stats.replacen("pl.col('sym').first(), ", "", 1)
            ),
        },
        Query {
            name: "q14 median size one rare sym".into(),
            q: "select medMidSize: med (bsize + asize) % 2 from quoteNorm where date=d, sym=`CIIG.W",
            strata: vec![format!("SELECT med((bsize + asize) / 2.0) AS medMidSize FROM quoteNorm WHERE {d} AND sym = '{}'", p.rare_sym)],
            duckdb: vec![format!("SELECT median((bsize + asize) / 2.0) AS medMidSize FROM quoteNorm WHERE sym = '{}'", p.rare_sym)],
            polars: format!("[quoteNorm.filter(pl.col('sym') == '{}').select(((pl.col('bsize') + pl.col('asize')) / 2).median().alias('medMidSize'))]", p.rare_sym),
        },
    ]
}
