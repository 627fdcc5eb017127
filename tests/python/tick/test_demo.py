"""`strata demo`: the whole tick plane on loopback, end to end, from the real binary."""

import re


def test_demo_captures_writes_and_serves_the_day(run_strata, tmp_path):
    out = run_strata("demo", "--dir", tmp_path / "demo", "--seconds", "1", "--rows", "10", "--updates", "2").stdout
    sent = int(re.search(r"feed sent \d+ updates, (\d+) rows", out).group(1))
    assert sent > 0
    # The RDB held every row, then after end of day the HDB serves them and the RDB is empty.
    assert re.search(rf"RDB\s+┆ count trade\s+┆ {sent}\s", out), out
    assert re.search(rf"HDB\s+┆ count trade\s+┆ {sent}\s", out), out
    assert re.search(r"RDB\s+┆ count trade\s+┆ 0\s", out), out
    partitions = [p for p in (tmp_path / "demo" / "hdb").iterdir() if p.is_dir()]
    assert len(partitions) == 1 and (partitions[0] / "trade" / "sym.parted").is_file()
    assert "the RDB followed" in out
