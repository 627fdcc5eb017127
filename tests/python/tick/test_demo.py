"""`strata demo`: the whole tick plane on loopback, end to end, from the real binary."""

import re


def test_demo_captures_writes_and_serves_the_day(run_strata, tmp_path):
    out = run_strata("demo", "--dir", tmp_path / "demo", "--seconds", "1", "--rows", "10", "--updates", "2").stdout
    sent = {t: int(n) for t, n in re.findall(r"(trade|quote) feed sent \d+ updates, (\d+) rows", out)}
    assert set(sent) == {"trade", "quote"} and all(n > 0 for n in sent.values()), out
    # The RDB held every row, then after end of day the HDB serves them and the RDB is empty.
    for table, n in sent.items():
        assert re.search(rf"RDB\s+┆ count {table}\s+┆ {n}\s", out), out
        assert re.search(rf"HDB\s+┆ count {table}\s+┆ {n}\s", out), out
    assert re.search(r"RDB\s+┆ count trade\s+┆ 0\s", out), out
    # The SQL answers: VWAP, bars and the as-of join, on both, each with some rows.
    for process in ("RDB", "HDB"):
        for name in ("VWAP by sym", "1 s bars with xbar", "as-of join"):
            assert re.search(rf"{process}\s+┆ SQL: {name}\s+┆ [1-9]\d* rows", out), (process, name, out)
    partitions = [p for p in (tmp_path / "demo" / "hdb").iterdir() if p.is_dir()]
    assert len(partitions) == 1
    for table in ("trade", "quote"):
        assert (partitions[0] / table / "sym.parted").is_file()
    assert "stopped the tickerplant and the RDB" in out
