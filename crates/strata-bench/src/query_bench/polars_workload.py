"""The analyst workload of `strata bench query` in Polars (workload.rs has its SQL).

`plans(frames, params)` gives, by query name, a function that runs the query over
the in-memory frames (lazy plans, collected; pivots on the collected frame, as
Polars pivots eagerly) and returns the DataFrame. Columns come in the SQL's order.
The frames are sorted by symbol then time, as the day is stored, and each symbol's
times are distinct.
"""

from datetime import time

import polars as pl

QUOTE_COLS = ["sym", "time", "ex", "bid", "bsize", "ask", "asize"]
TRADE_COLS = ["sym", "time", "ex", "price", "size"]

# The session bounds of the key-less as-of join (workload.rs has the same VALUES).
SESSIONS = pl.DataFrame({
    "start": [time(0), time(4), time(9, 30), time(10), time(12), time(15, 30), time(16)],
    "session": ["pre", "early", "open", "morning", "midday", "close", "after"],
})

sym, t, ex = pl.col("sym"), pl.col("time"), pl.col("ex")
price, size = pl.col("price"), pl.col("size").cast(pl.Int64)
bid, ask = pl.col("bid"), pl.col("ask")
mid = (bid + ask) / 2
ts = pl.col("date").dt.combine(t)


def ohlcv():
    return [price.first().alias("open"), price.max().alias("high"), price.min().alias("low"),
            price.last().alias("close"), size.sum().alias("volume")]


def pivot(frame, index, on, agg, columns):
    """`frame` grouped by `index` and `on` and aggregated with `agg` (lazily), then
    pivoted with a column per value of `columns`, null where a group is absent, as
    SQL's PIVOT ... IN (...) gives."""
    long = frame.group_by(index, on).agg(agg).collect()
    wide = long.pivot(on=on, index=index, values=long.columns[-1], aggregate_function=None)
    return wide.select([pl.col(index)] + [pl.col(c) if c in wide.columns else pl.lit(None, pl.Float64).alias(c) for c in columns])


def asof(trades, quotes, by):
    """Trades with the prevailing quote of the same `by` keys, unmatched trades left
    out (SQL's inner ASOF JOIN). Each symbol's rows are sorted by time, which is what
    join_asof needs with `by` (it cannot check it then)."""
    quotes = quotes.with_columns(quote_time=t)
    return trades.join_asof(quotes, on="time", by=by, strategy="backward", check_sortedness=False).filter(pl.col("quote_time").is_not_null())


