//! Feeds arbitrary bytes to `decompress_block` under a spec and element kind chosen by
//! the input, and checks that `compress_block` round-trips.
//!
//! Input layout (8 header bytes, then the payload):
//!
//! | byte | meaning |
//! | --- | --- |
//! | 0 | algorithm code, modulo 7 (kdb+'s 0..=5 plus pcodec's 6) |
//! | 1 | level, as an index into the algorithm's level range (modulo its size) |
//! | 2 | filters: bits 6-7 are how many (0..=3), bits 2i..2i+1 the i-th filter |
//! | 3 | element kind: bits 0-1 width 1/2/4/8, bits 2-3 signed/unsigned/float/opaque |
//! | 4-5 | raw length for decoding, little-endian, modulo (block bytes + 1) |
//! | 6 | where to corrupt the compressed round-trip block (a fraction of 256) |
//! | 7 | the byte XORed in there; 0 means truncate there instead |
//!
//! The block size exponent is always 12 (4 KiB blocks), which also bounds the raw
//! length and so the decoder's allocations.
//!
//! Properties:
//! - `decompress_block` never panics on any payload, spec, kind and length, and an `Ok`
//!   has exactly the raw length asked for;
//! - for a spec that passes `check_suitable`, `compress_block` on the payload (cut to
//!   whole elements and one block) succeeds, and when it returns a block,
//!   `decompress_block` gives the payload back;
//! - that compressed block, corrupted or truncated, makes `decompress_block` return an
//!   error or a block of the right length, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_codec::{Algorithm, CompressionSpec, ElementKind, Filter, NumericClass, compress_block, decompress_block};

const LBS: u8 = 12;
const HEADER: usize = 8;

fn spec_from(algorithm: u8, level: u8, filters: u8) -> CompressionSpec {
    let algorithm = Algorithm::from_code(algorithm % Algorithm::ALL.len() as u8).expect("code below the count");
    let levels = algorithm.levels();
    let span = (levels.end() - levels.start() + 1) as u32;
    let level = levels.start() + (level as u32 % span) as i32;
    let count = (filters >> 6) as usize;
    let filters = (0..count).map(|i| Filter::ALL[((filters >> (2 * i)) & 3) as usize]).collect();
    let spec = CompressionSpec::new(algorithm, level, LBS).expect("the header only builds specs within range");
    CompressionSpec { filters, ..spec }
}

fn kind_from(byte: u8) -> ElementKind {
    let width = [1, 2, 4, 8][(byte & 3) as usize];
    let class = [NumericClass::Signed, NumericClass::Unsigned, NumericClass::Float, NumericClass::Opaque]
        [((byte >> 2) & 3) as usize];
    ElementKind::new(width, class)
}

/// Decodes and checks the promise every caller relies on: an error or exactly
/// `raw_len` bytes, never a panic (a panic aborts the fuzzer and is reported).
fn decode(spec: &CompressionSpec, kind: ElementKind, packed: &[u8], raw_len: usize) {
    if let Ok(raw) = decompress_block(spec, kind, packed, raw_len) {
        assert_eq!(raw.len(), raw_len, "{spec} on {kind}: Ok with the wrong length");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((header, payload)) = data.split_first_chunk::<HEADER>() else {
        return;
    };
    let spec = spec_from(header[0], header[1], header[2]);
    let kind = kind_from(header[3]);
    let block = spec.block_bytes();
    let raw_len = u16::from_le_bytes([header[4], header[5]]) as usize % (block + 1);

    // 1. Arbitrary bytes as a compressed block.
    decode(&spec, kind, payload, raw_len);

    // 2. Round trip, for the specs the store would accept for this kind.
    if spec.check_suitable(kind).is_err() {
        return;
    }
    let usable = payload.len().min(block) / kind.width * kind.width;
    let raw = &payload[..usable];
    let packed = match compress_block(&spec, kind, raw) {
        Ok(Some(packed)) => packed,
        // Not smaller than raw: the store keeps the block raw instead.
        Ok(None) => return,
        Err(e) => panic!("{spec} on {kind}: compress_block failed on {usable} bytes: {e}"),
    };
    match decompress_block(&spec, kind, &packed, raw.len()) {
        Ok(back) => assert!(back == raw, "{spec} on {kind}: round trip of {usable} bytes changed the data"),
        Err(e) => panic!("{spec} on {kind}: cannot decode its own block of {usable} bytes: {e}"),
    }

    // 3. The same block, damaged.
    if packed.is_empty() {
        return;
    }
    let at = header[6] as usize * packed.len() / 256;
    let mut damaged = packed;
    match header[7] {
        0 => damaged.truncate(at),
        x => damaged[at] ^= x,
    }
    decode(&spec, kind, &damaged, raw.len());
});
