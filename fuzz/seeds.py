#!/usr/bin/env python3
"""Writes a small seed corpus for the fuzz targets (standard library only).

Usage: python3 fuzz/seeds.py [CORPUS_DIR]   (default: fuzz/corpus beside this file)

Seeds go to CORPUS_DIR/<target> for every target (qipc_decode, block_decode,
ipc_view, request_parse, handshake, frame_reader), named by content hash, so running it twice
changes nothing. The corpus is generated, not committed.
The input layouts are documented at the top of each fuzz_targets/*.rs file.
"""

import hashlib
import os
import struct
import sys
import zlib


def qipc_compress(data: bytes) -> bytes:
    """A port of strata_codec::qipc::compress with no output limit."""
    n = len(data)
    out = bytearray()
    positions = [None] * 256
    cursor = 0

    def catch_up(length):
        nonlocal cursor
        while cursor + 1 < length:
            positions[data[cursor] ^ data[cursor + 1]] = cursor
            cursor += 1

    s = 0
    while s < n:
        flag_at = len(out)
        out.append(0)
        flag = 0
        for bit in range(8):
            if s >= n:
                break
            match = None
            if s + 2 < n:
                h = data[s] ^ data[s + 1]
                r = positions[h]
                if r is not None and data[r] == data[s]:
                    match = (h, r)
            if match:
                h, r = match
                length = 2
                while length < 257 and s + length < n and data[r + length] == data[s + length]:
                    length += 1
                out += bytes([h, length - 2])
                flag |= 1 << bit
                catch_up(s + 2)
                s += length
                cursor = s
            else:
                out.append(data[s])
                s += 1
                catch_up(s)
        out[flag_at] = flag
    return bytes(out)


def i64s(values):
    return b"".join(struct.pack("<q", v) for v in values)


def f64s(values):
    return b"".join(struct.pack("<d", v) for v in values)


SAMPLES = {
    "empty": b"",
    "byte": b"\x07",
    "text": b"the quick brown fox jumps over the lazy dog " * 8,
    "zeros": bytes(512),
    "ramp": bytes(range(256)),
    "timestamps": i64s(1_700_000_000_000_000_000 + i * 1_000_003 for i in range(64)),
    "prices": f64s(101.25 + (i % 7) * 0.01 for i in range(64)),
}

# Header byte 3 (element kind): bits 0-1 width 1/2/4/8, bits 2-3 signed/unsigned/float/opaque.
KIND_I64, KIND_F64, KIND_BYTES = 0b0011, 0b1011, 0b1100
# Header byte 2 (filters): bits 6-7 count, bits 2i..2i+1 filter i (shuffle, delta, dod, xor).
NO_FILTERS, DELTA, SHUFFLE, XOR = 0x00, 0x41, 0x40, 0x43


def block_seed(alg, level, filters, kind, payload, raw_len=None, cut=0x80, xor=0x01):
    raw_len = len(payload) if raw_len is None else raw_len
    return bytes([alg, level, filters, kind]) + struct.pack("<H", raw_len) + bytes([cut, xor]) + payload


def k_long(v):
    return struct.pack("<bq", -7, v)


def k_symbol(text):
    return b"\xf5" + text.encode() + b"\x00"


def k_chars(text):
    return struct.pack("<bbi", 10, 0, len(text)) + text.encode()


def k_symbols(names):
    return struct.pack("<bbi", 11, 0, len(names)) + b"".join(n.encode() + b"\x00" for n in names)


def k_floats(values):
    return struct.pack("<bbi", 9, 0, len(values)) + f64s(values)


def k_list(items):
    return struct.pack("<bbi", 0, 0, len(items)) + b"".join(items)


def k_table(names, columns):
    return bytes([98, 0, 99]) + k_symbols(names) + k_list(columns)


def message(kind, body):
    """A whole little-endian message: header (byte order, kind, 0, 0, length) and body."""
    return struct.pack("<bbhi", 1, kind, 0, 8 + len(body)) + body


def ipc_seeds():
    trade = k_table(["sym", "price"], [k_symbols(["IBM", "MSFT"]), k_floats([101.5, 20.25])])
    bodies = [
        k_long(42),
        k_symbol("trade"),
        k_chars("SELECT 1"),
        k_list([k_symbol(".u.upd"), k_symbol("trade"), trade]),
        k_list([k_symbol(".u.sub"), k_symbol(""), k_symbol("")]),
        bytes([99]) + k_symbols(["a"]) + k_list([k_long(1)]),  # a dictionary
        k_list([k_list([k_list([k_long(1)])])]),
        b"\x80" + b"oops\x00",  # an error
    ]
    return bodies + [message(1, b) for b in bodies] + [message(1, k_list([k_chars(".s.e"), k_chars("x" * 3000)]))]