def plans(f, p):
    q, tr = f["quoteNorm"], f["tradeNorm"]
    one, s50, s1000 = p["one_sym"], p["syms50"], p["syms1000"]
    exchanges, pivot_syms = p["exchanges"], p["pivot_syms"]

    def ranked(frame, keys, descending, n):
        return frame.sort(keys, descending=descending).group_by("sym", maintain_order=True).head(n)

    def asof_of(filter_):
        trades = tr.filter(filter_).select(TRADE_COLS)
        quotes = q.filter(filter_).select(QUOTE_COLS)
        return asof(trades, quotes, "sym").select("sym", "time", "price", "size", "bid", "ask")

    lazy = {
        "sel_window_quotes": q.filter(t.is_between(time(10), time(10, 5))).select(QUOTE_COLS),
        "sel_window_trades": tr.filter((t >= time(15, 30)) & (t < time(16))).select(TRADE_COLS),
        "sel_1sym_quotes": q.filter(sym == one).select(QUOTE_COLS),
        "sel_50sym_trades": tr.filter(sym.is_in(s50)).select(TRADE_COLS),
        "sel_1000sym_hour": q.filter(sym.is_in(s1000) & t.is_between(time(11), time(12))).select("sym", "time", "bid", "ask"),
        "der_spread_50sym": q.filter(sym.is_in(s50)).select(
            "sym", "time", mid.alias("mid"), (ask - bid).alias("spread"), (10000 * (ask - bid) / mid).alias("bps")).sort("sym", "time"),
        "der_top_notional": tr.select("sym", "time", "price", size, (price * size).alias("notional"))
        .sort(["notional", "sym", "time"], descending=[True, False, False]).head(100),
        "der_lots_50sym": tr.filter(sym.is_in(s50)).select(
            "sym", "time", size, (size // 100).alias("round_lots"),
            pl.when(size >= 10000).then(pl.lit("block")).when(size >= 100).then(pl.lit("round")).otherwise(pl.lit("odd")).alias("lot"))
        .sort("time", "sym"),
        "der_session_notional": tr.filter(t.is_between(time(9, 30), time(16))).select(
            "sym", "time", (price * size).alias("notional"), "ex").sort("time", "sym"),
        "agg_day_vwap": tr.select(pl.len().alias("n"), size.sum().alias("volume"),
                                  ((price * size).sum() / size.sum()).alias("vwap"), price.mean().alias("mean_price")),
        "agg_vwap_by_sym": tr.group_by("sym").agg(pl.len().alias("n"), size.sum().alias("volume"),
                                                  ((price * size).sum() / size.sum()).alias("vwap"),
                                                  price.min().alias("low"), price.max().alias("high")),
        "agg_stats_by_sym": q.group_by("sym").agg(bid.std().alias("sd_bid"), ask.std().alias("sd_ask"),
                                                  pl.corr(bid, ask).alias("rho"), (ask - bid).mean().alias("spread")),
        "agg_median_by_sym": tr.group_by("sym").agg(price.median().alias("med_price"),
                                                    size.cast(pl.Float64).median().alias("med_size")),
        "agg_by_sym_ex": q.group_by("sym", "ex").agg(pl.len().alias("n"), pl.col("bsize").mean().alias("bsize"),
                                                     ask.max().alias("max_ask")),
        "agg_distinct_by_ex": tr.group_by("ex").agg(sym.n_unique().alias("syms"), pl.len().alias("n")),
        "agg_weighted_mid_50sym": q.filter(sym.is_in(s50)).group_by("sym").agg(
            ((mid * (pl.col("bsize") + pl.col("asize"))).sum() / (pl.col("bsize") + pl.col("asize")).sum()).alias("wmid")),
        "bars_1m_all": tr.group_by("sym", ts.dt.truncate("1m").alias("bar")).agg(ohlcv()),
        "bars_5m_50sym": tr.filter(sym.is_in(s50)).group_by("sym", ts.dt.truncate("5m").alias("bar")).agg(
            ohlcv() + [((price * size).sum() / size.sum()).alias("vwap")]),
        "bars_10m_quotes": q.group_by("sym", ts.dt.truncate("10m").alias("bar")).agg(
            mid.mean().alias("mid"), bid.last().alias("bid"), ask.last().alias("ask"), pl.len().alias("n")),
        "bars_1m_spread_1sym": q.filter(sym == one).group_by(ts.dt.truncate("1m").alias("bar")).agg(
            (ask - bid).mean().alias("spread"), (ask - bid).max().alias("max_spread"), pl.len().alias("n")),
        "win_cum_volume": tr.select("sym", "time", size, size.cum_sum().over("sym").alias("cum_volume")),
        "win_ma20_50sym": tr.filter(sym.is_in(s50)).select(
            "sym", "time", "price", price.rolling_mean(20, min_samples=1).over("sym").alias("ma20")),
        "win_vol5m_1000sym": tr.filter(sym.is_in(s1000)).with_columns(ts.alias("ts")).select(
            "sym", "time", size, size.rolling_sum_by("ts", "5m", closed="both").over("sym").alias("vol_5m")),
        "win_mid1m_50sym": q.filter(sym.is_in(s50)).with_columns(ts.alias("ts")).select(
            "sym", "time", mid.rolling_mean_by("ts", "1m", closed="both").over("sym").alias("mid_1m")),
        "win_cum_vwap_50sym": tr.filter(sym.is_in(s50)).select(
            "sym", "time", ((price * size).cum_sum() / size.cum_sum()).over("sym").alias("vwap")),
        "ext_largest_trade": ranked(tr, ["size", "time"], [True, False], 1).select("sym", "time", "price", "size"),
        "ext_top3_notional": ranked(tr.with_columns((price * size).alias("notional")), ["notional", "time"], [True, False], 3)
        .select("sym", "time", "price", "size"),
        "ext_latest_quote": q.group_by("sym").agg(pl.all().last()).select("sym", "time", "bid", "ask"),
        "ext_dedup_sym_time": q.sort(["bid", "ask", "bsize", "asize", "ex"], descending=[True, True, True, True, False])
        .group_by("sym", "time", maintain_order=True).head(1).select("sym", "time", "bid", "ask"),
        "ext_widest_spread": ranked(q.filter(sym.is_in(s1000)).with_columns((ask - bid).alias("spread")),
                                    ["spread", "time"], [True, False], 1).select("sym", "time", "bid", "ask"),
        "seq_lag_diff_50sym": tr.filter(sym.is_in(s50)).select(
            "sym", "time", "price", (price - price.shift(1)).over("sym").alias("dprice"),
            (size - size.shift(1)).over("sym").alias("dsize")),
        "seq_log_return_50sym": tr.filter(sym.is_in(s50)).select(
            "sym", "time", (price / price.shift(1)).log().over("sym").alias("ret")),
        "seq_gaps": tr.with_columns((t.cast(pl.Int64) - t.cast(pl.Int64).shift(1)).over("sym").alias("gap"))
        .filter(pl.col("gap") > 60 * 10**9).group_by("sym").agg(pl.len().alias("gaps")),
        "seq_uptick_islands": tr.with_columns((price > price.shift(1)).over("sym").fill_null(False).cast(pl.Int64).alias("up"))
        .with_columns((1 - pl.col("up")).cum_sum().over("sym").alias("grp"))
        .group_by("sym", "grp").agg(pl.col("up").sum().alias("run")).filter(pl.col("run") > 0)
        .group_by("sym").agg(pl.len().alias("runs"), pl.col("run").max().alias("longest")),
        "seq_bid_changes": q.filter(sym.is_in(s1000)).with_columns(bid.shift(1).over("sym").alias("prev"))
        .filter(bid != pl.col("prev")).group_by("sym").agg(pl.len().alias("changes")),
        "asof_1sym": asof_of(sym == one),
        "asof_50sym": asof_of(sym.is_in(s50)),
        "asof_1000sym": asof_of(sym.is_in(s1000)),
        "asof_all_by_ex": asof(tr.select(TRADE_COLS), q.select(QUOTE_COLS), ["sym", "ex"])
        .select("sym", "ex", "time", "price", "bid", "ask", "quote_time"),
        "asof_effective_spread": asof(tr.select(TRADE_COLS), q.select(QUOTE_COLS), "sym").group_by("sym").agg(
            pl.len().alias("n"), (2 * (price - mid).abs() / mid).mean().alias("eff_spread")),
        "form_rowid_sample": q.with_row_index("rowid").filter(pl.col("rowid") % 1000 == 0)
        .select("rowid", "sym", "time", "bid", "ask"),
        "form_rowid_dedup_last": q.unique(["sym", "time"], keep="last", maintain_order=True).select("sym", "time", "bid", "ask"),
        "form_date_plus_interval": tr.filter(ts >= pl.col("date").dt.combine(time(15, 30))).select("sym", "time", "price", size),
        "form_columns_regex": q.group_by("sym").agg(bid.max(), ask.max(), pl.col("bsize").min(), pl.col("asize").min()),
        "form_window_max_by_ex": tr.select("sym", "time", "ex", "price", price.max().over("ex").alias("hi")),
        "form_window_share_by_sym": tr.select("sym", "time", size, (size / size.sum().over("sym")).alias("share"),
                                              pl.len().over("sym", "ex").alias("n_ex")),
        "form_groupwise_max": tr.filter(price == price.max().over("sym")).select("sym", "time", "price"),
        "form_asof_sessions": tr.select("sym", "time", "price").sort("time")
        .join_asof(SESSIONS.lazy(), left_on="time", right_on="start", strategy="backward")
        .select("sym", "time", "price", "session"),
    }
    out = {name: (lambda plan=plan: plan.collect()) for name, plan in lazy.items()}
    out["piv_volume_by_ex"] = lambda: pivot(tr, "sym", "ex", size.sum(), exchanges)
    out["piv_bid_by_ex_ffill"] = lambda: pivot(
        q.filter(sym.is_in(s50)).with_columns(ts.dt.truncate("1m").alias("bar")), "bar", "ex", bid.max(), exchanges).sort("bar").with_columns(pl.col(exchanges).forward_fill())
    out["form_with_pivot"] = out["form_pivot_case_sums"] = out["piv_volume_by_ex"]
    out["piv_mid_by_sym"] = lambda: pivot(
        q.filter(sym.is_in(pivot_syms)).with_columns(ts.dt.truncate("5m").alias("bar")), "bar", "sym", mid.mean(), pivot_syms)
    return out
