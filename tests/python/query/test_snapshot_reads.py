"""A query reads one version of a table, whatever a writer does meanwhile: `strata
sql` processes, slowed between opening a table and opening each of its columns (the
`read.column-open` fault point sleeps there), run while `strata import` replaces and
appends to the same day over and over. Every version of the table has columns `a`
and `b` equal to its version number on every row, so an answer mixing two versions
shows as min(a) != max(b); none may be mixed, and none may fail."""

import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

QUERY = "SELECT min(a) AS lo_a, max(a) AS hi_a, min(b) AS lo_b, max(b) AS hi_b, count(*) AS n FROM t"
QUERIES = 1000
ROWS = {1: 3000, 2: 4000}


def version_csv(path, version, rows):
    with open(path, "w") as out:
        out.write("a,b\n")
        for _ in range(rows):
            out.write(f"{version},{version}\n")


def test_queries_during_replaces_and_appends_read_one_version_each(strata_bin, tmp_path):
    db = tmp_path / "db"
    csvs = {}
    for version, rows in ROWS.items():
        csvs[version] = tmp_path / f"v{version}.csv"
        version_csv(csvs[version], version, rows)

    def strata(*args, env=None):
        return subprocess.run([str(strata_bin), *map(str, args)], capture_output=True, text=True, env=env, timeout=300)

    def write(version, mode):
        done = strata("import", csvs[version], "--db", db, "--table", "t", "--partition", "2025.01.02",
                      "--types", "a=long,b=long", "--mode", mode)
        assert done.returncode == 0, done.stderr

    write(1, "replace")
    stop = threading.Event()
    writes = {"replace": 0, "append": 0}

    def writer():
        version = 1
        while not stop.is_set():
            version = 3 - version
            write(version, "replace")
            writes["replace"] += 1
            if writes["replace"] % 3 == 0:
                write(version, "append")  # the day then holds 2x rows, still one version
                writes["append"] += 1

    slowed = dict(os.environ, STRATA_FAULTS="read.column-open=sleep:30")
    mixed, failed, answers = [], [], []

    def query(_):
        done = strata("sql", "--db", db, QUERY, "--format", "csv", env=slowed)
        if done.returncode != 0:
            failed.append(done.stderr.strip().splitlines()[-1:])
            return
        lo_a, hi_a, lo_b, hi_b, n = (int(v) for v in done.stdout.strip().splitlines()[-1].split(","))
        answers.append(n)
        if not (lo_a == hi_a == lo_b == hi_b and n in (ROWS[lo_a], 2 * ROWS[lo_a])):
            mixed.append((lo_a, hi_a, lo_b, hi_b, n))

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(query, range(QUERIES)))
    finally:
        stop.set()
        thread.join()
    assert writes["replace"] >= 5, f"the writer replaced the table {writes['replace']} times during the queries"
    assert not failed, f"{len(failed)} of {QUERIES} queries failed, first: {failed[:3]}"
    assert not mixed, f"{len(mixed)} of {QUERIES} answers mixed versions, first: {mixed[:3]}"
    assert len(answers) == QUERIES
    # Retired versions a reader held are removed by a later write once it is done.
    write(1, "replace")
    leftovers = [p.name for p in (db).iterdir() if p.name.startswith(".2025.01.02")]
    assert not leftovers, leftovers
