//! kdb+'s IPC compression: a byte-oriented LZ scheme with an implicit hash table.
//!
//! The stream is a sequence of groups: a flag byte, then up to eight items. Bit k of
//! the flag (least significant first) says whether item k is a literal (one byte) or a
//! match (two bytes `h n`: copy `2 + n` bytes from the position the decoder's own table
//! holds for key `h`). Both sides keep a 256-entry table from `out[q] ^ out[q+1]` to
//! `q`, updated by the same rule, so positions never travel on the wire. kdb+ uses it
//! for IPC messages over 2000 bytes and as file compression algorithm 1.
//!
//! ```
//! use strata_codec::qipc;
//! let data = b"abcabcabcabcabcabcabcabc".repeat(10);
//! let packed = qipc::compress(&data, data.len()).expect("repetitive data shrinks");
//! assert!(packed.len() < data.len() / 4);
//! assert_eq!(qipc::decompress(&packed, data.len()).unwrap(), data);
//! ```

use crate::CodecError;

/// The longest match: two bytes plus a one-byte extra count.
const MAX_MATCH: usize = 2 + 255;

/// The table both encoder and decoder keep: key `b[q] ^ b[q+1]` to position `q`.
struct PositionTable {
    positions: [u32; 256],
    /// Positions below this have been hashed or deliberately skipped.
    cursor: usize,
}

impl PositionTable {
    /// Entries start as [`PositionTable::UNSET`], which no valid match can refer to.
    fn new() -> PositionTable {
        PositionTable { positions: [PositionTable::UNSET; 256], cursor: 0 }
    }

    const UNSET: u32 = u32::MAX;

    /// Hashes every pair start from the cursor up to `len - 1` (exclusive), as the
    /// decoder does after each item.
    fn catch_up(&mut self, bytes: &[u8], len: usize) {
        while self.cursor + 1 < len {
            let q = self.cursor;
            self.positions[(bytes[q] ^ bytes[q + 1]) as usize] = q as u32;
            self.cursor += 1;
        }
    }
}

/// Compresses `input`, giving up (returning `None`) as soon as the output would exceed
/// `limit` bytes. kdb+ passes half the message length; files pass the block length so
/// that incompressible blocks are stored raw instead.
pub fn compress(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    let n = input.len();
    let mut out = Vec::with_capacity(limit.min(n + n / 8 + 1));
    let mut table = PositionTable::new();
    let mut s = 0usize;
    while s < n {
        let flag_at = out.len();
        out.push(0u8);
        let mut flag = 0u8;
        for bit in 0..8 {
            if s >= n {
                break;
            }
            let mut matched = None;
            if s + 2 < n {
                let h = (input[s] ^ input[s + 1]) as usize;
                let r = table.positions[h];
                if r != PositionTable::UNSET && input[r as usize] == input[s] {
                    matched = Some((h, r as usize));
                }
            }
            match matched {
                Some((h, r)) => {
                    let mut len = 2;
                    while len < MAX_MATCH && s + len < n && input[r + len] == input[s + len] {
                        len += 1;
                    }
                    out.push(h as u8);
                    out.push((len - 2) as u8);
                    flag |= 1 << bit;
                    // The decoder hashes up to the match start, then skips the match.
                    table.catch_up(input, s + 2);
                    s += len;
                    table.cursor = s;
                }
                None => {
                    out.push(input[s]);
                    s += 1;
                    table.catch_up(input, s);
                }
            }
            if out.len() > limit {
                return None;
            }
        }
        out[flag_at] = flag;
    }
    if out.len() > limit { None } else { Some(out) }
}

/// Decompresses a stream produced by [`compress`] (or by kdb+) into exactly
/// `expected_len` bytes. Every malformed stream is an error, never a panic.
pub fn decompress(input: &[u8], expected_len: usize) -> Result<Vec<u8>, CodecError> {
    let corrupt = |what: String| CodecError::Corrupt { algorithm: "qipc", detail: what };
    let mut out = vec![0u8; expected_len];
    let mut table = PositionTable::new();
    let mut s = 0usize;
    let mut d = 0usize;
    let mut flag = 0u8;
    let mut bit = 0u32;
    while s < expected_len {
        if bit == 0 {
            flag = *input
                .get(d)
                .ok_or_else(|| corrupt(format!("stream ends at byte {d}, {s} of {expected_len} bytes decoded")))?;
            d += 1;
        }
        if flag & (1 << bit) != 0 {
            let (h, extra) = match input.get(d..d + 2) {
                Some(pair) => (pair[0] as usize, pair[1] as usize),
                None => return Err(corrupt(format!("match at byte {d} is cut short"))),
            };
            d += 2;
            let r = table.positions[h] as usize;
            let len = 2 + extra;
            if r >= s || s + len > expected_len {
                return Err(corrupt(format!(
                    "match at byte {} copies {len} bytes from position {r} into position {s} of {expected_len}",
                    d - 2
                )));
            }
            out[s] = out[r];
            out[s + 1] = out[r + 1];
            table.catch_up(&out, s + 2);
            for m in 2..len {
                out[s + m] = out[r + m];
            }
            s += len;
            table.cursor = s;
        } else {
            out[s] = *input.get(d).ok_or_else(|| corrupt(format!("literal at byte {d} is missing")))?;
            d += 1;
            s += 1;
            table.catch_up(&out, s);
        }
        bit = (bit + 1) % 8;
    }
    if d != input.len() {
        return Err(corrupt(format!("{} trailing bytes after {expected_len} decoded bytes", input.len() - d)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(data: &[u8]) {
        let limit = data.len() + data.len() / 8 + 2;
        let packed = compress(data, limit).expect("the limit allows the worst case");
        assert_eq!(decompress(&packed, data.len()).unwrap(), data);
    }

    #[test]
    fn edge_cases_round_trip() {
        round_trip(&[]);
        round_trip(&[7]);
        round_trip(&[7, 7]);
        round_trip(&[7, 7, 7]);
        round_trip(&[0; 1000]);
        round_trip(&(0..=255).collect::<Vec<u8>>());
        round_trip(&b"ab".repeat(600));
    }

    #[test]
    fn long_runs_use_maximal_matches() {
        let data = vec![42u8; 10_000];
        let packed = compress(&data, data.len()).unwrap();
        // Each match covers 257 bytes in 2 bytes plus a flag bit.
        assert!(packed.len() < 10_000 / 257 * 3 + 20, "{} bytes", packed.len());
    }

    #[test]
    fn gives_up_past_the_limit() {
        let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        assert!(compress(&noise, noise.len() / 2).is_none());
    }

    #[test]
    fn truncated_and_corrupt_streams_are_errors() {
        let data = b"the quick brown fox jumps over the lazy dog ".repeat(20);
        let packed = compress(&data, data.len()).unwrap();
        for cut in [0, 1, packed.len() / 2, packed.len() - 1] {
            let err = decompress(&packed[..cut], data.len()).unwrap_err();
            assert!(err.to_string().contains("qipc"), "{err}");
        }
        let mut extra = packed.clone();
        extra.push(0);
        assert!(decompress(&extra, data.len()).is_err());
        // A match as the very first item refers to nothing.
        assert!(decompress(&[1, 0, 5], 7).is_err());
    }

    proptest! {
        #[test]
        fn any_bytes_round_trip(data in proptest::collection::vec(0u8..8, 0..3000)) {
            round_trip(&data);
        }

        #[test]
        fn decoder_never_panics(stream in proptest::collection::vec(any::<u8>(), 0..200), len in 0usize..600) {
            let _ = decompress(&stream, len);
        }
    }
}