REQUESTS = [
    b".u.sub[`;`]",
    b"(.u.sub[`trade;`IBM`MSFT];`.u `i`L)",
    b"count trade",
    b"tables[]",
    b".u.end 2025.01.02",
    b"\\l .",
    b"sql \"SELECT 1\"",
    b"SELECT sym, count(*) FROM trade GROUP BY sym",
    b"select from trade",
    b"f[g[h[1;2];-3];\"x\"]",
    b"(" * 70 + b"1" + b")" * 70,
]

HANDSHAKES = [
    b"alice:secret\x03\x00",
    b"bob:\x06\x00",
    b"mallory:guess\x03\x00",
    b"carol\x00",
    b"\x03\x00",
    b"alice:secret",
    b"x" * 1030 + b"\x00",
]


def seeds():
    qipc = []
    for data in SAMPLES.values():
        qipc.append(struct.pack("<H", len(data)) + qipc_compress(data))
    qipc.append(struct.pack("<H", 7) + bytes([1, 0, 5]))  # a match referring to nothing

    block = []
    for name, data in SAMPLES.items():
        kind = {"timestamps": KIND_I64, "prices": KIND_F64}.get(name, KIND_BYTES)
        for alg in range(7):  # none, qipc, gzip, snappy, lz4hc, zstd, pco
            block.append(block_seed(alg, 3, NO_FILTERS, kind, data))
        # Real compressed payloads the standard library can make: none, qipc and zlib.
        block.append(block_seed(0, 0, NO_FILTERS, kind, data))
        block.append(block_seed(1, 0, NO_FILTERS, kind, qipc_compress(data), len(data)))
        block.append(block_seed(2, 6, NO_FILTERS, kind, zlib.compress(data, 6), len(data)))
    ts, px = SAMPLES["timestamps"], SAMPLES["prices"]
    block.append(block_seed(5, 10, DELTA, KIND_I64, ts))
    block.append(block_seed(4, 9, SHUFFLE, KIND_I64, ts))
    block.append(block_seed(5, 10, XOR, KIND_F64, px))
    block.append(block_seed(6, 8, NO_FILTERS, KIND_F64, px))
    block += REGRESSIONS
    return {
        "qipc_decode": qipc,
        "block_decode": block,
        "ipc_view": ipc_seeds(),
        "request_parse": REQUESTS,
        "handshake": HANDSHAKES,
        # First byte: the read size; then a stream of whole, cut and promised messages.
        "frame_reader": [
            bytes([0]) + b"".join(message(1, b) for b in ipc_seeds()[:8]),
            bytes([40]) + message(1, k_chars("x" * 5000)) + message(0, k_long(7)),
            bytes([3]) + struct.pack("<bbhi", 1, 0, 0, 1 << 20) + b"x" * 300,
            bytes([1]) + struct.pack("<bbhi", 1, 0, 0, 1 << 30),
        ],
    }


# Inputs that made a target fail before, kept so every seeded run retries them.
REGRESSIONS = [
    # xor+xor+xor+lz4hc:10 on f32, empty payload: compress_block on an empty block at
    # lz4hc level >= 10 makes liblz4's optimal parser read address 0x1 (SIGSEGV).
    bytes([11, 10, 255, 10, 255, 255, 255, 255]),
    # pco:5 on a 2-byte float kind: check_suitable accepts it, compress_block refuses.
    bytes([195, 252, 0, 9, 252, 245, 1, 245, 0]),
    # pco:3 on f32, 11 values; the compressed block with one byte flipped makes
    # decompress_block reserve 4 GiB (pco trusts the stream's count).
    bytes([55, 55, 55, 250, 255, 255] + [44] * 14 + [40] + [44] * 26 + [249, 255, 255]),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    for target, inputs in seeds().items():
        folder = os.path.join(corpus, target)
        os.makedirs(folder, exist_ok=True)
        for data in inputs:
            with open(os.path.join(folder, "seed-" + hashlib.sha1(data).hexdigest()), "wb") as f:
                f.write(data)
        print(f"seeds: {len(inputs)} inputs in {folder}")


if __name__ == "__main__":
    main()
