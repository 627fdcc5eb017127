//! Feeds arbitrary bytes to the qipc decoder.
//!
//! Input: two little-endian bytes giving the expected decoded length (so at most
//! 65,535 bytes, which bounds the decoder's allocation), then the compressed stream.
//!
//! Properties:
//! - `qipc::decompress` never panics, and an `Ok` has exactly the expected length;
//! - whatever decodes re-encodes: `compress(output)` decodes back to `output`;
//! - the stream bytes themselves, taken as data, survive `compress` then `decompress`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_codec::qipc;

/// Compresses `data` with no output limit and checks that it decodes back.
fn assert_round_trip(data: &[u8], what: &str) {
    let packed = qipc::compress(data, usize::MAX).expect("no limit, so compress never gives up");
    match qipc::decompress(&packed, data.len()) {
        Ok(back) => {
            assert!(back == data, "{what}: qipc round trip changed {} bytes (packed to {})", data.len(), packed.len())
        }
        Err(e) => panic!("{what}: qipc cannot decode its own output for {} bytes: {e}", data.len()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((len, stream)) = data.split_first_chunk::<2>() else {
        return;
    };
    let expected_len = u16::from_le_bytes(*len) as usize;
    if let Ok(out) = qipc::decompress(stream, expected_len) {
        assert_eq!(out.len(), expected_len, "Ok with the wrong length");
        assert_round_trip(&out, "decoded output");
    }
    assert_round_trip(stream, "raw input");
});
