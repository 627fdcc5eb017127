"""PyKX over TLS (`SyncQConnection(..., tls=True)`, kdb+'s own TLS client in the
q library PyKX loads, OpenSSL underneath) against real strata processes serving
TLS only: it publishes to the tickerplant and queries an RDB that subscribed to
the tickerplant over TLS. The q client checks the server's certificate against the
CAs of SSL_CA_CERT_FILE (kdb+'s variable); a plain PyKX connection to the same
port is refused. Certificates come from scripts/test-certs (the openssl command)."""

import subprocess
import time
from pathlib import Path

import pykx as kx
import pytest

from test_pykx import trade_columns
from tick_processes import SCHEMA, free_port_number

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def certs(tmp_path) -> Path:
    """A CA, and a server certificate for 127.0.0.1 it signed."""
    directory = tmp_path / "certs"
    subprocess.run(["bash", str(REPO / "scripts" / "test-certs"), str(directory)], check=True)
    return directory


def test_pykx_publishes_and_queries_over_tls(strata, certs, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CA_CERT_FILE", str(certs / "ca.pem"))
    tls = ["--tls-cert", certs / "server.pem", "--tls-key", certs / "server.key"]
    schema = tmp_path / "sym.schema"
    schema.write_text(SCHEMA)
    tp_port, rdb_port = free_port_number(), free_port_number()
    strata.start("tp", "--schema", schema, "--journal-dir", tmp_path / "journal", "--port", tp_port, *tls,
                 port=tp_port)
    strata.start("rdb", "--tp", f"tcps://127.0.0.1:{tp_port}", "--tls-ca", certs / "ca.pem",
                 "--db", tmp_path / "hdb", "--port", rdb_port, *tls, port=rdb_port)

    with kx.SyncQConnection("127.0.0.1", tp_port, tls=True, no_ctx=True) as feed:
        feed(".u.upd", kx.SymbolAtom("trade"), trade_columns(["IBM", "MSFT"], [101.5, 99.25], [100, 200]))
        assert feed(".u.i").py() == 1

    with kx.SyncQConnection("127.0.0.1", rdb_port, tls=True, no_ctx=True) as rdb:
        deadline = time.monotonic() + 20
        while rdb("count trade").py() != 2:
            assert time.monotonic() < deadline, "the rows published over TLS never reached the RDB"
            time.sleep(0.05)
        table = rdb("select from trade").pd()
        assert list(table["sym"]) == ["IBM", "MSFT"]
        assert table["price"].tolist() == [101.5, 99.25]

    # The same port refuses a plain connection: the server requires TLS (kdb+'s -E 2).
    with pytest.raises(Exception):
        with kx.SyncQConnection("127.0.0.1", tp_port, no_ctx=True) as plain:
            plain(".u.i")
